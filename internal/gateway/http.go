package gateway

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
)

// HTTPOptions configure the HTTP endpoint.
type HTTPOptions struct {
	// AllowedOrigins may send browser requests; loopback origins always
	// may. A request with any other Origin header gets 403 (DNS rebinding
	// and cross-site protection, which mcp-go does not do).
	AllowedOrigins []string
	// SessionIdleTTL ends streamable HTTP sessions idle this long
	// (server.session_idle_ttl, default 30 minutes).
	SessionIdleTTL time.Duration
	// MaxSessions bounds the open sessions (server.max_sessions, default
	// 1000); an initialize beyond it gets 503.
	MaxSessions int
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64
	// Metrics serves /metrics; nil leaves it out.
	Metrics http.Handler
	// Auth authenticates and rate-limits /mcp. nil trusts every caller as
	// local, as a loopback gateway without tokens does: app.ServeHTTP
	// always sets it from the config and the listen address.
	Auth *auth.HTTP
}

// Management is the management protocol's HTTP side (seed 003).
type Management interface {
	// WrapMCP serves the mcp/* methods on /mcp and passes the rest on.
	WrapMCP(next http.Handler) http.Handler
	// Events serves /events, the notifications as Server-Sent Events.
	Events() http.Handler
}

// Endpoint is the HTTP side of the gateway.
type Endpoint struct {
	Handler  http.Handler
	mcp      *server.StreamableHTTPServer
	sessions *sessionTable
}

// HTTP builds the endpoint: /mcp (streamable HTTP MCP), /healthz and
// /metrics.
func (g *Gateway) HTTP(s *server.MCPServer, o HTTPOptions) *Endpoint {
	if o.SessionIdleTTL <= 0 {
		o.SessionIdleTTL = 30 * time.Minute
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 16 << 20
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 1000
	}
	// The session table, not mcp-go, owns session ids and their expiry
	// (sessions.go); mcp-go's own idle sweeper stays off.
	sessions := newSessionTable(o.MaxSessions, o.SessionIdleTTL, g.Log.With("component", "sessions"))
	streamable := server.NewStreamableHTTPServer(s,
		server.WithEndpointPath("/mcp"),
		server.WithSessionIdManagerResolver(sessions),
		server.WithHeartbeatInterval(30*time.Second),
	)
	if o.Auth == nil {
		o.Auth = &auth.HTTP{Auth: auth.NewAuthenticator(context.Background(), config.Auth{}, auth.Options{}), Loopback: true, Log: g.Log}
	}
	sessions.release = releaseVia(streamable)
	mux := http.NewServeMux()
	var mcpHandler http.Handler = sessions.middleware(streamable)
	if g.Management != nil {
		mcpHandler = g.Management.WrapMCP(mcpHandler)
		mux.Handle("/events", o.Auth.Middleware(g.Management.Events()))
	}
	// Order: authentication before the body is read; the envelope check
	// (413, -32600) reads it once; the scope guard refuses before any
	// session is looked up or created; then sessions, then mcp-go.
	mux.Handle("/mcp", o.Auth.Middleware(checkEnvelope(o.MaxBodyBytes, guard(o.Auth, mcpHandler))))
	mux.Handle(auth.MetadataPath, o.Auth.MetadataHandler())
	mux.Handle(auth.MetadataPath+"/mcp", o.Auth.MetadataHandler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	if o.Metrics != nil {
		mux.Handle("/metrics", o.Metrics)
	}
	return &Endpoint{Handler: checkOrigin(o.AllowedOrigins, mux), mcp: streamable, sessions: sessions}
}

// Sessions returns the streamable HTTP server, for shutdown.
func (e *Endpoint) Sessions() *server.StreamableHTTPServer { return e.mcp }

// OpenSessions is the number of open streamable HTTP sessions.
func (e *Endpoint) OpenSessions() int { return e.sessions.count() }

// Close stops the session sweeper. Call it after Sessions().Shutdown.
func (e *Endpoint) Close() { e.sessions.close() }

func checkOrigin(allowed []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && !originAllowed(origin, allowed) {
			http.Error(w, "Forbidden: origin "+origin+" is not allowed", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func originAllowed(origin string, allowed []string) bool {
	if slices.Contains(allowed, "*") || slices.Contains(allowed, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
