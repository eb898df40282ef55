package registry

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/group"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// memBackend is a provider.Backend in memory with fixed tools.
type memBackend struct {
	done    chan struct{}
	once    sync.Once
	stopped *atomic.Int32
}

func (b *memBackend) ListTools(context.Context) ([]mcpconn.Tool, error) {
	return []mcpconn.Tool{{Name: "echo"}, {Name: "env"}, {Name: "sleep"}}, nil
}
func (b *memBackend) CallTool(context.Context, string, any, *mcpconn.CallOptions) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText("ok"), nil
}
func (b *memBackend) Done() <-chan struct{} { return b.done }
func (b *memBackend) Exit() string          { return "exit 0" }
func (b *memBackend) Stderr() string        { return "" }
func (b *memBackend) ContainerID() string   { return "" }
func (b *memBackend) Stop(context.Context) error {
	b.once.Do(func() { close(b.done); b.stopped.Add(1) })
	return nil
}

type memLauncher struct {
	fail    error
	stopped atomic.Int32
}

func (l *memLauncher) Launch(_ context.Context, spec *config.Server) (provider.Backend, error) {
	if l.fail != nil {
		return nil, l.fail
	}
	return &memBackend{done: make(chan struct{}), stopped: &l.stopped}, nil
}

// The Loader over the real provider manager: register, start with the
// tool policy, inspect, deregister.
func TestProvidersRegistrar(t *testing.T) {
	t.Parallel()
	launcher := &memLauncher{}
	m := provider.NewManager(launcher, provider.Options{})
	cat := catalog.New(catalog.Apply{Providers: m, Groups: group.NewRegistry(m, group.Options{})}, nil)
	cat.Publish(context.Background(), catalog.SourceConfig, []*config.Server{{ID: "math", Mode: config.ModeDocker, Image: "img"}}, "test")
	cat.Publish(context.Background(), catalog.SourceGroup, []*config.Server{{ID: "pool", Mode: config.ModeGroup,
		Members: []*config.Server{{ID: "pool-a", Mode: config.ModeDocker, Image: "img"}}}}, "test")
	reg := Providers{M: m, Catalog: cat}

	if err := reg.Register(&config.Server{ID: "math"}); !errors.Is(err, ErrIDTaken) {
		t.Errorf("Register(math) = %v, want ErrIDTaken", err)
	}
	for _, id := range []string{"pool", "pool-a"} {
		if err := reg.Register(&config.Server{ID: id}); errors.Is(err, ErrIDTaken) || !errors.Is(err, catalog.ErrReserved) {
			t.Errorf("Register(%s) = %v, want ErrReserved", id, err)
		}
	}
	l := NewLoader(config.Registry{MaxHotLoaded: 5}, &fakeSearch{entries: []Entry{
		catalogEntry("io.github.ok/math", testkitPkg), catalogEntry("io.github.ok/pool", testkitPkg),
	}}, reg, nil)
	l.cfg.VerifiedNamespaces = []string{"io.github.ok/"}

	res := l.Load(context.Background(), call.Progress{}, "math", false, nil, []string{"env"})
	if res.Status != StatusLoaded || res.MCPServer != "math-2" || !slices.Equal(res.Tools, []string{"echo", "sleep"}) {
		t.Fatalf("Load(math) = %+v, want math-2 with the policy's tools", res)
	}
	// A group's ID is reserved: the load is refused and says why.
	if res := l.Load(context.Background(), call.Progress{}, "pool", false, nil, nil); res.Status != StatusFailed ||
		!strings.Contains(res.Message, "reserved: it is the id of group pool") {
		t.Errorf("Load(pool) = %+v, want a refusal naming the group", res)
	}
	if e, ok := cat.Get("math-2"); !ok || e.Source != catalog.SourceHotload {
		t.Errorf("catalog entry math-2 = %+v %v", e, ok)
	}
	p, ok := m.Get("math-2")
	if !ok || p.Spec().Origin != config.OriginRegistry || p.State() != provider.Ready {
		t.Fatalf("provider math-2 = %v (ok %v)", p, ok)
	}
	if st, origin, ok := reg.Inspect("math"); !ok || origin != "" || st != "cold" {
		t.Errorf("Inspect(math) = %s %q %v", st, origin, ok)
	}
	if rt := l.Runtime(); len(rt) != 1 || rt[0].ID != "math-2" || rt[0].State != "ready" {
		t.Errorf("Runtime = %+v", rt)
	}

	if u := l.Unload(context.Background(), "math"); u.Status != StatusNotHotLoaded {
		t.Errorf("Unload(math) = %+v", u)
	}
	if u := l.Unload(context.Background(), "math-2"); u.Status != StatusUnloaded {
		t.Errorf("Unload(math-2) = %+v", u)
	}
	if _, ok := m.Get("math-2"); ok || launcher.stopped.Load() != 1 {
		t.Errorf("after Unload: registered %v, backends stopped %d", ok, launcher.stopped.Load())
	}
	if _, ok := m.Get("math"); !ok {
		t.Error("the configured server went away")
	}

	// A start failure leaves nothing behind.
	launcher.fail = errors.New("image not found: mcp-hangar/testkit:dev (the gateway never pulls; build or load it first)")
	l2 := NewLoader(config.Registry{VerifiedNamespaces: []string{"io.github.ok/"}},
		&fakeSearch{entries: []Entry{catalogEntry("io.github.ok/broken", testkitPkg)}}, reg, nil)
	res = l2.Load(context.Background(), call.Progress{}, "broken", false, nil, nil)
	if res.Status != StatusFailed || !strings.Contains(res.Message, "never pulls") {
		t.Errorf("Load(broken) = %+v", res)
	}
	if _, ok := m.Get("broken"); ok {
		t.Error("a server that failed to start is still registered")
	}
	if _, _, ok := reg.Inspect("broken"); ok {
		t.Error("Inspect finds the removed server")
	}
	if err := reg.Deregister(context.Background(), "never-there"); err != nil {
		t.Errorf("Deregister(unknown) = %v", err)
	}
	if _, err := reg.Start(context.Background(), "never-there", call.Progress{}); err == nil {
		t.Error("Start(unknown) succeeded")
	}
}
