package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/provider"
)

const (
	initBody  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	listBody  = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	legacyVer = "2025-06-18"
	// identityHeader stands in for the auth middleware in these tests: it
	// names the token the request authenticated as.
	identityHeader = "X-Test-Identity"
)

// testEndpoint is the real HTTP handler with the real auth middleware; the
// test header names the token a request sends.
type testEndpoint struct {
	ep *endpoint.Endpoint
	h  http.Handler
}

func newEndpoint(t *testing.T, o endpoint.Options) *testEndpoint {
	t.Helper()
	cfg := config.Default()
	for _, name := range []string{"alice", "bob", "carol", "dave", "mallory"} {
		cfg.Auth.Tokens = append(cfg.Auth.Tokens, tok(name, "tok-"+name, auth.AllScopes))
	}
	g := gateway.New(cfg, provider.NewManager(nil, provider.Options{Log: quiet}), nil, nil, quiet)
	if o.Auth == nil {
		// The real middleware, with a token per test identity; a request
		// without one is anonymous (hangar:read only).
		o.Auth = &auth.HTTP{Auth: auth.NewAuthenticator(t.Context(), cfg.Auth, auth.Options{}), AllowAnonymous: true, Log: quiet}
	}
	ep := g.HTTP(g.MCPServer(), o)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ep.Sessions().Shutdown(ctx)
		ep.Close()
	})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name := r.Header.Get(identityHeader); name != "" {
			r.Header.Set("Authorization", "Bearer tok-"+name)
		}
		ep.Handler.ServeHTTP(w, r)
	})
	return &testEndpoint{ep: ep, h: h}
}

type reqOpt func(*http.Request)

func as(name string) reqOpt { return func(r *http.Request) { r.Header.Set(identityHeader, name) } }
func withSession(id string) reqOpt {
	return func(r *http.Request) { r.Header.Set("Mcp-Session-Id", id) }
}

func (e *testEndpoint) do(method, body string, opts ...reqOpt) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, "/mcp", rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", legacyVer)
	for _, o := range opts {
		o(req)
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec
}

// open initializes a session and returns its id.
func (e *testEndpoint) open(t *testing.T, opts ...reqOpt) string {
	t.Helper()
	rec := e.do(http.MethodPost, initBody, opts...)
	id := rec.Header().Get("Mcp-Session-Id")
	if rec.Code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %q, session id %q", rec.Code, rec.Body.String(), id)
	}
	return id
}

func rpcErrorCode(t *testing.T, body string) int {
	t.Helper()
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil || m.Error == nil {
		t.Fatalf("not a JSON-RPC error: %q", body)
	}
	return m.Error.Code
}

// TestHTTPRejections runs every rejection of the session and envelope
// checks through the real handler.
func TestHTTPRejections(t *testing.T) {
	t.Parallel()
	made := "AAAAAAAAAAAAAAAAAAAAAAAAAA" // well-formed, never issued
	tests := []struct {
		name string
		// run sends the request under test, given a fresh endpoint and a
		// session "alice" opened on it.
		run      func(e *testEndpoint, alice string) *httptest.ResponseRecorder
		status   int
		rpcCode  int    // expected JSON-RPC error code, 0 for none
		contains string // in the body
	}{
		{"own session works", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			return e.do(http.MethodPost, listBody, as("alice"), withSession(s))
		}, http.StatusOK, 0, `"tools"`},
		{"made-up id POST", func(e *testEndpoint, _ string) *httptest.ResponseRecorder {
			return e.do(http.MethodPost, listBody, as("alice"), withSession(made))
		}, http.StatusNotFound, 0, "no such session"},
		{"made-up mcp-go style id POST", func(e *testEndpoint, _ string) *httptest.ResponseRecorder {
			return e.do(http.MethodPost, listBody, as("alice"), withSession("mcp-session-1b4e28ba-2fa1-11d2-883f-0016d3cca427"))
		}, http.StatusNotFound, 0, "no such session"},
		{"made-up id GET", func(e *testEndpoint, _ string) *httptest.ResponseRecorder {
			return e.do(http.MethodGet, "", as("alice"), withSession(made))
		}, http.StatusNotFound, 0, "no such session"},
		{"made-up id DELETE", func(e *testEndpoint, _ string) *httptest.ResponseRecorder {
			return e.do(http.MethodDelete, "", as("alice"), withSession(made))
		}, http.StatusNotFound, 0, "no such session"},
		{"no id POST", func(e *testEndpoint, _ string) *httptest.ResponseRecorder {
			return e.do(http.MethodPost, listBody, as("alice"))
		}, http.StatusBadRequest, 0, "Mcp-Session-Id"},
		{"no id GET", func(e *testEndpoint, _ string) *httptest.ResponseRecorder {
			return e.do(http.MethodGet, "", as("alice"))
		}, http.StatusBadRequest, 0, "Mcp-Session-Id"},
		{"DELETE then POST", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			if rec := e.do(http.MethodDelete, "", as("alice"), withSession(s)); rec.Code != http.StatusOK {
				return rec
			}
			return e.do(http.MethodPost, listBody, as("alice"), withSession(s))
		}, http.StatusNotFound, 0, "no such session"},
		{"DELETE then GET", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			if rec := e.do(http.MethodDelete, "", as("alice"), withSession(s)); rec.Code != http.StatusOK {
				return rec
			}
			return e.do(http.MethodGet, "", as("alice"), withSession(s))
		}, http.StatusNotFound, 0, "no such session"},
		{"DELETE twice", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			if rec := e.do(http.MethodDelete, "", as("alice"), withSession(s)); rec.Code != http.StatusOK {
				return rec
			}
			return e.do(http.MethodDelete, "", as("alice"), withSession(s))
		}, http.StatusNotFound, 0, "no such session"},
		{"another identity POST", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			return e.do(http.MethodPost, listBody, as("mallory"), withSession(s))
		}, http.StatusNotFound, 0, "no such session"},
		{"another identity GET", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			return e.do(http.MethodGet, "", as("mallory"), withSession(s))
		}, http.StatusNotFound, 0, "no such session"},
		{"another identity DELETE leaves it alone", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			if rec := e.do(http.MethodDelete, "", as("mallory"), withSession(s)); rec.Code != http.StatusNotFound {
				return rec
			}
			return e.do(http.MethodPost, listBody, as("alice"), withSession(s))
		}, http.StatusOK, 0, `"tools"`},
		{"anonymous on a token's session", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			return e.do(http.MethodPost, listBody, withSession(s))
		}, http.StatusNotFound, 0, "no such session"},
		{"id null", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			return e.do(http.MethodPost, `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, as("alice"), withSession(s))
		}, http.StatusBadRequest, -32600, "id must be a string or a number"},
		{"id object", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			return e.do(http.MethodPost, `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, as("alice"), withSession(s))
		}, http.StatusBadRequest, -32600, "got object"},
		{"id array", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			return e.do(http.MethodPost, `{"jsonrpc":"2.0","id":[1],"method":"tools/list"}`, as("alice"), withSession(s))
		}, http.StatusBadRequest, -32600, "got array"},
		{"id boolean", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			return e.do(http.MethodPost, `{"jsonrpc":"2.0","id":true,"method":"tools/list"}`, as("alice"), withSession(s))
		}, http.StatusBadRequest, -32600, "got boolean"},
		{"id null on initialize", func(e *testEndpoint, _ string) *httptest.ResponseRecorder {
			return e.do(http.MethodPost, strings.Replace(initBody, `"id":1`, `"id":null`, 1), as("alice"))
		}, http.StatusBadRequest, -32600, "id must be"},
		{"member name in another case", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			return e.do(http.MethodPost, `{"jsonrpc":"2.0","id":4,"method":"tools/list","Method":"tools/call"}`, as("alice"), withSession(s))
		}, http.StatusBadRequest, -32600, `member \"Method\"`},
		{"member name folding to another", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			return e.do(http.MethodPost, `{"jsonrpc":"2.0","id":5,"method":"tools/list","j\u017fonrpc":"1.0"}`, as("alice"), withSession(s))
		}, http.StatusBadRequest, -32600, "lower case"},
		{"batch", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			return e.do(http.MethodPost, "["+listBody+"]", as("alice"), withSession(s))
		}, http.StatusBadRequest, -32600, "batch"},
		{"empty body", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			return e.do(http.MethodPost, "", as("alice"), withSession(s))
		}, http.StatusBadRequest, -32700, "empty body"},
		{"not JSON", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			return e.do(http.MethodPost, `{"jsonrpc":`, as("alice"), withSession(s))
		}, http.StatusBadRequest, -32700, "Parse error"},
		{"oversized with Content-Length", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			big := `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", 2048) + `"}}`
			return e.do(http.MethodPost, big, as("alice"), withSession(s))
		}, http.StatusRequestEntityTooLarge, 0, "over the limit of 1024 bytes"},
		{"oversized chunked", func(e *testEndpoint, s string) *httptest.ResponseRecorder {
			big := `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", 2048) + `"}}`
			return e.do(http.MethodPost, big, as("alice"), withSession(s), func(r *http.Request) {
				r.ContentLength = -1
				r.Body = io.NopCloser(strings.NewReader(big))
			})
		}, http.StatusRequestEntityTooLarge, 0, "over the limit of 1024 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEndpoint(t, endpoint.Options{MaxBodyBytes: 1024})
			s := e.open(t, as("alice"))
			rec := tt.run(e, s)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d; body %q", rec.Code, tt.status, rec.Body.String())
			}
			if tt.rpcCode != 0 {
				if got := rpcErrorCode(t, rec.Body.String()); got != tt.rpcCode {
					t.Errorf("JSON-RPC code %d, want %d", got, tt.rpcCode)
				}
			}
			if !strings.Contains(rec.Body.String(), tt.contains) {
				t.Errorf("body %q does not contain %q", rec.Body.String(), tt.contains)
			}
		})
	}
}

// countingReader is an endless body that counts what was read from it.
type countingReader struct{ n atomic.Int64 }

func (c *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	c.n.Add(int64(len(p)))
	return len(p), nil
}

// TestOversizedBodyIsNotRead checks that the limit stops reading: nothing
// of a body whose Content-Length is over it, and little more than the
// limit of an endless chunked one.
func TestOversizedBodyIsNotRead(t *testing.T) {
	t.Parallel()
	const limit = 4096
	e := newEndpoint(t, endpoint.Options{MaxBodyBytes: limit})
	for _, chunked := range []bool{false, true} {
		body := &countingReader{}
		req := httptest.NewRequest(http.MethodPost, "/mcp", body)
		req.Header.Set("Content-Type", "application/json")
		req.ContentLength = 1 << 40
		if chunked {
			req.ContentLength = -1
		}
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("chunked=%v: status %d, want 413", chunked, rec.Code)
		}
		read := body.n.Load()
		if !chunked && read != 0 {
			t.Errorf("read %d bytes of a body whose Content-Length is over the limit", read)
		}
		if chunked && read > 2*limit+64<<10 {
			t.Errorf("read %d bytes of an endless chunked body, limit %d", read, limit)
		}
	}
}

func TestMaxSessions(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, endpoint.Options{MaxSessions: 2})
	a := e.open(t, as("alice"))
	e.open(t, as("bob"))
	rec := e.do(http.MethodPost, initBody, as("carol"))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "server.max_sessions = 2") {
		t.Fatalf("third session: %d %q, want 503 naming server.max_sessions", rec.Code, rec.Body.String())
	}
	if rec.Header().Get("Mcp-Session-Id") != "" {
		t.Error("a refused initialize carried a session id")
	}
	// Ending one frees its slot.
	if rec := e.do(http.MethodDelete, "", as("alice"), withSession(a)); rec.Code != http.StatusOK {
		t.Fatalf("DELETE: %d %q", rec.Code, rec.Body.String())
	}
	// Refused initialize requests give their slot back.
	for range 5 {
		if rec := e.do(http.MethodPost, initBody, as("dave"), func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }); rec.Code != http.StatusBadRequest {
			t.Fatalf("bad content type: %d", rec.Code)
		}
	}
	e.open(t, as("carol"))
	if n := e.ep.OpenSessions(); n != 2 {
		t.Errorf("open sessions = %d, want 2", n)
	}
}

func TestSessionIDsAreRandomAndDistinct(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, endpoint.Options{})
	seen := map[string]bool{}
	for range 50 {
		id := e.open(t)
		if len(id) < 26 || seen[id] {
			t.Fatalf("session id %q: short or repeated", id)
		}
		seen[id] = true
	}
}

// TestDeleteEndsGetStream opens a GET stream over a real connection, ends
// the session with DELETE, and waits for the stream to close.
func TestDeleteEndsGetStream(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, endpoint.Options{})
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	s := e.open(t, as("alice"))

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", s)
	req.Header.Set(identityHeader, "alice")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %d", resp.StatusCode)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, bufio.NewReader(resp.Body))
		ended <- err
	}()

	if rec := e.do(http.MethodDelete, "", as("alice"), withSession(s)); rec.Code != http.StatusOK {
		t.Fatalf("DELETE: %d %q", rec.Code, rec.Body.String())
	}
	select {
	case err := <-ended:
		if err != nil && !errors.Is(err, io.EOF) {
			t.Logf("stream ended with %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the GET stream is still open after DELETE")
	}
	if rec := e.do(http.MethodGet, "", as("alice"), withSession(s)); rec.Code != http.StatusNotFound {
		t.Errorf("GET after DELETE: %d, want 404", rec.Code)
	}
}

// TestSessionIdleExpiry runs in a synctest bubble: the session expires
// after the TTL, its id is refused, and the table's sweeper goroutine
// exits once no session is left (synctest fails the test if any goroutine
// started in the bubble outlives it).
func TestSessionIdleExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = time.Minute
		g := gateway.New(config.Default(), provider.NewManager(nil, provider.Options{Log: quiet}), nil, nil, quiet)
		mcpServer := g.MCPServer()
		ep := g.HTTP(mcpServer, endpoint.Options{SessionIdleTTL: ttl})
		e := &testEndpoint{ep: ep, h: ep.Handler}
		// mcp-go's own record of a session: a notification to it finds it
		// or not.
		registered := func(id string) bool {
			return !errors.Is(mcpServer.SendNotificationToSpecificClient(id, "notifications/message", nil), mcpserver.ErrSessionNotFound)
		}

		s := e.open(t)
		busy := e.open(t)
		if !registered(busy) {
			t.Fatal("an initialized session is unknown to mcp-go")
		}
		time.Sleep(ttl / 2)
		if rec := e.do(http.MethodPost, listBody, withSession(s)); rec.Code != http.StatusOK {
			t.Fatalf("before the TTL: %d %q", rec.Code, rec.Body.String())
		}
		// Activity moves the deadline: s is used at ttl/2, busy is not.
		time.Sleep(ttl/2 + time.Second)
		synctest.Wait()
		if n := ep.OpenSessions(); n > 1 {
			t.Errorf("open sessions after one TTL = %d, want 1 (busy expired)", n)
		}
		if rec := e.do(http.MethodPost, listBody, withSession(busy)); rec.Code != http.StatusNotFound {
			t.Errorf("expired session: %d, want 404", rec.Code)
		}
		if registered(busy) {
			t.Error("mcp-go still holds the expired session")
		}
		if rec := e.do(http.MethodPost, listBody, withSession(s)); rec.Code != http.StatusOK {
			t.Errorf("session used within the TTL: %d, want 200", rec.Code)
		}
		time.Sleep(2 * ttl)
		synctest.Wait()
		if n := ep.OpenSessions(); n != 0 {
			t.Errorf("open sessions after expiry = %d, want 0", n)
		}
		if registered(s) {
			t.Error("mcp-go still holds the session the sweeper expired")
		}
		if rec := e.do(http.MethodGet, "", withSession(s)); rec.Code != http.StatusNotFound {
			t.Errorf("GET on an expired session: %d, want 404", rec.Code)
		}
		// No Close: the sweeper must have exited on its own.
	})
}

// TestMaxSessionsPerIdentity: an identity at its limit that opens another
// session loses its least recently active idle one (others are untouched);
// with every one of its sessions in use the new one is refused with 429.
func TestMaxSessionsPerIdentity(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, endpoint.Options{MaxSessions: 10, MaxSessionsPerIdentity: 2})
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	a1 := e.open(t, as("alice"))
	a2 := e.open(t, as("alice"))
	b1 := e.open(t, as("bob"))
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	// a1 is used after a2 was opened: a2 is now the least recently active.
	if rec := e.do(http.MethodPost, ping, as("alice"), withSession(a1)); rec.Code != http.StatusOK {
		t.Fatalf("ping a1: %d %q", rec.Code, rec.Body.String())
	}
	a3 := e.open(t, as("alice"))
	for _, c := range []struct {
		who, id string
		want    int
	}{{"alice", a1, http.StatusOK}, {"alice", a2, http.StatusNotFound}, {"alice", a3, http.StatusOK}, {"bob", b1, http.StatusOK}} {
		if rec := e.do(http.MethodPost, ping, as(c.who), withSession(c.id)); rec.Code != c.want {
			t.Errorf("%s's session after alice's third: %d, want %d", c.who, rec.Code, c.want)
		}
	}
	if n := e.ep.OpenSessions(); n != 3 {
		t.Errorf("open sessions = %d, want 3", n)
	}

	// Both of alice's sessions busy (a GET stream each): refused, and
	// neither is ended.
	for _, id := range []string{a1, a3} {
		ctx, cancel := context.WithCancel(t.Context())
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set(identityHeader, "alice")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET stream: %d", resp.StatusCode)
		}
	}
	rec := e.do(http.MethodPost, initBody, as("alice"))
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "server.max_sessions_per_identity = 2") ||
		rec.Header().Get("Retry-After") == "" {
		t.Fatalf("third busy session: %d %q, want 429 naming server.max_sessions_per_identity", rec.Code, rec.Body.String())
	}
	if n := e.ep.OpenSessions(); n != 3 {
		t.Errorf("open sessions after the refusal = %d, want 3", n)
	}
	// bob is not held back by alice.
	e.open(t, as("bob"))
}
