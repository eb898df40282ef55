package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/metrics"
	"github.com/mcp-hangar/hangar/internal/provider"
)

func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.DiscardHandler))
	os.Exit(m.Run())
}

var quiet = slog.New(slog.DiscardHandler)

// fakeBackend is an in-memory provider.Backend with a few canned tools:
//
//	add    {a, b}  → the sum as text ("3")
//	echo   args    → the arguments as JSON text
//	fail           → a tool error "bad input"
//	big            → the launcher's bigText
//	block          → waits until the backend ends or ctx ends
type fakeBackend struct {
	id      string
	tools   []mcpconn.Tool
	bigText string

	done    chan struct{}
	once    sync.Once
	stopped atomic.Bool
}

func (b *fakeBackend) ListTools(context.Context) ([]mcpconn.Tool, error) { return b.tools, nil }

func (b *fakeBackend) CallTool(ctx context.Context, name string, args any, o *mcpconn.CallOptions) (*mcp.CallToolResult, error) {
	m, _ := args.(map[string]any)
	switch name {
	case "add":
		a, _ := m["a"].(float64)
		c, _ := m["b"].(float64)
		return mcp.NewToolResultText(fmt.Sprint(a + c)), nil
	case "echo":
		j, _ := json.Marshal(m)
		return mcp.NewToolResultText(string(j)), nil
	case "fail":
		return mcp.NewToolResultError("bad input"), nil
	case "big":
		return mcp.NewToolResultText(b.bigText), nil
	case "block":
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-b.done:
			return nil, errors.New("EOF")
		}
	}
	return mcp.NewToolResultText("ok"), nil
}

func (b *fakeBackend) Done() <-chan struct{} { return b.done }
func (b *fakeBackend) Exit() string          { return "exit 0" }
func (b *fakeBackend) Stderr() string        { return "" }
func (b *fakeBackend) ContainerID() string   { return "ctr-" + b.id }

func (b *fakeBackend) Stop(context.Context) error {
	b.stopped.Store(true)
	b.once.Do(func() { close(b.done) })
	return nil
}

// fakeLauncher launches fakeBackends; servers in failing fail to start.
type fakeLauncher struct {
	tools   []mcpconn.Tool
	failing map[string]bool
	bigText string

	mu       sync.Mutex
	launches map[string]int
}

func newFakeLauncher() *fakeLauncher {
	l := &fakeLauncher{failing: map[string]bool{}, launches: map[string]int{}}
	for _, n := range []string{"add", "echo", "fail", "big", "block"} {
		l.tools = append(l.tools, mcpconn.Tool{Name: n, Description: "the " + n + " tool"})
	}
	return l
}

func (l *fakeLauncher) Launch(_ context.Context, s *config.Server) (provider.Backend, error) {
	l.mu.Lock()
	l.launches[s.ID]++
	n := l.launches[s.ID]
	l.mu.Unlock()
	if l.failing[s.ID] {
		// Fail a moment later, so that the caller is waiting for the start
		// when it fails; an instant failure can race the caller (see
		// provider.TestFastStartFailureIsOneAttempt).
		time.Sleep(20 * time.Millisecond)
		return nil, errors.New("boom")
	}
	return &fakeBackend{id: fmt.Sprintf("%s-%d", s.ID, n), tools: l.tools, bigText: l.bigText, done: make(chan struct{})}, nil
}

func (l *fakeLauncher) launchCount(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.launches[id]
}

func server(id string) *config.Server {
	return &config.Server{
		ID:                     id,
		Mode:                   config.ModeDocker,
		Image:                  "example/" + id,
		MaxConcurrency:         10,
		MaxConsecutiveFailures: 3,
		StartTimeout:           2 * time.Second,
		Transport:              config.TransportStdio,
	}
}

// harness is a gateway over fake backends and an in-process MCP client.
type harness struct {
	g *gateway.Gateway
	l *fakeLauncher
	c *client.Client
}

func newHarness(t *testing.T, l *fakeLauncher, tune func(*config.Config), servers ...*config.Server) *harness {
	t.Helper()
	cfg := config.Default()
	for _, s := range servers {
		cfg.Servers[s.ID] = s
	}
	if tune != nil {
		tune(cfg)
	}
	return harnessFor(t, l, cfg, nil)
}

// harnessFor registers cfg's servers and groups with a gateway (m may be
// nil: no metrics) and connects an in-process MCP client to it.
func harnessFor(t *testing.T, l *fakeLauncher, cfg *config.Config, m *metrics.Metrics) *harness {
	t.Helper()
	if l == nil {
		l = newFakeLauncher()
	}
	opts := provider.Options{Log: quiet}
	if m != nil {
		opts.Events = m
	}
	mgr := provider.NewManager(l, opts)
	g := gateway.New(cfg, mgr, nil, m, quiet)
	for _, ch := range g.Catalog.PublishConfig(t.Context(), cfg, "test", false) {
		if ch.Action == catalog.Refused {
			t.Fatalf("%s not served: %s", ch.ID, ch.Reason)
		}
	}
	c, err := client.NewInProcessClient(g.MCPServer())
	if err != nil {
		t.Fatal(err)
	}
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
		t.Fatalf("Initialize: %v", err)
	}
	return &harness{g: g, l: l, c: c}
}

// call invokes a tool and returns its result; a protocol error fails the
// test.
func (h *harness) call(t *testing.T, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := h.c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	if len(parts) != 1 {
		t.Fatalf("want one text content, got %+v", res.Content)
	}
	return parts[0]
}

// ok calls a tool that must succeed and decodes its JSON answer.
func (h *harness) ok(t *testing.T, name string, args map[string]any) map[string]any {
	t.Helper()
	res := h.call(t, name, args)
	if res.IsError {
		t.Fatalf("%s(%v) failed: %s", name, args, textOf(t, res))
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(textOf(t, res)), &out); err != nil {
		t.Fatalf("%s: answer is not a JSON object: %v", name, err)
	}
	return out
}

// fail calls a tool that must report a tool error and returns its text.
func (h *harness) fail(t *testing.T, name string, args map[string]any) string {
	t.Helper()
	res := h.call(t, name, args)
	if !res.IsError {
		t.Fatalf("%s(%v) succeeded: %s", name, args, textOf(t, res))
	}
	return textOf(t, res)
}

// list returns v as a []any, failing the test otherwise.
func list(t *testing.T, v any) []any {
	t.Helper()
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("%v (%T) is not a list", v, v)
	}
	return l
}

// obj returns v as a map, failing the test otherwise.
func obj(t *testing.T, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v (%T) is not an object", v, v)
	}
	return m
}
