package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/manage"
)

// notifierManagement serves /events from a real notifier, without the
// mcp/* methods.
type notifierManagement struct{ n *manage.Notifier }

func (m notifierManagement) WrapMCP(next http.Handler) http.Handler { return next }
func (notifierManagement) Handles(string) bool                      { return false }
func (m notifierManagement) Events() http.Handler                   { return m.n.Events(0) }

const streamerTok = "hgr_scope-streamer-0123456"

// streamKinds open each kind of stream for tok and return its response
// (status 200, headers read, body streaming).
var streamKinds = []struct {
	name string
	open func(t *testing.T, s *scopeGateway, ctx context.Context, tok string) *http.Response
}{
	{"legacy GET /mcp", func(t *testing.T, s *scopeGateway, ctx context.Context, tok string) *http.Response {
		h := s.session(t, tok)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		return do(t, req)
	}},
	{"/events", func(t *testing.T, s *scopeGateway, ctx context.Context, tok string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		return do(t, req)
	}},
	{"subscriptions/listen", func(t *testing.T, s *scopeGateway, ctx context.Context, tok string) *http.Response {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": mcp.MethodSubscriptionsListen,
			"params": map[string]any{"notifications": map[string]any{"toolsListChanged": true},
				"_meta": map[string]any{mcp.MetaKeyProtocolVersion: mcp.LATEST_PROTOCOL_VERSION, mcp.MetaKeyClientCapabilities: map[string]any{},
					"io.modelcontextprotocol/clientInfo": map[string]any{"name": "t", "version": "1"}}}})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/mcp", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(mcp.HeaderProtocolVersion, mcp.LATEST_PROTOCOL_VERSION)
		req.Header.Set(mcp.HeaderMethod, string(mcp.MethodSubscriptionsListen))
		req.Header.Set("Authorization", "Bearer "+tok)
		return do(t, req)
	}},
}

func do(t *testing.T, req *http.Request) *http.Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, b)
	}
	return resp
}

// ended is closed when the stream's body ends.
func ended(resp *http.Response) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	return done
}

// TestScopeStreamsEnd: every kind of stream ends within a second of its
// token being removed by a reload, or of its expiry; a stream of another
// token stays open.
func TestScopeStreamsEnd(t *testing.T) {
	t.Parallel()
	for _, kind := range streamKinds {
		for _, trigger := range []string{"removed by a reload", "expired"} {
			t.Run(kind.name+"/"+trigger, func(t *testing.T) {
				t.Parallel()
				var expires time.Time
				s := newScopeGateway(t, func(c *config.Config, g *gateway.Gateway) {
					streamer := tok("streamer", streamerTok, auth.AllScopes, "a")
					if trigger == "expired" {
						// Long enough for the harness to start its servers
						// on a loaded machine; the wait is for the stream.
						expires = time.Now().Add(4 * time.Second)
						streamer.ExpiresAt = expires
					}
					c.Auth.Tokens = append(c.Auth.Tokens, streamer)
					g.Management = notifierManagement{manage.NewNotifier(quiet)}
				})
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				mine := ended(kind.open(t, s, ctx, streamerTok))
				other := ended(kind.open(t, s, ctx, scopeAdminTok))
				if trigger == "expired" && time.Until(expires) < 500*time.Millisecond {
					t.Fatalf("the stream opened %s before its token expired: too late to tell", time.Until(expires))
				}
				from := expires
				if trigger == "removed by a reload" {
					from = time.Now()
					s.ah.Reload(auth.Settings{Auth: auth.NewAuthenticator(t.Context(), config.Auth{Tokens: scopeTokens()}, auth.Options{}), RateLimit: s.cfg.Auth.RateLimit})
				}
				select {
				case <-mine:
					late := time.Since(from)
					if late > time.Second {
						t.Errorf("the stream ended %s after its token went, want within 1s", late)
					}
					t.Logf("the stream ended %s after its token went", late)
				case <-time.After(time.Until(from) + 5*time.Second):
					t.Fatal("the stream is still open 5s after its token went")
				}
				select {
				case <-other:
					t.Error("the admin's stream ended too")
				default:
				}
				// And it cannot be opened again.
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/events", nil)
				req.Header.Set("Authorization", "Bearer "+streamerTok)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("reopened with the gone token: %d", resp.StatusCode)
				}
			})
		}
	}
}

// TestScopeSessionEndsOnChangedGrant: a reload that narrows a token's
// servers ends its 2025-11-25 sessions (404 on the next request, as for
// any ended session), so nothing decided under the old grant, such as
// whom the session's notifications are for, outlives it; a new session
// works under the new grant, and a reload that changes nothing of the
// token keeps its session.
func TestScopeSessionEndsOnChangedGrant(t *testing.T) {
	t.Parallel()
	s := newScopeGateway(t, func(c *config.Config, _ *gateway.Gateway) {
		c.Auth.Tokens = append(c.Auth.Tokens, tok("streamer", streamerTok, auth.AllScopes, "a", "q"))
	})
	old := s.session(t, streamerTok)
	reload := func(servers ...string) {
		s.ah.Reload(auth.Settings{Auth: auth.NewAuthenticator(t.Context(), config.Auth{Tokens: scopeTokens(tok("streamer", streamerTok, auth.AllScopes, servers...))}, auth.Options{}), RateLimit: s.cfg.Auth.RateLimit})
	}
	reload("a", "q") // the same grant
	if r := s.post(t, old, listTools); r.status != http.StatusOK {
		t.Fatalf("after a reload that changed nothing: %d %s", r.status, r.body)
	}
	reload("q")
	if r := s.post(t, old, listTools); r.status != http.StatusNotFound {
		t.Errorf("the session of a narrowed token: %d %s, want 404", r.status, r.body)
	}
	fresh := s.session(t, streamerTok)
	var res struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	s.post(t, fresh, listTools).result(t, &res)
	for _, tl := range res.Tools {
		if strings.HasPrefix(tl.Name, "a__") {
			t.Errorf("the new session lists %s of a server the token no longer reaches", tl.Name)
		}
	}
}
