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
	// SessionIdleTTL ends streamable HTTP sessions idle this long; without
	// it mcp-go keeps them forever.
	SessionIdleTTL time.Duration
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64
	// Metrics serves /metrics; nil leaves it out.
	Metrics http.Handler
	// Auth authenticates and rate-limits /mcp. nil trusts every caller as
	// local, as a loopback gateway without tokens does: app.ServeHTTP
	// always sets it from the config and the listen address.
	Auth *auth.HTTP
}

// Endpoint is the HTTP side of the gateway.
type Endpoint struct {
	Handler http.Handler
	mcp     *server.StreamableHTTPServer
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
	streamable := server.NewStreamableHTTPServer(s,
		server.WithEndpointPath("/mcp"),
		server.WithSessionIdleTTL(o.SessionIdleTTL),
		server.WithHeartbeatInterval(30*time.Second),
	)
	if o.Auth == nil {
		o.Auth = &auth.HTTP{Auth: auth.NewAuthenticator(context.Background(), config.Auth{}, auth.Options{}), Loopback: true, Log: g.Log}
	}
	mux := http.NewServeMux()
	// Authentication runs before the body is read and before mcp-go sees
	// the request: a refused request creates no session.
	mux.Handle("/mcp", o.Auth.Middleware(limitBody(o.MaxBodyBytes, guard(o.Auth, streamable))))
	mux.Handle(auth.MetadataPath, o.Auth.MetadataHandler())
	mux.Handle(auth.MetadataPath+"/mcp", o.Auth.MetadataHandler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	if o.Metrics != nil {
		mux.Handle("/metrics", o.Metrics)
	}
	return &Endpoint{Handler: checkOrigin(o.AllowedOrigins, mux), mcp: streamable}
}

// Sessions returns the streamable HTTP server, for shutdown.
func (e *Endpoint) Sessions() *server.StreamableHTTPServer { return e.mcp }

func limitBody(n int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, n)
		}
		next.ServeHTTP(w, r)
	})
}

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
