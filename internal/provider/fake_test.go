package provider_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// errTransportClosed is what a fake backend's calls fail with once the
// backend has ended, like a transport seeing EOF.
var errTransportClosed = errors.New("transport closed: EOF")

// fakeBackend is an in-memory provider.Backend. Tools return canned
// results; Crash ends it as if the process died; a call to a tool named in
// block waits until the gate is opened, its ctx ends or the backend ends.
type fakeBackend struct {
	id    string
	tools []mcpconn.Tool

	done     chan struct{}
	doneOnce sync.Once

	mu     sync.Mutex
	exit   string
	stderr string

	// gate blocks calls to tools whose name starts with "block" until it is
	// closed.
	gate chan struct{}
	// entered receives the tool name of every call as it starts.
	entered chan string
	// stderrGate, when non-nil, makes Stderr wait until it is closed (a slow
	// stderr read).
	stderrGate chan struct{}

	calls   atomic.Int64
	stopped atomic.Bool
	// failList makes ListTools (the health check) fail.
	failList atomic.Bool
}

func newFakeBackend(id string, tools []mcpconn.Tool) *fakeBackend {
	return &fakeBackend{
		id:      id,
		tools:   tools,
		done:    make(chan struct{}),
		gate:    make(chan struct{}),
		entered: make(chan string, 256),
	}
}

func (b *fakeBackend) ListTools(context.Context) ([]mcpconn.Tool, error) {
	if b.failList.Load() {
		return nil, errors.New("tools/list: no answer")
	}
	return append([]mcpconn.Tool(nil), b.tools...), nil
}

func (b *fakeBackend) CallTool(ctx context.Context, name string, args any, o *mcpconn.CallOptions) (*mcp.CallToolResult, error) {
	b.calls.Add(1)
	select {
	case b.entered <- name:
	default:
	}
	select {
	case <-b.done:
		return nil, errTransportClosed
	default:
	}
	if strings.HasPrefix(name, "block") {
		select {
		case <-b.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-b.done:
			return nil, errTransportClosed
		}
	}
	if name == "error_tool" {
		return nil, errors.New("bad json-rpc frame")
	}
	if name == "fail_tool" {
		return mcp.NewToolResultError("tool said no"), nil
	}
	return mcp.NewToolResultText(fmt.Sprintf("%s:%s:%v", b.id, name, args)), nil
}

func (b *fakeBackend) Done() <-chan struct{} { return b.done }

func (b *fakeBackend) Exit() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.exit
}

func (b *fakeBackend) Stderr() string {
	if b.stderrGate != nil {
		<-b.stderrGate
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stderr
}

// end closes Done with exit as the reason, once.
func (b *fakeBackend) end(exit string) {
	b.doneOnce.Do(func() {
		b.mu.Lock()
		b.exit = exit
		b.mu.Unlock()
		close(b.done)
	})
}

// Crash ends the backend as if its process died.
func (b *fakeBackend) Crash(exit string) { b.end(exit) }

func (b *fakeBackend) Stop(context.Context) error {
	b.stopped.Store(true)
	b.end("exit 0")
	return nil
}

func (b *fakeBackend) ContainerID() string { return "ctr-" + b.id }

// Release opens the gate of blocked calls.
func (b *fakeBackend) Release() { close(b.gate) }

// waitEntered waits until n calls have started.
func (b *fakeBackend) waitEntered(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for range n {
		select {
		case <-b.entered:
		case <-timeout:
			t.Fatalf("backend %s: fewer than %d calls started", b.id, n)
		}
	}
}

// fakeLauncher is an in-memory provider.Launcher.
type fakeLauncher struct {
	tools []mcpconn.Tool

	// gate, when non-nil, makes Launch wait until it is closed. With
	// respectCtx the wait also ends (with an error) when ctx ends.
	gate       chan struct{}
	respectCtx bool
	// fail decides whether launch number n (from 1) fails.
	fail func(n int) error
	// failDelay delays a failing launch, so that the caller is waiting for
	// the start when it fails (see TestFastStartFailureIsOneAttempt for
	// what happens when it is not).
	failDelay time.Duration
	// entered receives the launch number as a launch starts.
	entered chan int
	// prepare, when set, tunes every new backend before it is returned.
	prepare func(*fakeBackend)

	launches atomic.Int64

	mu       sync.Mutex
	backends []*fakeBackend
}

func newFakeLauncher(tools ...string) *fakeLauncher {
	l := &fakeLauncher{entered: make(chan int, 256)}
	for _, name := range tools {
		l.tools = append(l.tools, mcpconn.Tool{Name: name, Description: "tool " + name})
	}
	return l
}

func (l *fakeLauncher) Launch(ctx context.Context, spec *config.Server) (provider.Backend, error) {
	n := int(l.launches.Add(1))
	select {
	case l.entered <- n:
	default:
	}
	if l.gate != nil {
		if l.respectCtx {
			select {
			case <-l.gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		} else {
			<-l.gate
		}
	}
	if l.fail != nil {
		if err := l.fail(n); err != nil {
			time.Sleep(l.failDelay)
			return nil, err
		}
	}
	b := newFakeBackend(fmt.Sprintf("%s#%d", spec.ID, n), l.tools)
	if l.prepare != nil {
		l.prepare(b)
	}
	l.mu.Lock()
	l.backends = append(l.backends, b)
	l.mu.Unlock()
	return b, nil
}

// Launches is how many times Launch was called.
func (l *fakeLauncher) Launches() int { return int(l.launches.Load()) }

// backend returns the i-th backend launched successfully (from 0),
// waiting for a launch in progress to return it.
func (l *fakeLauncher) backend(t *testing.T, i int) *fakeBackend {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		n := len(l.backends)
		if i < n {
			b := l.backends[i]
			l.mu.Unlock()
			return b
		}
		l.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("backend %d not launched (have %d)", i, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitEntered waits until a launch has started.
func (l *fakeLauncher) waitEntered(t *testing.T) int {
	t.Helper()
	select {
	case n := <-l.entered:
		return n
	case <-time.After(5 * time.Second):
		t.Fatal("no launch started")
		return 0
	}
}

// fakeClock is a settable clock for Options.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
}

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

// transition is one observed state change.
type transition struct {
	from, to provider.State
}

// recorder implements provider.Events, failing the test on any transition
// CanTransition does not allow.
type recorder struct {
	t *testing.T

	mu      sync.Mutex
	changes []transition
	starts  []error
	exits   []string
	ooms    []bool
	added   []string
	removed []string
	calls   []string // "tool:outcome"
	checks  []error
	// quarantines counts QuarantineChanged by provider.
	quarantines map[string]int
}

func newRecorder(t *testing.T) *recorder { return &recorder{t: t} }

func (r *recorder) StateChanged(id string, from, to provider.State) {
	if from == "" && to == provider.Cold {
		// Manager.Add announces a new provider; not a transition.
		r.mu.Lock()
		r.added = append(r.added, id)
		r.mu.Unlock()
		return
	}
	if !provider.CanTransition(from, to) {
		r.t.Errorf("provider %s: illegal transition %s → %s", id, from, to)
	}
	r.mu.Lock()
	r.changes = append(r.changes, transition{from, to})
	r.mu.Unlock()
}

func (r *recorder) ColdStart(_ string, _ time.Duration, err error) {
	r.mu.Lock()
	r.starts = append(r.starts, err)
	r.mu.Unlock()
}

func (r *recorder) BackendExited(_ string, exit string, oom bool) {
	r.mu.Lock()
	r.exits = append(r.exits, exit)
	r.ooms = append(r.ooms, oom)
	r.mu.Unlock()
}

func (r *recorder) CallDone(_, tool, outcome string, _ time.Duration) {
	r.mu.Lock()
	r.calls = append(r.calls, tool+":"+outcome)
	r.mu.Unlock()
}

func (r *recorder) HealthChecked(_ string, err error) {
	r.mu.Lock()
	r.checks = append(r.checks, err)
	r.mu.Unlock()
}

func (r *recorder) QuarantineChanged(id string) {
	r.mu.Lock()
	if r.quarantines == nil {
		r.quarantines = map[string]int{}
	}
	r.quarantines[id]++
	r.mu.Unlock()
}

func (r *recorder) quarantineChanges(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.quarantines[id]
}

func (r *recorder) Removed(id string) {
	r.mu.Lock()
	r.removed = append(r.removed, id)
	r.mu.Unlock()
}

func (r *recorder) transitions() []transition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]transition(nil), r.changes...)
}

// spec returns a docker server spec for tests.
func spec(id string) *config.Server {
	return &config.Server{
		ID:                     id,
		Mode:                   config.ModeDocker,
		Image:                  "example/" + id,
		MaxConcurrency:         10,
		MaxConsecutiveFailures: 3,
		StartTimeout:           5 * time.Second,
	}
}

// waitState polls until the provider is in want or the deadline passes.
func waitState(t *testing.T, p *provider.Provider, want provider.State) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if p.State() == want {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("state = %s, want %s", p.State(), want)
}

// kindOf returns the wire kind of err and fails the test if err is not a
// *provider.Error.
func kindOf(t *testing.T, err error) string {
	t.Helper()
	var e *provider.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *provider.Error", err, err)
	}
	return e.Kind
}

func TestMain(m *testing.M) {
	// The providers log every start and exit; keep test output readable.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	os.Exit(m.Run())
}
