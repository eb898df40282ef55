package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/store"
)

// fdHarness is a gateway in front_door mode over real MCP servers on pipes,
// with an in-process client that records the notifications it gets.
type fdHarness struct {
	*harness
	l   *pipeLauncher
	mgr *provider.Manager
	srv *mcpserver.MCPServer

	mu    sync.Mutex
	notes []mcp.JSONRPCNotification
}

func newFrontDoor(t testing.TB, l *pipeLauncher, st store.Catalogs, tune func(*config.Config), servers ...*config.Server) *fdHarness {
	t.Helper()
	return newFrontDoorWith(t, l, st, tune, nil, servers...)
}

// newFrontDoorWith is newFrontDoor with options for the test's client.
func newFrontDoorWith(t testing.TB, l *pipeLauncher, st store.Catalogs, tune func(*config.Config), copts []client.ClientOption, servers ...*config.Server) *fdHarness {
	t.Helper()
	if l == nil {
		l = newPipeLauncher()
	}
	cfg := config.Default()
	cfg.FrontDoor.Prefetch = false
	for _, s := range servers {
		cfg.Servers[s.ID] = s
	}
	if tune != nil {
		tune(cfg)
	}
	mgr := provider.NewManager(l, provider.Options{Log: quiet})
	g := gateway.New(cfg, mgr, nil, nil, quiet)
	for _, id := range slices.Sorted(maps.Keys(cfg.Servers)) {
		if s := cfg.Servers[id]; s.Mode == config.ModeGroup {
			if _, err := g.Groups.Add(s); err != nil {
				t.Fatal(err)
			}
		} else {
			mgr.Add(s)
		}
	}
	srv := g.MCPServer()
	if g.FrontDoor != nil {
		g.FrontDoor.Catalogs = st
	}
	c, err := client.NewInProcessClientWithOptions(srv, copts...)
	if err != nil {
		t.Fatal(err)
	}
	h := &fdHarness{harness: &harness{g: g, c: c}, l: l, mgr: mgr, srv: srv}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		h.mu.Lock()
		h.notes = append(h.notes, n)
		h.mu.Unlock()
	})
	t.Cleanup(func() {
		_ = c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = mgr.StopAll(ctx, "test")
	})
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *fdHarness) refresh(t *testing.T) { t.Helper(); h.g.FrontDoor.Refresh(t.Context()) }

// notesOf returns the notifications of method received so far.
func (h *fdHarness) notesOf(method string) []mcp.JSONRPCNotification {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []mcp.JSONRPCNotification
	for _, n := range h.notes {
		if n.Method == method {
			out = append(out, n)
		}
	}
	return out
}

// rpc sends one raw JSON-RPC request to s as ctx's caller and returns the
// raw result (failing on a JSON-RPC error).
func rpc(t *testing.T, ctx context.Context, s *mcpserver.MCPServer, method, params string) json.RawMessage {
	t.Helper()
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
	b, err := json.Marshal(s.HandleMessage(ctx, []byte(msg)))
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Error != nil {
		t.Fatalf("%s: %s", method, resp.Error)
	}
	return resp.Result
}

// toolList returns tools/list as raw tool objects by name.
func toolList(t *testing.T, ctx context.Context, s *mcpserver.MCPServer) map[string]map[string]json.RawMessage {
	t.Helper()
	var res struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(rpc(t, ctx, s, "tools/list", `{}`), &res); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]json.RawMessage{}
	for _, tool := range res.Tools {
		var name string
		_ = json.Unmarshal(tool["name"], &name)
		out[name] = tool
	}
	return out
}

func providerNames(tools map[string]map[string]json.RawMessage) []string {
	var out []string
	for n := range tools {
		if !strings.HasPrefix(n, "hangar_") {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

var providerTools = []string{"ask", "echo_raw", "kitchen_sink", "slow"}

func prefixed(prefix string, names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + "__" + n
	}
	return out
}

// TestFrontDoorListsWithoutStarting: tools/list shows what is known and
// never starts a provider; a provider that ran is listed after it stopped,
// with every field of its tools as it sent them.
func TestFrontDoorListsWithoutStarting(t *testing.T) {
	t.Parallel()
	h := newFrontDoor(t, nil, nil, nil, server("alpha"), server("beta"))
	ctx := t.Context()
	h.refresh(t)
	if got := providerNames(toolList(t, ctx, h.srv)); len(got) != 0 {
		t.Fatalf("before any start: %v listed", got)
	}
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "alpha"})
	h.ok(t, "hangar_stop", map[string]any{"mcp_server": "alpha"})
	h.refresh(t)
	tools := toolList(t, ctx, h.srv)
	if got := providerNames(tools); !slices.Equal(got, prefixed("alpha", providerTools...)) {
		t.Fatalf("listed %v", got)
	}
	if n := h.l.count("beta"); n != 0 {
		t.Errorf("beta started %d times by listing", n)
	}
	if st := h.mgr.List()[0].State(); st != provider.Cold {
		t.Errorf("alpha is %s after listing, want COLD", st)
	}
	// Every field but the name is the provider's own.
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "alpha"})
	direct := toolList(t, ctx, h.l.direct("alpha"))["echo_raw"]
	got := tools["alpha__echo_raw"]
	for k, v := range direct {
		if k == "name" {
			continue
		}
		if !bytes.Equal(got[k], v) {
			t.Errorf("%s = %s, provider sent %s", k, got[k], v)
		}
	}
	if len(got) != len(direct) {
		t.Errorf("fields %v, provider sent %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(direct)))
	}
}

// TestFrontDoorPolicies: predefined tools are listed without a start;
// expose: false hides a server; a group is one server; prefix and flat
// naming; egress lists no provider tool.
func TestFrontDoorPolicies(t *testing.T) {
	t.Parallel()
	pre := server("pre")
	pre.Tools.Predefined = []config.ToolDef{{Name: "sum", Description: "adds", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	hidden := server("hidden")
	hidden.Hidden = true
	hidden.Tools.Predefined = pre.Tools.Predefined
	renamed := server("renamed")
	renamed.Prefix = "rn"
	renamed.Tools.Predefined = pre.Tools.Predefined
	pool := &config.Server{ID: "pool", Mode: config.ModeGroup, Strategy: config.StrategyRoundRobin, MinHealthy: 1,
		Health: config.GroupHealth{UnhealthyThreshold: 2, HealthyThreshold: 1}, CircuitBreaker: config.CircuitBreaker{FailureThreshold: 10, ResetTimeout: time.Minute},
		Members: []*config.Server{server("m1"), server("m2")}}
	for _, m := range pool.Members {
		m.Weight, m.Priority = 1, 1
	}

	tests := []struct {
		name string
		tune func(*config.Config)
		want []string
	}{
		{"prefixed", nil, []string{"pool__ask", "pool__echo_raw", "pool__kitchen_sink", "pool__slow", "pre__sum", "rn__sum"}},
		{"flat", func(c *config.Config) { c.FrontDoor.Naming = config.NamingFlat }, []string{"ask", "echo_raw", "kitchen_sink", "slow",
			// pre and renamed both offer "sum": neither keeps the plain name.
			"sum_" + hashOf("pre", "sum"), "sum_" + hashOf("renamed", "sum")}},
		{"egress", func(c *config.Config) { c.ToolAccess.Mode = config.AccessEgress }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newFrontDoor(t, nil, nil, tt.tune, pre, hidden, renamed, pool)
			if h.g.FrontDoor == nil {
				if tt.want != nil {
					t.Fatal("no front door")
				}
				if got := providerNames(toolList(t, t.Context(), h.srv)); len(got) != 0 {
					t.Errorf("egress lists %v", got)
				}
				return
			}
			h.ok(t, "hangar_start", map[string]any{"mcp_server": "pool"})
			h.refresh(t)
			if got := providerNames(toolList(t, t.Context(), h.srv)); !slices.Equal(got, tt.want) {
				t.Errorf("listed %v, want %v", got, tt.want)
			}
			if n := h.l.count("pre") + h.l.count("renamed") + h.l.count("hidden"); n != 0 {
				t.Errorf("predefined servers started %d times", n)
			}
			d := obj(t, h.ok(t, "hangar_details", map[string]any{"mcp_server": "hidden"})["front_door"])
			if d["exposed"] != false || len(list(t, d["tools"])) != 0 {
				t.Errorf("hidden front_door = %v", d)
			}
			d = obj(t, h.ok(t, "hangar_details", map[string]any{"mcp_server": "pool"})["front_door"])
			if d["catalog_version"] == nil || len(list(t, d["tools"])) != len(providerTools) {
				t.Errorf("pool front_door = %v", d)
			}
		})
	}
}

// hashOf is the suffix a clashing name gets: sha256(server NUL tool), 6
// hex digits. Spelled out here so that a change of the scheme (which would
// rename tools agents know) fails the test.
func hashOf(server, tool string) string {
	known := map[string]string{
		"pre\x00sum":     "0adfbc",
		"renamed\x00sum": "529178",
	}
	return known[server+"\x00"+tool]
}

// TestFrontDoorCallerFilter: a caller without hangar:call sees and calls no
// provider tool; one limited to some servers sees only theirs.
func TestFrontDoorCallerFilter(t *testing.T) {
	t.Parallel()
	a, b := server("a"), server("b")
	for _, s := range []*config.Server{a, b} {
		s.Tools.Predefined = []config.ToolDef{{Name: "sum", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	}
	h := newFrontDoor(t, nil, nil, nil, a, b)
	h.refresh(t)
	tests := []struct {
		name string
		id   *auth.Identity
		want []string
	}{
		{"local", nil, []string{"a__sum", "b__sum"}},
		{"all scopes", ptr(auth.NewIdentity("t", auth.KindToken, auth.AllScopes, nil)), []string{"a__sum", "b__sum"}},
		{"read only", ptr(auth.NewIdentity("t", auth.KindToken, []string{auth.ScopeRead}, nil)), nil},
		{"servers b*", ptr(auth.NewIdentity("t", auth.KindToken, []string{auth.ScopeCall}, []string{"b*"})), []string{"b__sum"}},
		{"zero identity", &auth.Identity{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			if tt.id != nil {
				ctx = auth.WithIdentity(ctx, *tt.id)
			}
			if got := providerNames(toolList(t, ctx, h.srv)); !slices.Equal(got, tt.want) {
				t.Errorf("listed %v, want %v", got, tt.want)
			}
			// Calling is refused exactly where listing is.
			msg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__sum","arguments":{}}}`
			out, _ := json.Marshal(h.srv.HandleMessage(ctx, []byte(msg)))
			refused := strings.Contains(string(out), `"error":`)
			if want := !slices.Contains(tt.want, "a__sum"); refused != want {
				t.Errorf("a__sum call refused = %v, want %v: %s", refused, want, out)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestFrontDoorPassThrough: a call by callable name returns exactly what a
// direct call to the provider returns, byte for byte: every content type
// (one mcp-go does not know), structuredContent and _meta with integers
// beyond 2^53, isError; and the arguments reach the provider byte-exact.
func TestFrontDoorPassThrough(t *testing.T) {
	t.Parallel()
	h := newFrontDoor(t, nil, nil, nil, server("p"))
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "p"})
	h.refresh(t)
	direct := h.l.direct("p")
	tests := []struct{ tool, args string }{
		{"kitchen_sink", `{}`},
		{"echo_raw", `{"n":123456789012345678901234567890,"neg":-9007199254740993,"s":"é\u0000","f":0.1}`},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			ctx := t.Context()
			want := rpc(t, ctx, direct, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tt.tool, tt.args))
			got := rpc(t, ctx, h.srv, "tools/call", fmt.Sprintf(`{"name":"p__%s","arguments":%s}`, tt.tool, tt.args))
			if !bytes.Equal(got, want) {
				t.Errorf("through the front door:\n%s\ndirect:\n%s", got, want)
			}
		})
	}
	// And the echo is the arguments as sent.
	got := rpc(t, t.Context(), h.srv, "tools/call", `{"name":"p__echo_raw","arguments":{"n":123456789012345678901234567890}}`)
	if !bytes.Contains(got, []byte(`"structuredContent":{"n":123456789012345678901234567890}`)) {
		t.Errorf("arguments changed on the way: %s", got)
	}
}

// TestFrontDoorProgressAndCancel: the caller's progressToken reaches the
// provider, its progress comes back under the caller's token; cancelling
// the call cancels it at the provider.
func TestFrontDoorProgressAndCancel(t *testing.T) {
	t.Parallel()
	l := newPipeLauncher()
	started, cancelled := make(chan struct{}), make(chan struct{})
	l.extra["p"] = func(s *mcpserver.MCPServer) {
		s.AddTool(mcp.NewTool("hold"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(started)
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		})
	}
	h := newFrontDoor(t, l, nil, nil, server("p"))
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "p"})
	h.refresh(t)

	req := mcp.CallToolRequest{}
	req.Params.Name = "p__slow"
	req.Params.Arguments = map[string]any{"steps": 3}
	req.Params.Meta = &mcp.Meta{ProgressToken: "caller-token"}
	res, err := h.c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	// The provider saw a token (its own, unique per call), not none.
	if txt := textOf(t, res); !strings.HasPrefix(txt, "done, token hangar-") {
		t.Errorf("result %q", txt)
	}
	// The provider's server (mcp-go over HTTP) may put some of a call's
	// progress on its GET stream: what reaches the caller still only goes
	// up, ending with the last step.
	last := func() float64 {
		got := h.notesOf("notifications/progress")
		if len(got) == 0 {
			return 0
		}
		p, _ := got[len(got)-1].Params.AdditionalFields["progress"].(float64)
		return p
	}
	waitFor(t, "the last step's progress", func() bool { return last() == 3 })
	prev := 0.0
	for i, n := range h.notesOf("notifications/progress") {
		f := n.Params.AdditionalFields
		p, _ := f["progress"].(float64)
		if f["progressToken"] != "caller-token" || p <= prev || f["total"] != float64(3) || f["message"] != fmt.Sprintf("step %d", int(p)) {
			t.Errorf("progress %d = %v (after %v)", i, f, prev)
		}
		prev = p
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "p__hold"
		_, err := h.c.CallTool(ctx, req)
		done <- err
	}()
	// Cancelled once the provider works on it: a call cancelled before it
	// got there never reaches the handler.
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not reach the provider")
	}
	if n := h.mgr.Inflight()["p"]; n != 1 {
		t.Errorf("%d calls in flight, want 1", n)
	}
	cancel()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the provider's handler was not cancelled")
	}
	<-done
}

// TestFrontDoorListChanged: one tools/list_changed per change, none when
// nothing changed.
func TestFrontDoorListChanged(t *testing.T) {
	t.Parallel()
	h := newFrontDoor(t, nil, nil, nil, server("a"), server("b"))
	count := func() int { return len(h.notesOf(string(mcp.MethodNotificationToolsListChanged))) }
	h.refresh(t)
	base := count()
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "a"})
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "b"})
	h.refresh(t) // two servers' tools at once: one change
	waitFor(t, "list_changed", func() bool { return count() == base+1 })
	h.refresh(t)
	h.refresh(t)
	if p, ok := h.mgr.Remove("a"); ok {
		_ = p.Retire(t.Context(), "test", false)
	}
	h.refresh(t)
	waitFor(t, "second list_changed", func() bool { return count() == base+2 })
	time.Sleep(50 * time.Millisecond) // a duplicate would be delivered by now
	if n := count(); n != base+2 {
		t.Errorf("%d list_changed, want %d", n-base, 2)
	}
	if got := providerNames(toolList(t, t.Context(), h.srv)); !slices.Equal(got, prefixed("b", providerTools...)) {
		t.Errorf("listed %v", got)
	}
}

// memCatalogs is a store.Catalogs in memory.
type memCatalogs struct {
	mu sync.Mutex
	m  map[string]store.CachedCatalog
}

func (s *memCatalogs) Catalog(_ context.Context, server string) (store.CachedCatalog, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.m[server]
	if !ok {
		return c, store.ErrNotFound
	}
	return c, nil
}

func (s *memCatalogs) PutCatalog(_ context.Context, c store.CachedCatalog) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]store.CachedCatalog{}
	}
	s.m[c.Server] = c
	return nil
}

func (s *memCatalogs) DeleteCatalog(_ context.Context, server string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, server)
	return nil
}

// TestFrontDoorCatalogSurvivesRestart: a catalog read in one run is listed
// by the next without starting the provider, while the image is the same;
// a changed image is not trusted.
func TestFrontDoorCatalogSurvivesRestart(t *testing.T) {
	t.Parallel()
	st := &memCatalogs{}
	first := newFrontDoor(t, nil, st, nil, server("p"))
	first.ok(t, "hangar_start", map[string]any{"mcp_server": "p"})
	first.refresh(t)
	if c, err := st.Catalog(t.Context(), "p"); err != nil || c.ImageDigest != "example/p" || c.Version == "" {
		t.Fatalf("stored %+v, %v", c, err)
	}

	second := newFrontDoor(t, nil, st, nil, server("p"))
	second.refresh(t)
	if got := providerNames(toolList(t, t.Context(), second.srv)); !slices.Equal(got, prefixed("p", providerTools...)) {
		t.Errorf("after restart listed %v", got)
	}
	if n := second.l.count("p"); n != 0 {
		t.Errorf("started %d times", n)
	}
	// Resources and prompts came back too.
	if p, err := second.c.ListPrompts(t.Context(), mcp.ListPromptsRequest{}); err != nil || len(p.Prompts) != 1 || p.Prompts[0].Name != "p__greet" {
		t.Errorf("prompts after restart: %+v, %v", p, err)
	}
	// Callable without a prior start: the call starts it.
	res := second.call(t, "p__slow", nil)
	if res.IsError {
		t.Errorf("call: %v", res.Content)
	}

	changed := server("p")
	changed.Image = "example/p:v2"
	third := newFrontDoor(t, nil, st, nil, changed)
	third.refresh(t)
	if got := providerNames(toolList(t, t.Context(), third.srv)); len(got) != 0 {
		t.Errorf("catalog of another image listed: %v", got)
	}
}

// TestFrontDoorPrefetch: Run reads unknown catalogs at start-up and leaves
// the providers COLD.
func TestFrontDoorPrefetch(t *testing.T) {
	t.Parallel()
	h := newFrontDoor(t, nil, nil, func(c *config.Config) { c.FrontDoor.Prefetch = true }, server("a"), server("b"))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { h.g.FrontDoor.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "both catalogs listed", func() bool {
		return len(providerNames(toolList(t, t.Context(), h.srv))) == 2*len(providerTools)
	})
	waitFor(t, "both COLD", func() bool {
		for _, p := range h.mgr.List() {
			if p.State() != provider.Cold {
				return false
			}
		}
		return true
	})
	if h.l.count("a") != 1 || h.l.count("b") != 1 {
		t.Errorf("launches a=%d b=%d, want 1 each", h.l.count("a"), h.l.count("b"))
	}
}

// TestFrontDoorHearsProviders: nothing polls; a provider that starts and
// learns its tools is listed because the front door hears its transition,
// and a direct Stop (no catalog change) is heard the same way.
func TestFrontDoorHearsProviders(t *testing.T) {
	t.Parallel()
	h := newFrontDoor(t, nil, nil, nil, server("a"))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { h.g.FrontDoor.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if got := providerNames(toolList(t, t.Context(), h.srv)); len(got) != 0 {
		t.Fatalf("listed before any start: %v", got)
	}
	p, _ := h.mgr.Get("a")
	if _, err := p.Start(t.Context(), call.Progress{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the started provider's tools listed", func() bool {
		return len(providerNames(toolList(t, t.Context(), h.srv))) == len(providerTools)
	})
}

// TestFrontDoorLearned: a catalog a discovery health check read is the
// one listed; the front door does not start the server again to learn it
// (with prefetch on, an unknown catalog would start it: TestFrontDoorPrefetch).
func TestFrontDoorLearned(t *testing.T) {
	t.Parallel()
	a := server("a")
	h := newFrontDoor(t, nil, nil, func(c *config.Config) { c.FrontDoor.Prefetch = true }, a)
	var tools []mcpconn.Tool
	for _, n := range providerTools {
		tools = append(tools, mcpconn.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	h.g.FrontDoor.Learned(t.Context(), a, tools, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { h.g.FrontDoor.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "the learned catalog listed", func() bool {
		return len(providerNames(toolList(t, t.Context(), h.srv))) == len(providerTools)
	})
	if n := h.l.count("a"); n != 0 {
		t.Errorf("started %d times to learn a catalog it was given", n)
	}
}

// TestFrontDoorResourcesAndPrompts: a running provider's resources keep
// their URIs (a clash goes to the first server by ID, the other is
// reported shadowed), templates too; prompts are named like tools; reads
// and gets reach the owner.
func TestFrontDoorResourcesAndPrompts(t *testing.T) {
	t.Parallel()
	h := newFrontDoor(t, nil, nil, nil, server("a"), server("b"))
	ctx := t.Context()
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "a"})
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "b"})
	h.refresh(t)

	res, err := h.c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	if want := []string{"file:///a", "file:///b", "file:///shared"}; !slices.Equal(uris, want) {
		t.Errorf("resources %v, want %v", uris, want)
	}
	read := func(uri string) string {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = uri
		r, err := h.c.ReadResource(ctx, req)
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		return r.Contents[0].(mcp.TextResourceContents).Text
	}
	if got := read("file:///shared"); got != "from a" {
		t.Errorf("file:///shared read %q, want the first server's", got)
	}
	if got := read("file:///b"); got != "from b" {
		t.Errorf("file:///b read %q", got)
	}
	if got := read("item-b://7"); got != "b item item-b://7" {
		t.Errorf("template read %q", got)
	}
	d := obj(t, h.ok(t, "hangar_details", map[string]any{"mcp_server": "b"})["front_door"])
	if sh := list(t, d["shadowed"]); len(sh) != 1 || sh[0] != "file:///shared" {
		t.Errorf("b shadowed = %v", d["shadowed"])
	}

	prompts, err := h.c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range prompts.Prompts {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if want := []string{"a__greet", "b__greet"}; !slices.Equal(names, want) {
		t.Errorf("prompts %v, want %v", names, want)
	}
	req := mcp.GetPromptRequest{}
	req.Params.Name = "b__greet"
	req.Params.Arguments = map[string]string{"who": "you"}
	got, err := h.c.GetPrompt(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if txt := got.Messages[0].Content.(mcp.TextContent).Text; txt != "b greets you" {
		t.Errorf("prompt text %q", txt)
	}

	// A caller limited to a sees only a's prompts and cannot read b's
	// resources.
	limited := auth.WithIdentity(ctx, auth.NewIdentity("t", auth.KindToken, []string{auth.ScopeCall}, []string{"a"}))
	var pl struct {
		Prompts []struct{ Name string } `json:"prompts"`
	}
	_ = json.Unmarshal(rpc(t, limited, h.srv, "prompts/list", `{}`), &pl)
	if len(pl.Prompts) != 1 || pl.Prompts[0].Name != "a__greet" {
		t.Errorf("limited prompts %v", pl.Prompts)
	}
	out, _ := json.Marshal(h.srv.HandleMessage(limited, []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///b"}}`)))
	if !strings.Contains(string(out), `"error"`) {
		t.Errorf("limited caller read b's resource: %s", out)
	}
}

// sampler answers sampling requests like a model would.
type sampler struct{}

func (sampler) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	// Over multi round trip mcp-go's client hands the content on as decoded
	// JSON.
	content, err := mcp.ParseSamplingContent(req.Messages[0].Content)
	if err != nil {
		return nil, err
	}
	q := content.(mcp.TextContent).Text
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("4, to " + q)},
		Model:           "test-model",
	}, nil
}

// TestFrontDoorSamplingRelayed: a provider's sampling request during a
// call reaches the calling (in-process) client when it declared sampling,
// on 2026-07-28 by multi round trip, on 2025-11-25 as a request on its
// session; it is refused with a clear error when it did not.
//
// Not parallel, nor its cases: the provider is served over stdio, and
// mcp-go keeps one stdio session per process.
func TestFrontDoorSamplingRelayed(t *testing.T) {
	tests := []struct {
		name  string
		copts []client.ClientOption
		want  string
		isErr bool
	}{
		{"client samples", []client.ClientOption{client.WithSamplingHandler(sampler{})}, "the model said 4, to 2+2?", false},
		{"client cannot sample", nil, "did not declare the sampling capability", true},
		{"2025-11-25 client samples", []client.ClientOption{client.WithSamplingHandler(sampler{}), client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION)}, "the model said 4, to 2+2?", false},
		{"2025-11-25 client cannot sample", []client.ClientOption{client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION)}, "did not declare the sampling capability", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newPipeLauncher()
			l.stdio = true
			h := newFrontDoorWith(t, l, nil, nil, tt.copts, server("p"))
			h.ok(t, "hangar_start", map[string]any{"mcp_server": "p"})
			h.refresh(t)
			res := h.call(t, "p__ask", nil)
			if got := textOf(t, res); res.IsError != tt.isErr || !strings.Contains(got, tt.want) {
				t.Errorf("p__ask = %q (error %v), want %q", got, res.IsError, tt.want)
			}
		})
	}
}

// Bindings name each callable's raw tool and keep the time it was first
// bound across refreshes that change nothing; the management policy
// (Exposed) keeps an installed server off the front door.
func TestFrontDoorBindingsAndPolicy(t *testing.T) {
	t.Parallel()
	sum := []config.ToolDef{{Name: "sum", Description: "adds", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	a := server("a")
	a.Prefix = "rn"
	a.Tools.Predefined = sum
	b := server("b")
	b.Tools.Predefined = sum
	h := newFrontDoor(t, nil, nil, nil, a, b)
	// b is an install without allow_implicit_invocation; a has no policy.
	h.g.Exposed = func(id string) (bool, bool) { return false, id == "b" }
	h.refresh(t)

	got := h.g.FrontDoor.Bindings("a", 10)
	if len(got) != 1 || got[0].Callable != "rn__sum" || got[0].Tool != "sum" || got[0].CatalogVersion == "" || got[0].BoundAt.IsZero() {
		t.Fatalf("bindings of a = %+v", got)
	}
	h.refresh(t)
	if again := h.g.FrontDoor.Bindings("a", 10); len(again) != 1 || !again[0].BoundAt.Equal(got[0].BoundAt) {
		t.Errorf("a refresh that changed nothing rebound: %+v then %+v", got, again)
	}
	if names := providerNames(toolList(t, t.Context(), h.srv)); strings.Join(names, ",") != "rn__sum" {
		t.Errorf("listed %v, want only rn__sum (b is not implicit)", names)
	}
	// Not implicit: no callable name at all (hangar_call still reaches it).
	if bs := h.g.FrontDoor.Bindings("b", 10); len(bs) != 0 {
		t.Errorf("a server that is not implicit is bound: %+v", bs)
	}
}

// TestFrontDoorKeepsGatewayToolNames: a provider tool named like one of the
// gateway's own is listed under a suffixed name, refresh after refresh; the
// gateway's tool keeps its name.
func TestFrontDoorKeepsGatewayToolNames(t *testing.T) {
	t.Parallel()
	x := server("x")
	x.Tools.Predefined = []config.ToolDef{{Name: "hangar_list", Description: "shadow", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	h := newFrontDoor(t, nil, nil, func(c *config.Config) { c.FrontDoor.Naming = config.NamingFlat }, x)
	for range 2 {
		h.refresh(t)
		tools := toolList(t, t.Context(), h.srv)
		if d := string(tools["hangar_list"]["description"]); strings.Contains(d, "shadow") {
			t.Fatalf("hangar_list is the provider's: %s", d)
		}
		var suffixed []string
		for n, tl := range tools {
			if strings.HasPrefix(n, "hangar_list_") && string(tl["description"]) == `"shadow"` {
				suffixed = append(suffixed, n)
			}
		}
		if len(suffixed) != 1 || len(suffixed[0]) != len("hangar_list_")+6 {
			t.Fatalf("the provider's hangar_list is listed as %v", suffixed)
		}
	}
}
