package group

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
)

func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.DiscardHandler))
	os.Exit(m.Run())
}

var quiet = slog.New(slog.DiscardHandler)

// fakeBackend is an in-memory provider.Backend. Its tools:
//
//	who    → the member's ID, so a test sees where a call landed
//	fail   → a tool error
//	crash  → ends the backend as if its process died, without answering
//	block  → waits until the launcher's gate opens, ctx ends or the
//	         backend ends
//	*      → "ok"
type fakeBackend struct {
	member string
	l      *fakeLauncher

	done chan struct{}
	once sync.Once
	exit string
}

func (b *fakeBackend) ListTools(context.Context) ([]mcpconn.Tool, error) {
	if b.l.has(b.l.failList, b.member) {
		return nil, errors.New("tools/list: no answer")
	}
	return []mcpconn.Tool{{Name: "who"}, {Name: "fail"}, {Name: "crash"}, {Name: "block"}}, nil
}

func (b *fakeBackend) CallTool(ctx context.Context, name string, _ any, _ *mcpconn.CallOptions) (*mcp.CallToolResult, error) {
	b.l.entered <- b.member
	if b.l.has(b.l.crashing, b.member) {
		name = "crash"
	}
	switch name {
	case "who":
		return mcp.NewToolResultText(b.member), nil
	case "fail":
		return mcp.NewToolResultError("tool said no"), nil
	case "crash":
		b.end("exit 1")
		return nil, errors.New("EOF")
	case "block":
		select {
		case <-b.l.gate:
			return mcp.NewToolResultText(b.member), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-b.done:
			return nil, errors.New("EOF")
		}
	}
	return mcp.NewToolResultText("ok"), nil
}

func (b *fakeBackend) end(exit string) {
	b.once.Do(func() {
		b.exit = exit
		close(b.done)
	})
}

func (b *fakeBackend) Done() <-chan struct{} { return b.done }
func (b *fakeBackend) Exit() string {
	<-b.done
	return b.exit
}
func (b *fakeBackend) Stderr() string      { return "" }
func (b *fakeBackend) ContainerID() string { return "" }
func (b *fakeBackend) Stop(context.Context) error {
	b.end("exit 0")
	return nil
}

// fakeLauncher launches fakeBackends. Members in failing fail to start,
// members in crashing crash on every call, members in failList fail their
// health checks.
type fakeLauncher struct {
	gate    chan struct{}
	entered chan string // the member of every call, as it starts

	mu       sync.Mutex
	failing  map[string]bool
	crashing map[string]bool
	failList map[string]bool
	launches map[string]int
	live     map[string]*fakeBackend
}

func newFakeLauncher() *fakeLauncher {
	return &fakeLauncher{
		gate:     make(chan struct{}),
		entered:  make(chan string, 100000),
		failing:  map[string]bool{},
		crashing: map[string]bool{},
		failList: map[string]bool{},
		launches: map[string]int{},
		live:     map[string]*fakeBackend{},
	}
}

func (l *fakeLauncher) Launch(_ context.Context, s *config.Server) (provider.Backend, error) {
	l.mu.Lock()
	l.launches[s.ID]++
	fails := l.failing[s.ID]
	l.mu.Unlock()
	if fails {
		// A moment later, so that the caller is waiting for the start when
		// it fails (see provider.TestFastStartFailureIsOneAttempt).
		time.Sleep(5 * time.Millisecond)
		return nil, errors.New("no such image")
	}
	b := &fakeBackend{member: s.ID, l: l, done: make(chan struct{})}
	l.mu.Lock()
	l.live[s.ID] = b
	l.mu.Unlock()
	return b, nil
}

func (l *fakeLauncher) set(m map[string]bool, id string, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m[id] = on
}

func (l *fakeLauncher) has(m map[string]bool, id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return m[id]
}

// backend is member id's latest backend.
func (l *fakeLauncher) backend(id string) *fakeBackend {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.live[id]
}

func (l *fakeLauncher) launchCount(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.launches[id]
}

// waitEntered returns the member of the next call that starts.
func (l *fakeLauncher) waitEntered(t *testing.T) string {
	t.Helper()
	select {
	case m := <-l.entered:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no call started")
		return ""
	}
}

// fakeClock is a settable clock for the breaker.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// memberSpec is a member with weight and priority.
func memberSpec(id string, weight, priority int) *config.Server {
	return &config.Server{
		ID:             id,
		Mode:           config.ModeDocker,
		Image:          "example/" + id,
		MaxConcurrency: 100,
		StartTimeout:   5 * time.Second,
		Weight:         weight,
		Priority:       priority,
	}
}

// groupSpec is a group with the config defaults and the given members.
func groupSpec(id, strategy string, members ...*config.Server) *config.Server {
	return &config.Server{
		ID:             id,
		Mode:           config.ModeGroup,
		Strategy:       strategy,
		MinHealthy:     1,
		Health:         config.GroupHealth{UnhealthyThreshold: 2, HealthyThreshold: 1},
		CircuitBreaker: config.CircuitBreaker{FailureThreshold: 10, ResetTimeout: 60 * time.Second},
		Members:        members,
	}
}

// members returns n members m0…m(n-1) of weight and priority 1.
func members(n int) []*config.Server {
	out := make([]*config.Server, n)
	for i := range n {
		out[i] = memberSpec("m"+string(rune('0'+i)), 1, 1)
	}
	return out
}

// fixture is a registry with one group over fake members.
type fixture struct {
	l     *fakeLauncher
	mgr   *provider.Manager
	reg   *Registry
	g     *Group
	clock *fakeClock
}

type fixtureOpts struct {
	// backoff is the members' restart backoff: long (the default) keeps a
	// failed member answering provider_unavailable, a nanosecond makes
	// every call start it again.
	backoff time.Duration
	rand    func(int) int
}

func newFixture(t *testing.T, spec *config.Server, o fixtureOpts) *fixture {
	t.Helper()
	if o.backoff == 0 {
		o.backoff = time.Hour
	}
	l := newFakeLauncher()
	mgr := provider.NewManager(l, provider.Options{Log: quiet, BackoffBase: o.backoff, BackoffMax: o.backoff})
	clock := newFakeClock()
	reg := NewRegistry(mgr, Options{Now: clock.Now, Rand: o.rand, Log: quiet})
	g, err := reg.Add(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(l.gate)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = mgr.StopAll(ctx, "test")
	})
	return &fixture{l: l, mgr: mgr, reg: reg, g: g, clock: clock}
}

// who calls "who" through the group and returns the member that answered.
func (f *fixture) who(t *testing.T) string {
	t.Helper()
	res, err := f.g.Call(t.Context(), nil, "who", nil)
	if err != nil {
		t.Fatalf("call through the group: %v", err)
	}
	return text(res)
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// member returns the status of member id.
func (f *fixture) member(t *testing.T, id string) MemberStatus {
	t.Helper()
	for _, m := range f.g.Status().Members {
		if m.ID == id {
			return m
		}
	}
	t.Fatalf("no member %s", id)
	return MemberStatus{}
}

// waitFor polls cond until it holds or 5 s pass.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

func kindOf(err error) string {
	if err == nil {
		return ""
	}
	return provider.KindOf(err)
}
