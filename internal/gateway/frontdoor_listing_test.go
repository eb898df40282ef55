package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
)

// listingGateway is a front door with tokens, served twice: by the
// gateway's HTTP endpoint (gw) and by a bare mcp-go streamable server over
// the same MCP server behind the same authentication (ref), which is what
// mcp-go itself answers.
type listingGateway struct {
	*fdHarness
	gw, ref http.Handler
}

func newListingGateway(t *testing.T) *listingGateway {
	t.Helper()
	var servers []*config.Server
	for _, id := range []string{"alpha", "beta", "secret"} {
		s := server(id)
		s.Tools.Predefined = []config.ToolDef{
			// HTML and U+2028 are escaped by mcp-go's encoder; so must they be here.
			{Name: "sum", Description: "adds a & b <fast>", InputSchema: json.RawMessage(`{"type": "object", "properties": {"a": {"type": "number"}}}`)},
			{Name: "echo", Description: "says \u2028 it again", InputSchema: json.RawMessage(`{"type":"object"}`)},
		}
		servers = append(servers, s)
	}
	var cfg *config.Config
	h := newFrontDoor(t, nil, nil, func(c *config.Config) {
		c.Auth.Tokens = []config.Token{
			tok("admin", adminTok, auth.AllScopes),
			tok("caller", callTok, []string{auth.ScopeRead, auth.ScopeCall}, "alpha", "be*"),
			tok("reader", readTok, []string{auth.ScopeRead}),
		}
		cfg = c
	}, servers...)
	h.refresh(t)
	ah := &auth.HTTP{Auth: auth.NewAuthenticator(t.Context(), cfg.Auth, auth.Options{}), Log: quiet}
	ref := mcpserver.NewStreamableHTTPServer(h.srv, mcpserver.WithEndpointPath("/mcp"))
	return &listingGateway{fdHarness: h, gw: h.g.HTTP(h.srv, endpoint.Options{Auth: ah}).Handler, ref: ah.Middleware(ref)}
}

// listReq is a tools/list request; edit changes it before it is sent.
type listReq struct {
	token, version, id, params string
	raw                        string // the body, when not a tools/list
	header                     http.Header
	ctx                        func(context.Context) context.Context
	host                       string
}

func modernList(token, id string) listReq {
	v := mcp.LATEST_PROTOCOL_VERSION
	return listReq{token: token, version: v, id: id,
		params: `{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `","io.modelcontextprotocol/clientCapabilities":{},` +
			`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}`,
		header: http.Header{"Mcp-Method": {"tools/list"}}}
}

func (q listReq) send(h http.Handler) *httptest.ResponseRecorder {
	body := `{"jsonrpc":"2.0","id":` + q.id + `,"method":"tools/list","params":` + q.params + `}`
	if q.params == "" {
		body = `{"jsonrpc":"2.0","id":` + q.id + `,"method":"tools/list"}`
	}
	if q.raw != "" {
		body = q.raw
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	r.RemoteAddr = "127.0.0.1:50000"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if q.version != "" {
		r.Header.Set("MCP-Protocol-Version", q.version)
	}
	if q.token != "" {
		r.Header.Set("Authorization", "Bearer "+q.token)
	}
	for k, v := range q.header {
		r.Header[k] = v
	}
	if q.host != "" {
		r.Host = q.host
	}
	if q.ctx != nil {
		r = r.WithContext(q.ctx(r.Context()))
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// sameAnswer fails unless gw answered q exactly as mcp-go does: status,
// headers and body, byte for byte.
func (l *listingGateway) sameAnswer(t *testing.T, q listReq) []byte {
	t.Helper()
	got, want := q.send(l.gw), q.send(l.ref)
	if got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
		t.Fatalf("gateway answered %d %.400s\nmcp-go answered %d %.400s", got.Code, got.Body, want.Code, want.Body)
	}
	if !equalHeaders(got.Header(), want.Header()) {
		t.Fatalf("gateway headers %v, mcp-go's %v", got.Header(), want.Header())
	}
	return got.Body.Bytes()
}

func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// listedNames are the tool names of a JSON tools/list answer.
func listedNames(t *testing.T, body []byte) []string {
	t.Helper()
	var resp struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("%v: %.300s", err, body)
	}
	var out []string
	for _, tl := range resp.Result.Tools {
		if strings.Contains(tl.Name, "__") {
			out = append(out, tl.Name)
		}
	}
	return out
}

// TestToolsListCacheMatchesMCPGo: the front door's tools/list answer on
// the stateless protocol is byte for byte what mcp-go answers, for every
// caller view (all scopes, a server filter, read only) and request id
// form, cached or not; requests mcp-go answers otherwise (a cursor, bad
// headers, a refused host, the session-based protocol) are left to it and
// cache nothing.
func TestToolsListCacheMatchesMCPGo(t *testing.T) {
	t.Parallel()
	l := newListingGateway(t)
	fd := l.g.FrontDoor

	edit := func(q listReq, f func(*listReq)) listReq { f(&q); return q }
	admin := modernList(adminTok, "1")
	legacyMeta := strings.Replace(admin.params, mcp.LATEST_PROTOCOL_VERSION, mcp.LATEST_LEGACY_PROTOCOL_VERSION, 1)
	loopback := func(ctx context.Context) context.Context {
		return context.WithValue(ctx, http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80})
	}
	for name, q := range map[string]listReq{
		"cursor": edit(admin, func(q *listReq) {
			q.params = strings.Replace(q.params, `{"_meta"`, `{"cursor":"YWxwaGFfX3N1bQ==","_meta"`, 1)
		}),
		"bad cursor":       edit(admin, func(q *listReq) { q.params = strings.Replace(q.params, `{"_meta"`, `{"cursor":"!!","_meta"`, 1) }),
		"no Mcp-Method":    edit(admin, func(q *listReq) { q.header = nil }),
		"wrong Mcp-Method": edit(admin, func(q *listReq) { q.header = http.Header{"Mcp-Method": {"tools/call"}} }),
		"header is legacy": edit(admin, func(q *listReq) { q.version = mcp.LATEST_LEGACY_PROTOCOL_VERSION }),
		"meta is legacy":   edit(admin, func(q *listReq) { q.params = legacyMeta }),
		"no meta":          edit(admin, func(q *listReq) { q.params = "" }),
		"unknown version": edit(admin, func(q *listReq) {
			q.version = "2099-01-01"
			q.params = strings.ReplaceAll(q.params, mcp.LATEST_PROTOCOL_VERSION, "2099-01-01")
		}),
		"no capabilities": edit(admin, func(q *listReq) {
			q.params = strings.Replace(q.params, `"io.modelcontextprotocol/clientCapabilities":{},`, "", 1)
		}),
		"Last-Event-ID":     edit(admin, func(q *listReq) { q.header = http.Header{"Mcp-Method": {"tools/list"}, "Last-Event-Id": {"1"}} }),
		"text content type": edit(admin, func(q *listReq) { q.header = http.Header{"Mcp-Method": {"tools/list"}, "Content-Type": {"text/plain"}} }),
		"rebinding host":    edit(admin, func(q *listReq) { q.ctx, q.host = loopback, "evil.example" }),
		"params not object": edit(admin, func(q *listReq) { q.params = `"x"` }),
		"no token":          edit(admin, func(q *listReq) { q.token = "" }),
		"meta version number": edit(admin, func(q *listReq) {
			q.params = strings.Replace(q.params, `"`+mcp.LATEST_PROTOCOL_VERSION+`"`, "20260728", 1)
		}),
	} {
		t.Run(name, func(t *testing.T) { l.sameAnswer(t, q) })
	}
	if n := fd.CachedListings(); n != 0 {
		t.Fatalf("%d answers cached by requests mcp-go had to answer", n)
	}

	views := map[string]struct {
		token string
		want  []string
	}{
		"admin":  {adminTok, []string{"alpha__echo", "alpha__sum", "beta__echo", "beta__sum", "secret__echo", "secret__sum"}},
		"caller": {callTok, []string{"alpha__echo", "alpha__sum", "beta__echo", "beta__sum"}},
		"reader": {readTok, nil},
	}
	for name, v := range views {
		for _, id := range []string{"7", `"req-<1>"`, "1.0", "12345678901234567890", `"\u0041"`} {
			q := modernList(v.token, id)
			first := l.sameAnswer(t, q)
			if got := listedNames(t, first); !slices.Equal(got, v.want) {
				t.Errorf("%s lists %v, want %v", name, got, v.want)
			}
			if again := l.sameAnswer(t, q); !bytes.Equal(again, first) {
				t.Errorf("%s: the cached answer differs from the first", name)
			}
		}
	}
	if n := fd.CachedListings(); n != len(views) {
		t.Errorf("%d answers cached, want one per view (%d)", n, len(views))
	}
}

// TestToolsListLegacySessions: on the session-based protocol the front
// door's tools/list is mcp-go's own answer, with the same per-caller
// filter, for every session of a view from one cached answer; a session
// with notifications waiting is left to mcp-go, which sends them first.
func TestToolsListLegacySessions(t *testing.T) {
	t.Parallel()
	l := newListingGateway(t)
	fd := l.g.FrontDoor
	legacy := func(token, sid, id string) listReq {
		return listReq{token: token, version: mcp.LATEST_LEGACY_PROTOCOL_VERSION, id: id, params: "{}",
			header: http.Header{"Mcp-Session-Id": {sid}}}
	}
	views := []struct {
		token string
		want  []string
	}{
		{adminTok, []string{"alpha__echo", "alpha__sum", "beta__echo", "beta__sum", "secret__echo", "secret__sum"}},
		{callTok, []string{"alpha__echo", "alpha__sum", "beta__echo", "beta__sum"}},
	}
	for _, v := range views {
		for range 2 { // two sessions of one view share the answer
			ref, gw := legacySession(t, l.ref, v.token), legacySession(t, l.gw, v.token)
			for _, id := range []string{"3", `"req-<1>"`, "1.0"} {
				want := legacy(v.token, ref, id).send(l.ref)
				got := legacy(v.token, gw, id).send(l.gw)
				if got.Code != http.StatusOK || got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
					t.Fatalf("gateway answered %d %.300s\nmcp-go answered %d %.300s", got.Code, got.Body, want.Code, want.Body)
				}
				if !equalHeaders(got.Header(), want.Header()) {
					t.Fatalf("gateway headers %v, mcp-go's %v", got.Header(), want.Header())
				}
				if names := listedNames(t, got.Body.Bytes()); !slices.Equal(names, v.want) {
					t.Errorf("listed %v, want %v", names, v.want)
				}
			}
		}
	}
	if n := fd.CachedListings(); n != len(views) {
		t.Errorf("%d answers cached, want one per view (%d)", n, len(views))
	}

	// Left to mcp-go: what it answers otherwise, and a session with a
	// notification waiting.
	sid := legacySession(t, l.gw, adminTok)
	for name, q := range map[string]listReq{
		"cursor":          func() listReq { q := legacy(adminTok, sid, "4"); q.params = `{"cursor":"YWxwaGFfX3N1bQ=="}`; return q }(),
		"unknown version": func() listReq { q := legacy(adminTok, sid, "4"); q.version = "2099-01-01"; return q }(),
		"params not object": func() listReq {
			q := legacy(adminTok, sid, "4")
			q.params = `"x"`
			return q
		}(),
	} {
		before := fd.CachedListings()
		w := q.send(l.gw)
		if w.Code == http.StatusOK && bytes.Contains(w.Body.Bytes(), []byte(`"tools"`)) && !strings.Contains(name, "cursor") {
			t.Errorf("%s: listed %.200s", name, w.Body)
		}
		if fd.CachedListings() != before {
			t.Errorf("%s: an answer was cached", name)
		}
	}
	init := listReq{token: adminTok, version: mcp.LATEST_LEGACY_PROTOCOL_VERSION, raw: `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		header: http.Header{"Mcp-Session-Id": {sid}}}
	if w := init.send(l.gw); w.Code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", w.Code, w.Body)
	}
	l.srv.SendNotificationToAllClients("notifications/message", map[string]any{"level": "info", "data": "waiting"})
	w := legacy(adminTok, sid, "5").send(l.gw)
	body := w.Body.String()
	if w.Header().Get("Content-Type") != "text/event-stream" || !strings.Contains(body, `"waiting"`) ||
		strings.Index(body, `"waiting"`) > strings.Index(body, `"alpha__echo"`) {
		t.Fatalf("a list with a notification waiting: %s %.400s", w.Header().Get("Content-Type"), body)
	}
	// Nothing waits now: the answer comes from the listing, as JSON.
	w = legacy(adminTok, sid, "6").send(l.gw)
	if w.Header().Get("Content-Type") != "application/json" || !slices.Equal(listedNames(t, w.Body.Bytes()), views[0].want) {
		t.Fatalf("the next list: %s %.400s", w.Header().Get("Content-Type"), w.Body)
	}
}

// legacySession opens a 2025-11-25 session on h and returns its id.
func legacySession(t *testing.T, h http.Handler, token string) string {
	t.Helper()
	return legacySessionCaps(t, h, token, `{}`)
}

// TestToolsListCacheFollowsChanges: a change of the listed tools is
// served at once (the cached answer of the old set is dropped), with one
// tools/list_changed as before; a refresh that changes nothing keeps it.
func TestToolsListCacheFollowsChanges(t *testing.T) {
	t.Parallel()
	h := newFrontDoor(t, nil, nil, nil, server("a"), server("b"))
	h.refresh(t)
	gw := h.g.HTTP(h.srv, endpoint.Options{}).Handler
	ref := mcpserver.NewStreamableHTTPServer(h.srv, mcpserver.WithEndpointPath("/mcp"))
	l := &listingGateway{fdHarness: h, gw: gw, ref: ref}
	fd := h.g.FrontDoor
	changes := func() int { return len(h.notesOf(string(mcp.MethodNotificationToolsListChanged))) }
	list := func() []string { return listedNames(t, l.sameAnswer(t, modernList("", "1"))) }

	if got := list(); len(got) != 0 {
		t.Fatalf("before any start: %v listed", got)
	}
	// A client that lists the moment it is sent list_changed, before
	// SetTools has returned, gets the new tools.
	eager := &eagerSession{id: "eager", ch: make(chan mcp.JSONRPCNotification, 100),
		list: func() []string { return listedNames(t, modernList("", "2").send(gw).Body.Bytes()) }}
	if err := h.srv.RegisterSession(t.Context(), eager); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.srv.UnregisterSession(context.Background(), eager.id) })
	base := changes()
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "a"})
	eager.reset()
	h.refresh(t)
	waitFor(t, "list_changed", func() bool { return changes() == base+1 })
	seen := eager.seen()
	if len(seen) == 0 {
		t.Fatal("no list on list_changed")
	}
	for _, got := range seen {
		if !slices.Equal(got, prefixed("a", providerTools...)) {
			t.Errorf("listed on list_changed: %v", got)
		}
	}
	if got := list(); !slices.Equal(got, prefixed("a", providerTools...)) {
		t.Fatalf("after a started: %v listed", got)
	}
	h.refresh(t) // nothing changed
	if n := fd.CachedListings(); n != 1 {
		t.Errorf("a refresh that changed nothing left %d answers cached, want 1", n)
	}
	if p, ok := h.mgr.Remove("a"); ok {
		_ = p.Retire(t.Context(), "test", false)
	}
	h.refresh(t)
	waitFor(t, "second list_changed", func() bool { return changes() == base+2 })
	// Callers listing at once after the change all get the new answer.
	want := modernList("", "1").send(ref).Body.Bytes()
	var wg sync.WaitGroup
	answers := make([][]byte, 8)
	for i := range answers {
		wg.Go(func() { answers[i] = modernList("", "1").send(gw).Body.Bytes() })
	}
	wg.Wait()
	for i, a := range answers {
		if !bytes.Equal(a, want) {
			t.Errorf("concurrent list %d: %.300s, mcp-go answers %.300s", i, a, want)
		}
	}
	if got := listedNames(t, want); len(got) != 0 {
		t.Errorf("after a was removed: %v listed", got)
	}
	if n := changes(); n != base+2 {
		t.Errorf("%d list_changed, want 2", n-base)
	}
}

// eagerSession is a client that lists the tools whenever it is sent a
// notification: mcp-go asks a session for its channel inside SetTools,
// after the tool set changed and before SetTools returns.
type eagerSession struct {
	id   string
	ch   chan mcp.JSONRPCNotification
	list func() []string

	mu    sync.Mutex
	lists [][]string
}

func (s *eagerSession) Initialize()       {}
func (s *eagerSession) Initialized() bool { return true }
func (s *eagerSession) SessionID() string { return s.id }

func (s *eagerSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	got := s.list()
	s.mu.Lock()
	s.lists = append(s.lists, got)
	s.mu.Unlock()
	return s.ch
}

func (s *eagerSession) reset() {
	s.mu.Lock()
	s.lists = nil
	s.mu.Unlock()
}

func (s *eagerSession) seen() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lists)
}
