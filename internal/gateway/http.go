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

// limitBody reads a POST body of at most n bytes into memory once, for the
// guard and mcp-go to share, and refuses a larger one with 413: by its
// Content-Length before reading anything, else after reading n+1 bytes.
// Nothing past n+1 bytes is ever read, so a huge body costs no memory.
func limitBody(n int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > n {
			tooLarge(w, n)
			return
		}
		body, err := readUpTo(r.Body, r.ContentLength, n)
		if errors.Is(err, errBodyTooLarge) {
			tooLarge(w, n)
			return
		}
		if err != nil {
			http.Error(w, "Bad Request: reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = &memBody{b: body}
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

var errBodyTooLarge = errors.New("request body too large")

// readUpTo reads all of body if it is at most n bytes; size is the
// announced Content-Length (-1: unknown).
func readUpTo(body io.Reader, size, n int64) ([]byte, error) {
	capHint := int64(512)
	if size >= 0 {
		capHint = size + 1 // +1: the read that sees EOF needs room
	}
	buf := bytes.NewBuffer(make([]byte, 0, min(capHint, n+1)))
	got, err := buf.ReadFrom(io.LimitReader(body, n+1))
	if err != nil {
		return nil, err
	}
	if got > n {
		return nil, errBodyTooLarge
	}
	return buf.Bytes(), nil
}

func tooLarge(w http.ResponseWriter, n int64) {
	// The connection is closed after this answer, so the rest of the body
	// is never read.
	w.Header().Set("Connection", "close")
	auth.WriteError(w, http.StatusRequestEntityTooLarge, nil, &auth.Error{Code: mcp.INVALID_REQUEST,
		Message: "request body is over the limit of " + strconv.FormatInt(n, 10) + " bytes (execution.max_request_body_bytes)"})
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

// bytesOf returns the body's bytes when limitBody has read it.
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
