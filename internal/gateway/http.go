package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
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
	// MaxSessionsPerIdentity bounds one caller's open sessions
	// (server.max_sessions_per_identity; 0 is MaxSessions): beyond it the
	// caller's least recently active idle session ends.
	MaxSessionsPerIdentity int
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64
	// Metrics serves /metrics; nil leaves it out.
	Metrics http.Handler
	// Auth authenticates and rate-limits /mcp. nil trusts every caller as
	// local, as a loopback gateway without tokens does: app.ServeHTTP
	// always sets it from the config and the listen address.
	Auth *auth.HTTP
	// Forward, when set, comes right after authentication on /mcp: it
	// passes requests for another replica's ids there
	// (forward.Router.Middleware), counted against the caller's rate
	// limit here; the owner authenticates them again.
	Forward func(http.Handler) http.Handler
}

// Management is the management protocol's HTTP side (seed 003).
type Management interface {
	// WrapMCP serves the mcp/* methods on /mcp and passes the rest on.
	WrapMCP(next http.Handler) http.Handler
	// Handles reports whether method is one of them.
	Handles(method string) bool
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
	sessions := newSessionTable(o.MaxSessions, o.MaxSessionsPerIdentity, o.SessionIdleTTL, g.Log.With("component", "sessions"))
	sessions.replica = g.replica
	streamable := server.NewStreamableHTTPServer(s,
		server.WithEndpointPath("/mcp"),
		server.WithSessionIdManagerResolver(sessions),
		server.WithHeartbeatInterval(30*time.Second),
	)
	if o.Auth == nil {
		o.Auth = &auth.HTTP{Auth: auth.NewAuthenticator(context.Background(), config.Auth{}, auth.Options{}), Loopback: true, Log: g.Log}
	}
	if o.Auth.Audit == nil {
		o.Auth.Audit = g.auditRequest // every refusal is audited (authz.go)
	}
	sessions.release = releaseVia(streamable)
	sessions.refused = g.auditRequest
	mux := http.NewServeMux()
	var mcpHandler http.Handler = sessions.middleware(g.hideUnserved(g.directCalls(s, streamable, countProgress(g.toolsListHandler(s, streamable)))))
	if m := g.Management; m != nil {
		// Only a management method goes through its wrapper: the envelope
		// is parsed once already, so every other message goes straight on.
		plain, wrapped := mcpHandler, m.WrapMCP(mcpHandler)
		mcpHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if env, ok := RequestEnvelope(r.Context()); ok && !m.Handles(env.Method) {
				plain.ServeHTTP(w, r)
				return
			}
			wrapped.ServeHTTP(w, r)
		})
		mux.Handle("/events", o.Auth.Middleware(needScope(o.Auth, auth.ScopeRead, holdStreams(o.Auth, g.Management.Events()))))
	}
	// 2026-07-28 notifications, and the requests they may cancel.
	mcpHandler = rootsParams((&inflightRequests{}).middleware(mcpHandler))
	// Order: authentication before the body is read; with replicas,
	// Forward passes another replica's ids there (it looks for one in the
	// body's first MiB); the envelope check (413, -32600) reads it once;
	// the scope guard refuses before any session is looked up or created;
	// then sessions, then mcp-go.
	var local http.Handler = checkEnvelope(o.MaxBodyBytes, g.traceRequests(guard(o.Auth, g.toolServer, g.auditGuard, holdStreams(o.Auth, mcpHandler))))
	if o.Forward != nil {
		local = o.Forward(local)
	}
	mux.Handle("/mcp", o.Auth.Middleware(local))
	mux.Handle(auth.MetadataPath, o.Auth.MetadataHandler())
	mux.Handle(auth.MetadataPath+"/mcp", o.Auth.MetadataHandler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	if o.Metrics != nil {
		// Metrics name every server: the same credentials and hangar:read
		// as hangar_metrics (a loopback gateway without tokens is open).
		mux.Handle("/metrics", o.Auth.Middleware(needScope(o.Auth, auth.ScopeRead, g.scopedMetrics(o.Metrics))))
	}
	return &Endpoint{Handler: checkOrigin(o.AllowedOrigins, mux), mcp: streamable, sessions: sessions}
}

// Sessions returns the streamable HTTP server, for shutdown.
func (e *Endpoint) Sessions() *server.StreamableHTTPServer { return e.mcp }

// OpenSessions is the number of open streamable HTTP sessions.
func (e *Endpoint) OpenSessions() int { return e.sessions.count() }

// Close stops the session sweeper. Call it after Sessions().Shutdown.
func (e *Endpoint) Close() { e.sessions.close() }

var (
	errBodyTooLarge   = errors.New("request body too large")
	errBodyOverLength = errors.New("request body longer than its Content-Length")
)

// readUpTo reads all of body if it is at most n bytes; size is the
// announced Content-Length (-1: unknown).
func readUpTo(body io.Reader, size, n int64) ([]byte, error) {
	if size > 0 && size <= n {
		// The announced length: one buffer of exactly that size (a
		// bytes.Buffer would first grow a small one by 512 bytes, a
		// second allocation per request), then a read that must see the
		// end, as net/http's body reader holds the body to its length.
		buf := make([]byte, size)
		if _, err := io.ReadFull(body, buf); err != nil {
			return nil, err
		}
		var one [1]byte
		switch k, err := body.Read(one[:]); {
		case k > 0:
			return nil, errBodyOverLength
		case err != nil && err != io.EOF:
			return nil, err
		}
		return buf, nil
	}
	buf := bytes.NewBuffer(make([]byte, 0, 512))
	got, err := buf.ReadFrom(io.LimitReader(body, n+1))
	if err != nil {
		return nil, err
	}
	if got > n {
		return nil, errBodyTooLarge
	}
	return buf.Bytes(), nil
}

// What is read and thrown away of a body after its 413, so that the
// client, still sending, reads the answer instead of a connection reset:
// closing a socket with unread data resets it. Bounded in time and size; a
// client that sends more only gets the reset.
const (
	drainTime  = time.Second
	drainBytes = 64 << 20
)

func tooLarge(w http.ResponseWriter, r *http.Request, n int64) {
	// The connection is closed after this answer: whatever was not
	// drained is never read.
	w.Header().Set("Connection", "close")
	// Full duplex: net/http would otherwise read at most 256 KiB of the
	// body before the answer and then stop the body for good.
	rc := http.NewResponseController(w)
	duplex := rc.EnableFullDuplex() == nil
	auth.WriteError(w, http.StatusRequestEntityTooLarge, nil, &auth.Error{Code: mcp.INVALID_REQUEST,
		Message: "request body is over the limit of " + strconv.FormatInt(n, 10) + " bytes (execution.max_request_body_bytes)"})
	if !duplex || r.Body == nil {
		return
	}
	_ = rc.Flush()
	_ = rc.SetReadDeadline(time.Now().Add(drainTime))
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, drainBytes))
}

// memBody is a request body already read into memory: the guard looks at
// its bytes without copying them, and mcp-go reads it as usual.
type memBody struct {
	b   []byte
	off int
}

func (b *memBody) Read(p []byte) (int, error) {
	if b.off >= len(b.b) {
		return 0, io.EOF
	}
	n := copy(p, b.b[b.off:])
	b.off += n
	return n, nil
}

// WriteTo lets io.ReadAll-style consumers that use io.Copy skip a buffer.
func (b *memBody) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(b.b[b.off:])
	b.off += n
	return int64(n), err
}

func (b *memBody) Close() error { return nil }

// needScope lets a request through when its identity holds scope.
func needScope(h *auth.HTTP, scope string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e := callerOf(r.Context()).Check(scope, ""); e != nil {
			if h.Audit != nil {
				h.Audit(r, auth.Refusal{Status: http.StatusForbidden, Identity: callerOf(r.Context()), Reason: forbiddenReason(e)})
			}
			h.Forbid(w, r, nil, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bytesOf returns the body's bytes when checkEnvelope has read it.
func bytesOf(r *http.Request) ([]byte, bool) {
	if b, ok := r.Body.(*memBody); ok {
		return b.b[b.off:], true
	}
	return nil, false
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
