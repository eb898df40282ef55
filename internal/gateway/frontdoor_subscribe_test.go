package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/endpoint"
)

// rpcError sends one raw JSON-RPC request to s as ctx's caller and returns
// its error (failing when it succeeds).
func rpcError(t *testing.T, ctx context.Context, s *mcpserver.MCPServer, method, params string) (int, string) {
	t.Helper()
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
	b, err := json.Marshal(s.HandleMessage(ctx, []byte(msg)))
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Error == nil {
		t.Fatalf("%s %s succeeded: %s", method, params, b)
	}
	return resp.Error.Code, resp.Error.Message
}

// TestFrontDoorCompletion: completion/complete goes to the server owning
// the prompt (under its raw name) or the resource; unknown refs and refs
// the caller may not use are refused without naming other servers.
func TestFrontDoorCompletion(t *testing.T) {
	t.Parallel()
	h := newFrontDoor(t, nil, nil, nil, server("a"), server("b"))
	ctx := t.Context()
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "a"})
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "b"})
	h.refresh(t)

	caps := h.c.GetServerCapabilities()
	if caps.Completions == nil {
		t.Error("completions capability not advertised")
	}
	if caps.Resources == nil || !caps.Resources.Subscribe {
		t.Errorf("resources.subscribe not advertised: %+v", caps.Resources)
	}

	complete := func(ctx context.Context, ref string, arg string) mcp.Completion {
		t.Helper()
		var res mcp.CompleteResult
		raw := rpc(t, ctx, h.srv, "completion/complete", fmt.Sprintf(`{"ref":%s,"argument":%s}`, ref, arg))
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		return res.Completion
	}
	tests := []struct{ ref, arg, want string }{
		{`{"type":"ref/prompt","name":"b__greet"}`, `{"name":"who","value":"yo"}`, "b:greet:who=yo"},
		{`{"type":"ref/prompt","name":"a__greet"}`, `{"name":"who","value":""}`, "a:greet:who="},
		{`{"type":"ref/resource","uri":"item-a://{n}"}`, `{"name":"n","value":"4"}`, "a:item-a://{n}:n=4"},
		{`{"type":"ref/resource","uri":"item-b://7"}`, `{"name":"n","value":"7"}`, "b:item-b://7:n=7"},
		{`{"type":"ref/resource","uri":"file:///shared"}`, `{"name":"x","value":""}`, "a:file:///shared:x="},
	}
	for _, tt := range tests {
		got := complete(ctx, tt.ref, tt.arg)
		if !slices.Equal(got.Values, []string{tt.want}) {
			t.Errorf("complete %s %s = %v, want [%s]", tt.ref, tt.arg, got.Values, tt.want)
		}
		if strings.Contains(tt.ref, "ref/resource") && !got.HasMore {
			t.Errorf("complete %s: hasMore lost on the way", tt.ref)
		}
	}

	limited := auth.WithIdentity(ctx, auth.NewIdentity("t", auth.KindToken, []string{auth.ScopeCall}, []string{"a"}))
	readOnly := auth.WithIdentity(ctx, auth.NewIdentity("r", auth.KindToken, []string{auth.ScopeRead}, nil))
	if got := complete(limited, `{"type":"ref/prompt","name":"a__greet"}`, `{"name":"who","value":"z"}`); !slices.Equal(got.Values, []string{"a:greet:who=z"}) {
		t.Errorf("limited caller on its own server: %v", got.Values)
	}
	refusals := []struct {
		name      string
		ctx       context.Context
		ref, want string
	}{
		{"unknown prompt", ctx, `{"type":"ref/prompt","name":"nope"}`, "prompt 'nope' not found"},
		{"raw prompt name", ctx, `{"type":"ref/prompt","name":"greet"}`, "prompt 'greet' not found"},
		{"unknown uri", ctx, `{"type":"ref/resource","uri":"file:///nope"}`, "resource 'file:///nope' not found"},
		{"prompt outside the servers", limited, `{"type":"ref/prompt","name":"b__greet"}`, "prompt 'b__greet' not found"},
		// The answer for a URI nobody serves: nothing says b serves it.
		{"resource outside the servers", limited, `{"type":"ref/resource","uri":"item-b://{n}"}`, "resource 'item-b://{n}' not found: no resource or resource template with that URI is served"},
		{"resource without hangar:call", readOnly, `{"type":"ref/resource","uri":"item-a://{n}"}`, "Token missing required scope: hangar:call"},
		{"prompt without hangar:call", readOnly, `{"type":"ref/prompt","name":"a__greet"}`, "prompt 'a__greet' not found"},
	}
	for _, r := range refusals {
		_, msg := rpcError(t, r.ctx, h.srv, "completion/complete", fmt.Sprintf(`{"ref":%s,"argument":{"name":"who","value":""}}`, r.ref))
		if !strings.Contains(msg, r.want) {
			t.Errorf("%s: error %q, want %q", r.name, msg, r.want)
		}
	}
}

// noteClient is an in-process client session of the gateway that records
// its notifications.
type noteClient struct {
	*client.Client
	mu    sync.Mutex
	notes []mcp.JSONRPCNotification
}

func newNoteClient(t *testing.T, s *mcpserver.MCPServer) *noteClient {
	t.Helper()
	// A legacy session: 2026-07-28 has no resources/subscribe.
	c, err := client.NewInProcessClientWithOptions(s, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	if err != nil {
		t.Fatal(err)
	}
	nc := &noteClient{Client: c}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		nc.mu.Lock()
		nc.notes = append(nc.notes, n)
		nc.mu.Unlock()
	})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	return nc
}

// updates lists the URIs of the resources/updated notifications received.
func (c *noteClient) updates() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range c.notes {
		if n.Method == mcp.MethodNotificationResourceUpdated {
			uri, _ := n.Params.AdditionalFields["uri"].(string)
			out = append(out, uri)
		}
	}
	return out
}

func (c *noteClient) subscribe(ctx context.Context, uri string) error {
	req := mcp.SubscribeRequest{}
	req.Params.URI = uri
	return c.Subscribe(ctx, req)
}

func (c *noteClient) unsubscribe(ctx context.Context, uri string) error {
	req := mcp.UnsubscribeRequest{}
	req.Params.URI = uri
	return c.Unsubscribe(ctx, req)
}

// touchTool lets a test make a provider announce that a resource changed.
// The notification goes out while the call is in flight: mcp-go's HTTP
// server has no other way to a client without a GET stream.
func touchTool(s *mcpserver.MCPServer) {
	s.AddTool(mcp.NewTool("touch", mcp.WithString("uri")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = mcpserver.ServerFromContext(ctx).SendNotificationToClient(ctx, mcp.MethodNotificationResourceUpdated,
			map[string]any{"uri": req.GetString("uri", ""), "title": "changed"})
		time.Sleep(50 * time.Millisecond) // see slow in providerServer
		return mcp.NewToolResultText("touched"), nil
	})
}

func (h *fdHarness) touch(t *testing.T, server, uri string) {
	t.Helper()
	h.ok(t, "hangar_call", map[string]any{"calls": []any{map[string]any{"mcp_server": server, "tool": "touch", "arguments": map[string]any{"uri": uri}}}})
}

// TestFrontDoorSubscriptions: a provider is subscribed once per URI while
// any session is; its updates reach exactly the subscribed sessions; the
// last unsubscribe, or the end of the last session, unsubscribes it; a
// restarted provider is subscribed again.
func TestFrontDoorSubscriptions(t *testing.T) {
	t.Parallel()
	l := newPipeLauncher()
	l.extra["a"] = touchTool
	h := newFrontDoor(t, l, nil, nil, server("a"), server("b"))
	ctx := t.Context()
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "a"})
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "b"})
	h.refresh(t)

	c1, c2, c3 := newNoteClient(t, h.srv), newNoteClient(t, h.srv), newNoteClient(t, h.srv)
	for _, c := range []*noteClient{c1, c2, c1} { // c1 twice: no second upstream request
		if err := c.subscribe(ctx, "file:///a"); err != nil {
			t.Fatal(err)
		}
	}
	if err := c3.subscribe(ctx, "file:///shared"); err != nil {
		t.Fatal(err)
	}
	if got, want := l.upstreamOf("a"), []string{"1 subscribe file:///a", "1 subscribe file:///shared"}; !slices.Equal(got, want) {
		t.Errorf("upstream requests %v, want %v", got, want)
	}
	if got := h.g.FrontDoor.Subscriptions(); got["file:///a"] != 2 || got["file:///shared"] != 1 {
		t.Errorf("subscriptions %v", got)
	}

	h.touch(t, "a", "file:///a")
	h.touch(t, "a", "file:///shared")
	waitFor(t, "updates relayed", func() bool {
		return len(c1.updates()) == 1 && len(c2.updates()) == 1 && len(c3.updates()) == 1
	})
	// Each session's notifications arrive in order: c3 got file:///shared
	// after file:///a went out, so it was never sent file:///a.
	if got := c3.updates(); !slices.Equal(got, []string{"file:///shared"}) {
		t.Errorf("c3 got %v", got)
	}
	if got := c1.updates(); !slices.Equal(got, []string{"file:///a"}) {
		t.Errorf("c1 got %v", got)
	}
	if got := h.notesOf(mcp.MethodNotificationResourceUpdated); len(got) != 0 {
		t.Errorf("a session that subscribed to nothing got %v", got)
	}

	// c1 leaves: c2 still holds the upstream subscription.
	if err := c1.unsubscribe(ctx, "file:///a"); err != nil {
		t.Fatal(err)
	}
	if err := c1.unsubscribe(ctx, "file:///never"); err != nil {
		t.Errorf("unsubscribing what was never subscribed: %v", err)
	}
	if got := l.upstreamOf("a"); len(got) != 2 {
		t.Errorf("upstream requests %v after one of two sessions left", got)
	}
	// c2's session ends: the last one, so the provider is unsubscribed.
	_ = c2.Close()
	waitFor(t, "upstream unsubscribe at session end", func() bool {
		return slices.Contains(l.upstreamOf("a"), "1 unsubscribe file:///a")
	})
	if got := h.g.FrontDoor.Subscriptions(); got["file:///a"] != 0 || got["file:///shared"] != 1 {
		t.Errorf("subscriptions %v", got)
	}

	// A restart loses the provider's subscriptions; the front door
	// subscribes the new run again.
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); h.g.FrontDoor.Run(rctx) }()
	t.Cleanup(func() { cancel(); <-done })
	h.ok(t, "hangar_stop", map[string]any{"mcp_server": "a"})
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "a"})
	waitFor(t, "subscribed again after the restart", func() bool {
		return slices.Contains(l.upstreamOf("a"), "2 subscribe file:///shared")
	})
	h.touch(t, "a", "file:///shared")
	waitFor(t, "update from the new run", func() bool { return len(c3.updates()) == 2 })
}

// TestFrontDoorSubscribeRefusals: a URI nobody serves and one whose server
// is outside the caller's are refused alike, a caller without hangar:read
// with the reason; nothing is left subscribed. hangar:read is enough (reading
// the resource is what needs hangar:call).
func TestFrontDoorSubscribeRefusals(t *testing.T) {
	t.Parallel()
	h := newFrontDoor(t, nil, nil, nil, server("a"), server("b"))
	ctx := t.Context()
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "a"})
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "b"})
	h.refresh(t)
	c := newNoteClient(t, h.srv)
	limited := auth.WithIdentity(ctx, auth.NewIdentity("t", auth.KindToken, []string{auth.ScopeRead}, []string{"a"}))
	noScope := auth.WithIdentity(ctx, auth.NewIdentity("n", auth.KindToken, nil, nil))
	for _, tt := range []struct {
		name string
		ctx  context.Context
		uri  string
		want string
	}{
		{"unknown", ctx, "file:///nope", "resource 'file:///nope' not found"},
		// As for a URI nobody serves: nothing says b serves it.
		{"outside the servers", limited, "file:///b", "resource 'file:///b' not found: no resource or resource template with that URI is served"},
		{"template outside the servers", limited, "item-b://3", "resource 'item-b://3' not found: no resource or resource template with that URI is served"},
		{"no scope", noScope, "file:///a", "Token missing required scope: hangar:read"},
	} {
		err := c.subscribe(tt.ctx, tt.uri)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: subscribe error %v, want %q", tt.name, err, tt.want)
		}
	}
	if err := c.subscribe(limited, "item-a://3"); err != nil {
		t.Errorf("limited caller, its own server's template: %v", err)
	}
	if got := h.g.FrontDoor.Subscriptions(); len(got) != 1 || got["item-a://3"] != 1 {
		t.Errorf("subscriptions %v", got)
	}
}

// TestFrontDoorSubscriptionsEndWithHTTPSessions: DELETE and idle expiry of
// a streamable HTTP session unsubscribe the provider.
func TestFrontDoorSubscriptionsEndWithHTTPSessions(t *testing.T) {
	t.Parallel()
	l := newPipeLauncher()
	h := newFrontDoor(t, l, nil, nil, server("a"))
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "a"})
	h.refresh(t)
	ep := h.g.HTTP(h.srv, endpoint.Options{SessionIdleTTL: time.Second})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ep.Sessions().Shutdown(ctx)
		ep.Close()
	})
	post := func(session, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			r.Header.Set("Mcp-Session-Id", session)
			r.Header.Set("Mcp-Protocol-Version", legacyVer)
		}
		w := httptest.NewRecorder()
		ep.Handler.ServeHTTP(w, r)
		return w
	}
	open := func(uri string) string {
		w := post("", initBody)
		id := w.Header().Get("Mcp-Session-Id")
		if id == "" {
			t.Fatalf("initialize: %d %s", w.Code, w.Body)
		}
		post(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		if w := post(id, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":%q}}`, uri)); w.Code != 200 || strings.Contains(w.Body.String(), `"error"`) {
			t.Fatalf("subscribe: %d %s", w.Code, w.Body)
		}
		return id
	}
	deleted := open("file:///a")
	open("file:///shared") // left to expire
	if got := l.upstreamOf("a"); len(got) != 2 {
		t.Fatalf("upstream requests %v", got)
	}
	r := httptest.NewRequest(http.MethodDelete, "/mcp", nil)
	r.Header.Set("Mcp-Session-Id", deleted)
	r.Header.Set("Mcp-Protocol-Version", legacyVer)
	ep.Handler.ServeHTTP(httptest.NewRecorder(), r)
	waitFor(t, "unsubscribe on DELETE", func() bool { return slices.Contains(l.upstreamOf("a"), "1 unsubscribe file:///a") })
	waitFor(t, "unsubscribe on expiry", func() bool { return slices.Contains(l.upstreamOf("a"), "1 unsubscribe file:///shared") })
	if got := h.g.FrontDoor.Subscriptions(); len(got) != 0 {
		t.Errorf("subscriptions left %v", got)
	}
}
