package provider_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/provider"
)

func TestHealthCheckDegradesThenGoesCold(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	l := newFakeLauncher("echo")
	rec := newRecorder(t)
	s := spec("a")
	s.HealthCheckInterval = 10 * time.Second
	s.MaxConsecutiveFailures = 2
	p := provider.New(s, l, provider.Options{Now: clock.Now, Events: rec, BackoffBase: time.Second, BackoffMax: 8 * time.Second})

	if p.CheckHealth(t.Context()) {
		t.Error("a COLD provider was health-checked")
	}
	if _, err := p.Start(t.Context(), call.Progress{}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	b := l.backend(t, 0)

	steps := []struct {
		advance   time.Duration
		fail      bool
		wantRan   bool
		wantState provider.State
		wantFails int
	}{
		{0, false, false, provider.Ready, 0},                        // not due yet
		{10 * time.Second, false, true, provider.Ready, 0},          // passes
		{9 * time.Second, true, false, provider.Ready, 0},           // not due
		{time.Second, true, true, provider.Ready, 1},                // 1st failure
		{10 * time.Second, true, true, provider.Degraded, 2},        // limit: degraded, backoff 1s
		{500 * time.Millisecond, true, false, provider.Degraded, 2}, // in backoff
		{500 * time.Millisecond, true, true, provider.Cold, 3},      // fails again: cold
	}
	for i, st := range steps {
		clock.Advance(st.advance)
		b.failList.Store(st.fail)
		if got := p.CheckHealth(t.Context()); got != st.wantRan {
			t.Errorf("step %d: CheckHealth ran = %v, want %v", i, got, st.wantRan)
		}
		snap := p.Snapshot()
		if snap.State != st.wantState {
			t.Errorf("step %d: state = %s, want %s", i, snap.State, st.wantState)
		}
		if snap.Health.ConsecutiveFailures != st.wantFails {
			t.Errorf("step %d: consecutive failures = %d, want %d", i, snap.Health.ConsecutiveFailures, st.wantFails)
		}
		if snap.State == provider.Degraded {
			if !strings.HasPrefix(snap.LastError, "provider_unavailable: a (2 health checks failed") {
				t.Errorf("step %d: last error = %q", i, snap.LastError)
			}
			// A degraded provider still serves calls.
			if _, err := p.Call(t.Context(), nil, "echo", nil); err != nil {
				t.Errorf("step %d: call while degraded: %v", i, err)
			}
		}
	}
	if !b.stopped.Load() {
		t.Error("the backend that failed its checks was not stopped")
	}
	if got := p.Snapshot().LastError; !strings.HasPrefix(got, "provider_unavailable: a (health check failed after backoff") {
		t.Errorf("last error = %q", got)
	}
	// The next call starts a fresh backend.
	if _, err := p.Call(t.Context(), nil, "echo", nil); err != nil {
		t.Fatalf("call after going cold: %v", err)
	}
	if got := l.Launches(); got != 2 {
		t.Errorf("launches = %d, want 2", got)
	}
	want := []transition{
		{provider.Cold, provider.Initializing}, {provider.Initializing, provider.Ready},
		{provider.Ready, provider.Degraded}, {provider.Degraded, provider.Cold},
		{provider.Cold, provider.Initializing}, {provider.Initializing, provider.Ready},
	}
	if got := rec.transitions(); !slices.Equal(got, want) {
		t.Errorf("transitions = %v, want %v", got, want)
	}
}

func TestHealthCheckRecoversFromDegraded(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	l := newFakeLauncher("echo")
	rec := newRecorder(t)
	s := spec("a")
	s.HealthCheckInterval = time.Second
	s.MaxConsecutiveFailures = 1
	p := provider.New(s, l, provider.Options{Now: clock.Now, Events: rec, BackoffBase: time.Second})
	if _, err := p.Start(t.Context(), call.Progress{}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	b := l.backend(t, 0)
	b.failList.Store(true)
	clock.Advance(time.Second)
	p.CheckHealth(t.Context())
	if got := p.State(); got != provider.Degraded {
		t.Fatalf("state = %s, want %s", got, provider.Degraded)
	}
	b.failList.Store(false)
	clock.Advance(time.Second)
	if !p.CheckHealth(t.Context()) {
		t.Fatal("no check once the degraded backoff was over")
	}
	snap := p.Snapshot()
	if snap.State != provider.Ready || snap.Health.ConsecutiveFailures != 0 || snap.Health.LastSuccessAt.IsZero() {
		t.Errorf("after recovery: %+v", snap)
	}
	if b.stopped.Load() {
		t.Error("a recovered backend was stopped")
	}
	rec.mu.Lock()
	checks := slices.Clone(rec.checks)
	rec.mu.Unlock()
	if len(checks) != 2 || checks[0] == nil || checks[1] != nil {
		t.Errorf("HealthChecked events = %v, want [error, nil]", checks)
	}
}

func TestStopIfIdle(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	l := newFakeLauncher("echo", "block")
	rec := newRecorder(t)
	s := spec("a")
	s.IdleTTL = time.Minute
	p := provider.New(s, l, provider.Options{Now: clock.Now, Events: rec})

	if p.StopIfIdle(t.Context()) {
		t.Error("a COLD provider was stopped as idle")
	}
	if _, err := p.Call(t.Context(), nil, "echo", nil); err != nil {
		t.Fatalf("Call: %v", err)
	}
	b := l.backend(t, 0)
	clock.Advance(59 * time.Second)
	if p.StopIfIdle(t.Context()) {
		t.Error("stopped before the idle TTL")
	}

	// A call in flight keeps it alive past the TTL.
	errc := make(chan error, 1)
	go func() {
		_, err := p.Call(t.Context(), nil, "block", nil)
		errc <- err
	}()
	b.waitEntered(t, 2) // the echo call above, then this one
	clock.Advance(time.Hour)
	if p.StopIfIdle(t.Context()) {
		t.Error("stopped with a call in flight")
	}
	b.Release()
	if err := <-errc; err != nil {
		t.Fatalf("blocked call: %v", err)
	}

	clock.Advance(time.Minute)
	if !p.StopIfIdle(t.Context()) {
		t.Fatal("not stopped after the idle TTL")
	}
	if got := p.State(); got != provider.Cold {
		t.Errorf("state = %s, want %s", got, provider.Cold)
	}
	if !b.stopped.Load() {
		t.Error("backend not stopped")
	}
	// No crash is recorded for an idle stop.
	time.Sleep(20 * time.Millisecond)
	if snap := p.Snapshot(); snap.State != provider.Cold || snap.LastError != "" {
		t.Errorf("after idle stop: state %s, last error %q", snap.State, snap.LastError)
	}
}

func TestStopIfIdleDisabledWithoutTTL(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	l := newFakeLauncher("echo")
	s := spec("a")
	s.IdleTTL = 0
	p := provider.New(s, l, provider.Options{Now: clock.Now, Events: newRecorder(t)})
	if _, err := p.Call(t.Context(), nil, "echo", nil); err != nil {
		t.Fatalf("Call: %v", err)
	}
	clock.Advance(1000 * time.Hour)
	if p.StopIfIdle(t.Context()) {
		t.Error("stopped although idle_ttl is 0")
	}
}

func TestRecorderSeesCallsAndManagerEvents(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("echo", "fail_tool")
	rec := newRecorder(t)
	m := provider.NewManager(l, provider.Options{Events: rec})
	p := m.Add(spec("a"))
	if _, err := p.Call(t.Context(), nil, "echo", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Call(t.Context(), nil, "fail_tool", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Call(t.Context(), nil, "nope", nil); err != nil {
		t.Fatal(err)
	}
	m.Remove("a")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// nope is no tool the provider lists: its calls count as _OTHER, so
	// names a caller makes up make no series.
	if want := []string{"echo:success", "fail_tool:tool_error", provider.ToolOther + ":success"}; !slices.Equal(rec.calls, want) {
		t.Errorf("CallDone = %v, want %v", rec.calls, want)
	}
	if !slices.Equal(rec.added, []string{"a"}) || !slices.Equal(rec.removed, []string{"a"}) {
		t.Errorf("added %v removed %v", rec.added, rec.removed)
	}
}

// TestRemovedProviderReportsNothing: a provider the manager removed
// reports nothing more, its stop included; the metrics, which drop a
// removed provider's series, would make them again (the soak found a
// "cold" state series for every server it had unloaded).
func TestRemovedProviderReportsNothing(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("echo")
	rec := newRecorder(t)
	m := provider.NewManager(l, provider.Options{Events: rec})
	p := m.Add(spec("a"))
	if _, err := p.Call(t.Context(), nil, "echo", nil); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	before := len(rec.changes)
	rec.mu.Unlock()
	if before == 0 {
		t.Fatal("no transition reported before the removal")
	}
	m.Remove("a")
	if err := p.Stop(t.Context(), "unloaded", false); err != nil {
		t.Fatal(err)
	}
	if p.State() != provider.Cold {
		t.Fatalf("state after the stop: %s", p.State())
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if after := rec.changes[before:]; len(after) != 0 {
		t.Errorf("transitions reported after the removal: %v", after)
	}
	if !slices.Equal(rec.removed, []string{"a"}) {
		t.Errorf("removed %v", rec.removed)
	}
}

// TestStopIfUnwanted: a backend started for one purpose (a catalog
// prefetch) is stopped afterwards only if nobody else asked for the
// provider meanwhile; a warm or a call keeps it.
func TestStopIfUnwanted(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("echo")
	p := provider.New(spec("a"), l, provider.Options{})

	mark := p.Demand() + 1
	if _, err := p.Start(t.Context(), call.Progress{}); err != nil {
		t.Fatal(err)
	}
	if !p.StopIfUnwanted(t.Context(), "catalog_prefetched", mark) || p.State() != provider.Cold {
		t.Fatalf("nobody else asked: state %s, want stopped (cold)", p.State())
	}

	for name, other := range map[string]func() error{
		"warm": func() error { _, err := p.Start(t.Context(), call.Progress{}); return err },
		"call": func() error { _, err := p.Call(t.Context(), nil, "echo", nil); return err },
	} {
		mark := p.Demand() + 1
		if _, err := p.Start(t.Context(), call.Progress{}); err != nil {
			t.Fatal(err)
		}
		if err := other(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.StopIfUnwanted(t.Context(), "catalog_prefetched", mark) || p.State() != provider.Ready {
			t.Errorf("after a %s: stopped (state %s), want it kept ready", name, p.State())
		}
		if err := p.Stop(t.Context(), "test", false); err != nil {
			t.Fatal(err)
		}
	}
}
