package gateway

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"
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
	mux := http.NewServeMux()
	var mcpHandler http.Handler = streamable
	if g.Management != nil {
		mcpHandler = g.Management.WrapMCP(streamable)
		mux.Handle("/events", g.Management.Events())
	}
	mux.Handle("/mcp", limitBody(o.MaxBodyBytes, mcpHandler))
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
