package manage_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/clientconfig"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/manage"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// logBuffer collects every log line, so tests can check that no secret
// was ever logged.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// fakeBackend is a provider backend with canned tools.
type fakeBackend struct {
	id    string
	tools []mcpconn.Tool
	done  chan struct{}
	once  sync.Once
}

func (b *fakeBackend) ListTools(context.Context) ([]mcpconn.Tool, error) { return b.tools, nil }
func (b *fakeBackend) CallTool(_ context.Context, name string, _ any, _ *mcpconn.CallOptions) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText("called " + name), nil
}
func (b *fakeBackend) Done() <-chan struct{} { return b.done }
func (b *fakeBackend) Exit() string          { return "exit 0" }
func (b *fakeBackend) Stderr() string        { return "" }
func (b *fakeBackend) ContainerID() string   { return "ctr-" + b.id }
func (b *fakeBackend) Stop(context.Context) error {
	b.once.Do(func() { close(b.done) })
	return nil
}

// fakeLauncher records every spec it launched and the backends alive.
type fakeLauncher struct {
	mu       sync.Mutex
	tools    []mcpconn.Tool
	launched []*config.Server
	alive    map[string]*fakeBackend
}

func newLauncher() *fakeLauncher {
	return &fakeLauncher{alive: map[string]*fakeBackend{}, tools: []mcpconn.Tool{
		{Name: "add", Description: "adds", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
			Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
	}}
}

func (l *fakeLauncher) Launch(_ context.Context, s *config.Server) (provider.Backend, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.launched = append(l.launched, s)
	b := &fakeBackend{id: s.ID, tools: l.tools, done: make(chan struct{})}
	l.alive[s.ID] = b
	return b, nil
}

func (l *fakeLauncher) setTools(tools []mcpconn.Tool) {
	l.mu.Lock()
	l.tools = tools
	l.mu.Unlock()
}

// running reports whether id's last backend is alive.
func (l *fakeLauncher) running(id string) bool {
	l.mu.Lock()
	b, ok := l.alive[id]
	l.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case <-b.done:
		return false
	default:
		return true
	}
}

func (l *fakeLauncher) launches(id string) []*config.Server {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*config.Server
	for _, s := range l.launched {
		if s.ID == id {
			out = append(out, s)
		}
	}
	return out
}

// harness is a gateway with management, served over httptest.
type harness struct {
	t        *testing.T
	URL      string
	Svc      *manage.Service
	Store    *manage.MemStore
	Launcher *fakeLauncher
	Gateway  *gateway.Gateway
	Log      *logBuffer
}

// The test identities: the X-Test-Identity header names the token a
// request sends to the real auth middleware; none sends the admin's.
var identities = map[string]config.Token{
	"reader":   {Name: "reader", Scopes: []string{auth.ScopeRead}},
	"admin":    {Name: "admin", Scopes: auth.AllScopes},
	"filtered": {Name: "filtered", Scopes: []string{auth.ScopeRead, auth.ScopeAdmin}, Servers: []string{"mine*"}},
	"nobody":   {Name: "nobody"},
}

func testAuth(ctx context.Context, log *slog.Logger) *auth.HTTP {
	var a config.Auth
	for name, tok := range identities {
		tok.SHA256 = sha256.Sum256([]byte("tok-" + name))
		a.Tokens = append(a.Tokens, tok)
	}
	return &auth.HTTP{Auth: auth.NewAuthenticator(ctx, a, auth.Options{}), Log: log}
}

func withIdentity(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.Header.Get("X-Test-Identity")
		if name == "" {
			name = "admin"
		}
		r.Header.Set("Authorization", "Bearer tok-"+name)
		next.ServeHTTP(w, r)
	})
}

type harnessOpts struct {
	store   *manage.MemStore
	servers []*config.Server
	opts    *manage.Options
}

func newHarness(t *testing.T, ho harnessOpts) *harness {
	t.Helper()
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l := newLauncher()
	st := ho.store
	if st == nil {
		st = manage.NewMemStore()
	}
	sink := manage.NewSink(nil)
	mgr := provider.NewManager(&manage.SecretLauncher{Next: l, Secrets: st}, provider.Options{Log: log, Events: sink})
	cfg := config.Default()
	g := gateway.New(cfg, mgr, nil, nil, log)
	g.Catalog.Publish(context.Background(), catalog.SourceConfig, ho.servers, "test")
	o := manage.Options{Install: clientconfig.Options{Runtimes: map[string]config.Runtime{"npx": {Image: "node:22", Network: "bridge"}}, Execution: cfg.Execution}}
	if ho.opts != nil {
		o = *ho.opts
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	cat := &manage.ProviderCatalog{Catalog: g.Catalog, Providers: mgr, Groups: g.Groups, Go: func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}}
	svc := manage.New(cat, st, manage.NewNotifier(log), "ws1", o, log)
	g.Management, g.Refuse, g.Hooks = svc, svc.Refuse, svc.Notifier.Hooks()
	if err := svc.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	mcpSrv := g.MCPServer()
	svc.Notifier.Attach(mcpSrv)
	wg.Add(1)
	go func() { defer wg.Done(); svc.Run(ctx, sink) }()
	ep := g.HTTP(mcpSrv, endpoint.Options{Auth: testAuth(ctx, log)})
	srv := httptest.NewServer(withIdentity(ep.Handler))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		_ = mgr.StopAll(context.Background(), "test")
		cancel()
		wg.Wait()
	})
	return &harness{t: t, URL: srv.URL, Svc: svc, Store: st, Launcher: l, Gateway: g, Log: logs}
}

// rpcResult is a JSON-RPC answer, and its raw body (to search for leaks).
type rpcResult struct {
	Result map[string]any
	Error  *manage.RPCError
	Raw    string
}

func (h *harness) rpcAs(who, method string, params any) rpcResult {
	h.t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, h.URL+"/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if who != "" {
		req.Header.Set("X-Test-Identity", who)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var env struct {
		ID     json.RawMessage  `json:"id"`
		Result map[string]any   `json:"result"`
		Error  *manage.RPCError `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		h.t.Fatalf("%s: status %d, body %q: %v", method, resp.StatusCode, raw, err)
	}
	if string(env.ID) != "7" {
		h.t.Fatalf("%s: id %s, want 7", method, env.ID)
	}
	return rpcResult{Result: env.Result, Error: env.Error, Raw: string(raw)}
}

// rpc calls as a local caller (no identity: every scope) and fails the
// test on an error.
func (h *harness) rpc(method string, params any) rpcResult {
	h.t.Helper()
	r := h.rpcAs("", method, params)
	if r.Error != nil {
		h.t.Fatalf("%s: error %d %s", method, r.Error.Code, r.Error.Message)
	}
	return r
}

func (h *harness) install(configJSON string, extra map[string]any) rpcResult {
	h.t.Helper()
	p := map[string]any{"config_json": configJSON}
	for k, v := range extra {
		p[k] = v
	}
	return h.rpc(manage.MethodInstall, p)
}

// item finds name in an mcp/list answer.
func item(t *testing.T, list rpcResult, name string) map[string]any {
	t.Helper()
	for _, s := range list.Result["servers"].([]any) {
		if m := s.(map[string]any); m["name"] == name {
			return m
		}
	}
	return nil
}

// waitFor polls cond until it holds or 10s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// events is an /events subscription.
type events struct {
	ch   chan map[string]any
	stop func()
}

func (h *harness) subscribe(who string) *events {
	h.t.Helper()
	return h.subscribeTo(who, "")
}

// subscribeTo is subscribe with a query (?follow=ID).
func (h *harness) subscribeTo(who, query string) *events {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+"/events"+query, nil)
	if who != "" {
		req.Header.Set("X-Test-Identity", who)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		h.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		resp.Body.Close()
		h.t.Fatalf("/events: status %d", resp.StatusCode)
	}
	ev := &events{ch: make(chan map[string]any, 1024), stop: cancel}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(data), &m) == nil {
					ev.ch <- m
				}
			}
		}
		close(ev.ch)
	}()
	h.t.Cleanup(cancel)
	return ev
}

// next returns the next notification with one of methods, skipping others.
func (e *events) next(t *testing.T, methods ...string) map[string]any {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-e.ch:
			if !ok {
				t.Fatalf("events stream ended waiting for %v", methods)
			}
			for _, want := range methods {
				if m["method"] == want {
					return m
				}
			}
		case <-timeout:
			t.Fatalf("no %v notification within 10s", methods)
		}
	}
}

func version(t *testing.T, n map[string]any) uint64 {
	t.Helper()
	p, _ := n["params"].(map[string]any)
	v, ok := p["snapshot_version"].(float64)
	if !ok {
		t.Fatalf("notification without snapshot_version: %v", n)
	}
	return uint64(v)
}

func mustNotContain(t *testing.T, where, text, secret string) {
	t.Helper()
	if strings.Contains(text, secret) {
		t.Errorf("secret leaked in %s: %s", where, text)
	}
}

// secretsUnder returns the keystore values under prefix.
func secretsUnder(st *manage.MemStore, prefix string) []string {
	var out []string
	refs, _ := st.SecretRefs(context.Background(), "")
	for _, ref := range refs {
		if strings.HasPrefix(ref, prefix) {
			b, _ := st.Secret(context.Background(), ref)
			out = append(out, string(b))
		}
	}
	return out
}
