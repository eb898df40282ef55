package provider_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
)

func toolNames(tools []mcpconn.Tool) []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return names
}

func TestColdCallsShareOneStart(t *testing.T) {
	t.Parallel()
	const n = 50
	l := newFakeLauncher("echo")
	l.gate = make(chan struct{})
	rec := newRecorder(t)
	s := spec("a")
	s.MaxConcurrency = n
	p := provider.New(s, l, provider.Options{Events: rec})

	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = p.Call(t.Context(), nil, "echo", map[string]any{"i": i})
		})
	}
	l.waitEntered(t)
	time.Sleep(20 * time.Millisecond) // let the other callers pile up behind the start
	if got := p.State(); got != provider.Initializing {
		t.Errorf("state while launching = %s, want %s", got, provider.Initializing)
	}
	close(l.gate)
	wg.Wait()

	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if got := l.Launches(); got != 1 {
		t.Errorf("launches = %d, want 1", got)
	}
	if got := l.backend(t, 0).calls.Load(); got != n {
		t.Errorf("backend calls = %d, want %d", got, n)
	}
	if got := p.State(); got != provider.Ready {
		t.Errorf("state = %s, want %s", got, provider.Ready)
	}
	want := []transition{{provider.Cold, provider.Initializing}, {provider.Initializing, provider.Ready}}
	if got := rec.transitions(); !slices.Equal(got, want) {
		t.Errorf("transitions = %v, want %v", got, want)
	}
}

func TestCallerTimeoutDuringStartDoesNotAbortStart(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("echo")
	l.gate = make(chan struct{})
	l.respectCtx = true // the start's own context must not be the caller's
	p := provider.New(spec("a"), l, provider.Options{Events: newRecorder(t)})

	short, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	shortErr := make(chan error, 1)
	go func() {
		_, err := p.Call(short, nil, "echo", nil)
		shortErr <- err
	}()
	l.waitEntered(t)

	longErr := make(chan error, 1)
	go func() {
		_, err := p.Call(t.Context(), nil, "echo", nil)
		longErr <- err
	}()

	err := <-shortErr
	if err == nil {
		t.Fatal("short call succeeded while the start was blocked")
	}
	if got := kindOf(t, err); got != provider.KindTimeout {
		t.Errorf("short call kind = %q, want %q (err %v)", got, provider.KindTimeout, err)
	}
	if !strings.HasPrefix(err.Error(), "call_timeout: a (") {
		t.Errorf("short call error = %q, want prefix %q", err, "call_timeout: a (")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("short call error %v does not wrap context.DeadlineExceeded", err)
	}
	if got := p.State(); got != provider.Initializing {
		t.Errorf("state after the short caller gave up = %s, want %s", got, provider.Initializing)
	}

	close(l.gate)
	if err := <-longErr; err != nil {
		t.Errorf("long call: %v", err)
	}
	if got := l.Launches(); got != 1 {
		t.Errorf("launches = %d, want 1", got)
	}
	if got := p.State(); got != provider.Ready {
		t.Errorf("state = %s, want %s", got, provider.Ready)
	}
}

func TestStartFailureBackoff(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	l := newFakeLauncher("echo")
	failures := 4
	l.failDelay = 20 * time.Millisecond
	l.fail = func(n int) error {
		if n <= failures {
			return errors.New("image missing")
		}
		return nil
	}
	rec := newRecorder(t)
	s := spec("a")
	s.MaxConsecutiveFailures = 10
	p := provider.New(s, l, provider.Options{
		Now: clock.Now, Events: rec, BackoffBase: time.Second, BackoffMax: 4 * time.Second,
	})

	// base doubling, capped at max
	backoffs := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}
	for i, backoff := range backoffs {
		attempt := i + 1
		_, err := p.Call(t.Context(), nil, "echo", nil)
		if err == nil {
			t.Fatalf("attempt %d: call succeeded, want a start failure", attempt)
		}
		if got := l.Launches(); got != attempt {
			t.Fatalf("attempt %d: launches = %d, want %d", attempt, got, attempt)
		}
		if !strings.Contains(err.Error(), "start_failed: a (image missing)") {
			t.Errorf("attempt %d: error %q does not carry %q", attempt, err, "start_failed: a (image missing)")
		}
		if got := p.State(); got != provider.Dead {
			t.Errorf("attempt %d: state = %s, want %s", attempt, got, provider.Dead)
		}
		if got := p.Snapshot().LastError; got != "start_failed: a (image missing)" {
			t.Errorf("attempt %d: last error = %q", attempt, got)
		}

		// Inside the backoff: refused without a launch.
		if got, want := p.Snapshot().RetryAt, clock.Now().Add(backoff); !got.Equal(want) {
			t.Errorf("attempt %d: snapshot retry at %v, want %v", attempt, got, want)
		}
		retryAt := clock.Now().Add(backoff).UTC().Format(time.RFC3339)
		_, err = p.Call(t.Context(), nil, "echo", nil)
		if got := kindOf(t, err); got != provider.KindUnavailable {
			t.Errorf("attempt %d: call in backoff kind = %q, want %q", attempt, got, provider.KindUnavailable)
		}
		if !strings.HasPrefix(err.Error(), "provider_unavailable: a (restart backoff until "+retryAt) {
			t.Errorf("attempt %d: call in backoff error = %q, want retry at %s", attempt, err, retryAt)
		}
		var inner *provider.Error
		if e := (*provider.Error)(nil); errors.As(err, &e) && e.Err != nil && errors.As(e.Err, &inner) {
			if inner.Kind != provider.KindStartFailed {
				t.Errorf("attempt %d: wrapped kind = %q, want %q", attempt, inner.Kind, provider.KindStartFailed)
			}
		} else {
			t.Errorf("attempt %d: unavailable error does not wrap the start failure", attempt)
		}
		clock.Advance(backoff - time.Millisecond)
		if _, err := p.Call(t.Context(), nil, "echo", nil); kindOf(t, err) != provider.KindUnavailable {
			t.Errorf("attempt %d: call 1ms before retryAt: %v", attempt, err)
		}
		if got := l.Launches(); got != attempt {
			t.Fatalf("attempt %d: launched during backoff (launches = %d)", attempt, got)
		}
		clock.Advance(time.Millisecond) // now == retryAt: eligible again
	}

	if _, err := p.Call(t.Context(), nil, "echo", nil); err != nil {
		t.Fatalf("call after the backoff: %v", err)
	}
	if got := l.Launches(); got != failures+1 {
		t.Errorf("launches = %d, want %d", got, failures+1)
	}
	snap := p.Snapshot()
	if snap.State != provider.Ready || snap.LastError != "" || !snap.RetryAt.IsZero() {
		t.Errorf("after recovery: state %s, last error %q, retry at %v", snap.State, snap.LastError, snap.RetryAt)
	}
}

func TestMaxConsecutiveFailuresRefusesAutomaticRestart(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	l := newFakeLauncher("echo")
	l.failDelay = 20 * time.Millisecond
	l.fail = func(n int) error {
		if n <= 2 {
			return errors.New("boom")
		}
		return nil
	}
	s := spec("a")
	s.MaxConsecutiveFailures = 2
	p := provider.New(s, l, provider.Options{Now: clock.Now, Events: newRecorder(t), BackoffBase: time.Second})

	for i := range 2 {
		if _, err := p.Call(t.Context(), nil, "echo", nil); err == nil {
			t.Fatalf("call %d succeeded", i)
		}
		clock.Advance(time.Hour)
	}
	_, err := p.Call(t.Context(), nil, "echo", nil)
	if got := kindOf(t, err); got != provider.KindUnavailable {
		t.Fatalf("kind = %q, want %q (err %v)", got, provider.KindUnavailable, err)
	}
	if !strings.Contains(err.Error(), "failed 2 starts in a row") {
		t.Errorf("error %q does not say why the restart is refused", err)
	}
	if got := l.Launches(); got != 2 {
		t.Errorf("launches = %d, want 2 (no automatic restart past the limit)", got)
	}
	if _, err := p.ToolsOrStart(t.Context(), call.Progress{}); kindOf(t, err) != provider.KindUnavailable {
		t.Errorf("ToolsOrStart past the limit: %v", err)
	}

	tools, err := p.Start(t.Context(), call.Progress{}) // force
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if got := toolNames(tools); !slices.Equal(got, []string{"echo"}) {
		t.Errorf("Start tools = %v", got)
	}
	if got := l.Launches(); got != 3 {
		t.Errorf("launches = %d, want 3", got)
	}
	if _, err := p.Call(t.Context(), nil, "echo", nil); err != nil {
		t.Errorf("call after forced start: %v", err)
	}
}

// TestStartReportsItsStartFailure: hangar_start on a provider whose start
// fails makes one attempt and reports start_failed (not another start, and
// not call_timeout once the caller's context ends).
func TestStartReportsItsStartFailure(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("echo")
	l.gate = make(chan struct{})
	l.fail = func(int) error { return errors.New("image missing") }
	p := provider.New(spec("a"), l, provider.Options{Events: newRecorder(t)})

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := p.Start(ctx, call.Progress{})
		errc <- err
	}()
	l.waitEntered(t)
	time.Sleep(20 * time.Millisecond) // Start is waiting for the attempt
	close(l.gate)
	err := <-errc
	if err == nil {
		t.Fatal("Start succeeded")
	}
	var e *provider.Error
	if !errors.As(err, &e) || e.Kind != provider.KindStartFailed {
		t.Errorf("Start error = %q, want kind %q", err, provider.KindStartFailed)
	}
	if want := "start_failed: a (image missing)"; err.Error() != want {
		t.Errorf("Start error = %q, want %q", err, want)
	}
	if got := l.Launches(); got != 1 {
		t.Errorf("launches = %d, want 1 (one attempt per Start)", got)
	}
	if got := p.State(); got != provider.Dead {
		t.Errorf("state = %s, want %s", got, provider.Dead)
	}
}

func TestCrashDuringCall(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("echo", "block")
	rec := newRecorder(t)
	p := provider.New(spec("a"), l, provider.Options{Events: rec})

	errc := make(chan error, 1)
	go func() {
		_, err := p.Call(t.Context(), nil, "block", nil)
		errc <- err
	}()
	l.waitEntered(t)
	b := l.backend(t, 0)
	b.waitEntered(t, 1)
	b.Crash("exit 137, oom")

	err := <-errc
	if err == nil {
		t.Fatal("call on a crashed backend succeeded")
	}
	if got, want := err.Error(), "provider_crashed: a (exit 137, oom)"; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
	if got := kindOf(t, err); got != provider.KindCrashed {
		t.Errorf("kind = %q", got)
	}
	if !errors.Is(err, errTransportClosed) {
		t.Errorf("error %v does not wrap the transport error", err)
	}
	waitState(t, p, provider.Dead)
	snap := p.Snapshot()
	if snap.Alive {
		t.Error("snapshot alive after the crash")
	}
	if snap.LastError != "provider_crashed: a (exit 137, oom)" {
		t.Errorf("last error = %q", snap.LastError)
	}
	if snap.Health.ConsecutiveFailures != 1 || snap.Health.TotalFailures != 1 {
		t.Errorf("health = %+v", snap.Health)
	}
	// BackendExited is sent just after the state change.
	var exits []string
	var ooms []bool
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		rec.mu.Lock()
		exits, ooms = slices.Clone(rec.exits), slices.Clone(rec.ooms)
		rec.mu.Unlock()
		if len(exits) > 0 {
			break
		}
	}
	if !slices.Equal(exits, []string{"exit 137, oom"}) || !slices.Equal(ooms, []bool{true}) {
		t.Errorf("BackendExited events = %v %v", exits, ooms)
	}

	// The first crash restarts at once.
	if _, err := p.Call(t.Context(), nil, "echo", nil); err != nil {
		t.Fatalf("call after the crash: %v", err)
	}
	if got := l.Launches(); got != 2 {
		t.Errorf("launches = %d, want 2", got)
	}
	if got := l.backend(t, 1).calls.Load(); got != 1 {
		t.Errorf("new backend calls = %d, want 1", got)
	}
	want := []transition{
		{provider.Cold, provider.Initializing}, {provider.Initializing, provider.Ready},
		{provider.Ready, provider.Dead},
		{provider.Dead, provider.Initializing}, {provider.Initializing, provider.Ready},
	}
	if got := rec.transitions(); !slices.Equal(got, want) {
		t.Errorf("transitions = %v, want %v", got, want)
	}
}

// TestCrashedCallLeavesReadyBeforeReturning: once a call has come back with
// provider_crashed (classify has seen Done closed), the provider must not
// still be READY with the dead backend, or the next call (a retry) is sent
// to the dead backend and fails with provider_crashed again. The provider
// leaves READY only in the supervise goroutine, which may run later; here
// its read of the dead backend's stderr is slow, which makes the window
// deterministic.
func TestCrashedCallLeavesReadyBeforeReturning(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("echo", "block")
	stderrGate := make(chan struct{})
	var once sync.Once
	l.prepare = func(b *fakeBackend) {
		once.Do(func() { b.stderrGate = stderrGate })
	}
	p := provider.New(spec("a"), l, provider.Options{Events: newRecorder(t)})
	defer close(stderrGate)

	errc := make(chan error, 1)
	go func() {
		_, err := p.Call(t.Context(), nil, "block", nil)
		errc <- err
	}()
	l.waitEntered(t)
	b := l.backend(t, 0)
	b.waitEntered(t, 1)
	b.Crash("exit 1")
	if err := <-errc; kindOf(t, err) != provider.KindCrashed {
		t.Fatalf("call error = %v, want provider_crashed", err)
	}

	if got := p.State(); got == provider.Ready {
		t.Errorf("state = %s right after a call reported provider_crashed", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if _, err := p.Call(ctx, nil, "echo", nil); err != nil {
		t.Errorf("next call after the crash: %v (launches %d)", err, l.Launches())
	}
}

func TestStopDuringCall(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("echo", "block")
	rec := newRecorder(t)
	p := provider.New(spec("a"), l, provider.Options{Events: rec})

	errc := make(chan error, 1)
	go func() {
		_, err := p.Call(t.Context(), nil, "block", nil)
		errc <- err
	}()
	l.waitEntered(t)
	b := l.backend(t, 0)
	b.waitEntered(t, 1)

	if err := p.Stop(t.Context(), "manual_stop", false); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	err := <-errc
	if err == nil {
		t.Fatal("call survived Stop")
	}
	if got, want := err.Error(), "provider_stopped: a (manual_stop)"; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
	if got := p.State(); got != provider.Cold {
		t.Errorf("state = %s, want %s", got, provider.Cold)
	}
	if !b.stopped.Load() {
		t.Error("backend not stopped")
	}
	snap := p.Snapshot()
	if snap.Alive || snap.ContainerID != "" {
		t.Errorf("snapshot after stop: alive %v container %q", snap.Alive, snap.ContainerID)
	}
	if snap.Health.ConsecutiveFailures != 0 {
		t.Errorf("a manual stop counted as a failure: %+v", snap.Health)
	}
	// No crash bookkeeping for a stop on purpose.
	time.Sleep(20 * time.Millisecond)
	if got := p.State(); got != provider.Cold {
		t.Errorf("state after the backend ended = %s, want %s", got, provider.Cold)
	}
	if _, err := p.Call(t.Context(), nil, "echo", nil); err != nil {
		t.Errorf("call after stop: %v", err)
	}
	if got := l.Launches(); got != 2 {
		t.Errorf("launches = %d, want 2", got)
	}
}

func TestGracefulStopWaitsForCalls(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("block")
	p := provider.New(spec("a"), l, provider.Options{Events: newRecorder(t)})

	callErr := make(chan error, 1)
	go func() {
		_, err := p.Call(t.Context(), nil, "block", nil)
		callErr <- err
	}()
	l.waitEntered(t)
	b := l.backend(t, 0)
	b.waitEntered(t, 1)
	if got := p.Snapshot().Inflight; got != 1 {
		t.Errorf("in flight = %d, want 1", got)
	}

	stopped := make(chan error, 1)
	go func() { stopped <- p.Stop(t.Context(), "idle", true) }()
	select {
	case err := <-stopped:
		t.Fatalf("graceful Stop returned (%v) with a call in flight", err)
	case <-time.After(60 * time.Millisecond):
	}
	b.Release()
	if err := <-callErr; err != nil {
		t.Errorf("call during graceful stop: %v", err)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Stop: %v", err)
	}
	if got := p.State(); got != provider.Cold {
		t.Errorf("state = %s, want %s", got, provider.Cold)
	}
}

func TestStopWaitsForStartInProgress(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("echo")
	l.gate = make(chan struct{})
	rec := newRecorder(t)
	p := provider.New(spec("a"), l, provider.Options{Events: rec})

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Call(ctx, nil, "echo", nil); kindOf(t, err) != provider.KindTimeout {
		t.Fatalf("call during a blocked start: %v", err)
	}

	stopped := make(chan error, 1)
	go func() { stopped <- p.Stop(t.Context(), "manual_stop", false) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while the start was in progress", err)
	case <-time.After(30 * time.Millisecond):
	}
	close(l.gate)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if got := p.State(); got != provider.Cold {
		t.Errorf("state = %s, want %s", got, provider.Cold)
	}
	if !l.backend(t, 0).stopped.Load() {
		t.Error("the backend started under Stop was not stopped")
	}
}

func TestStopColdIsNoop(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("echo")
	rec := newRecorder(t)
	p := provider.New(spec("a"), l, provider.Options{Events: rec})
	if err := p.Stop(t.Context(), "manual_stop", false); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if got := p.State(); got != provider.Cold {
		t.Errorf("state = %s", got)
	}
	if got := rec.transitions(); len(got) != 0 {
		t.Errorf("transitions = %v, want none", got)
	}
}

// TestRetireDuringStartDoesNotStrandState: when the provider is retired
// while a start is in progress (Retire's Stop gave up on its context) and
// the launch then succeeds, start stops the orphan backend but returns
// without leaving INITIALIZING. The provider is then stuck in INITIALIZING
// with p.starting already closed, so Ensure spins on it.
func TestRetireDuringStartDoesNotStrandState(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("echo")
	l.gate = make(chan struct{}) // the launch does not notice ctx ending
	p := provider.New(spec("a"), l, provider.Options{Events: newRecorder(t)})

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if _, err := p.Call(ctx, nil, "echo", nil); kindOf(t, err) != provider.KindTimeout {
		t.Fatalf("call during a blocked start: %v", err)
	}
	rctx, rcancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer rcancel()
	if err := p.Retire(rctx, "removed", false); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Retire = %v, want a deadline error", err)
	}
	close(l.gate)

	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		launched := len(l.backends) == 1 && l.backends[0].stopped.Load()
		l.mu.Unlock()
		if launched {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the backend started after Retire was not stopped")
		}
		time.Sleep(2 * time.Millisecond)
	}
	deadline = time.Now().Add(time.Second)
	for p.State() == provider.Initializing && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := p.State(); got == provider.Initializing {
		t.Errorf("state = %s after the start ended; want %s or %s", got, provider.Cold, provider.Dead)
	}
}

func TestPerProviderConcurrencyLimit(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("echo", "block")
	s := spec("a")
	s.MaxConcurrency = 1
	p := provider.New(s, l, provider.Options{Events: newRecorder(t)})

	first := make(chan error, 1)
	go func() {
		_, err := p.Call(t.Context(), nil, "block", nil)
		first <- err
	}()
	l.waitEntered(t)
	b := l.backend(t, 0)
	b.waitEntered(t, 1)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	_, err := p.Call(ctx, nil, "echo", nil)
	if got := kindOf(t, err); got != provider.KindBusy {
		t.Fatalf("kind = %q, want %q (err %v)", got, provider.KindBusy, err)
	}
	if !strings.HasPrefix(err.Error(), "provider_busy: a (max_concurrency 1 ") {
		t.Errorf("error = %q", err)
	}
	if got := b.calls.Load(); got != 1 {
		t.Errorf("backend calls = %d: the busy call reached the backend", got)
	}

	b.Release()
	if err := <-first; err != nil {
		t.Errorf("blocked call: %v", err)
	}
	ctx2, cancel2 := context.WithTimeout(t.Context(), time.Second)
	defer cancel2()
	if _, err := p.Call(ctx2, nil, "echo", nil); err != nil {
		t.Errorf("call after the slot freed: %v", err)
	}
}

func TestGlobalConcurrencyLimit(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("echo", "block")
	global := provider.NewLimiter(1)
	m := provider.NewManager(l, provider.Options{Global: global, Events: newRecorder(t)})
	sa, sb := spec("a"), spec("b")
	sb.MaxConcurrency = 1
	pa, pb := m.Add(sa), m.Add(sb)

	first := make(chan error, 1)
	go func() {
		_, err := pa.Call(t.Context(), nil, "block", nil)
		first <- err
	}()
	l.waitEntered(t)
	ba := l.backend(t, 0)
	ba.waitEntered(t, 1)
	if got := global.InUse(); got != 1 {
		t.Errorf("global in use = %d, want 1", got)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	_, err := pb.Call(ctx, nil, "echo", nil)
	if got := kindOf(t, err); got != provider.KindBusy {
		t.Fatalf("kind = %q, want %q (err %v)", got, provider.KindBusy, err)
	}
	if !strings.HasPrefix(err.Error(), "provider_busy: b (execution.max_concurrency 1 ") {
		t.Errorf("error = %q", err)
	}
	if got := l.Launches(); got != 1 {
		t.Errorf("launches = %d: b started although it never got a slot", got)
	}

	ba.Release()
	if err := <-first; err != nil {
		t.Errorf("blocked call: %v", err)
	}
	// b's own slot (limit 1) was given back when the global one was not
	// available.
	ctx2, cancel2 := context.WithTimeout(t.Context(), time.Second)
	defer cancel2()
	if _, err := pb.Call(ctx2, nil, "echo", nil); err != nil {
		t.Errorf("call on b after the global slot freed: %v", err)
	}
	if got := global.InUse(); got != 0 {
		t.Errorf("global in use = %d after all calls, want 0", got)
	}
}

func TestToolPolicyOnCallsAndTools(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("read_file", "read_secret_key", "write_file", "list1", "list12")
	s := spec("a")
	s.Tools = config.Tools{AllowList: []string{"read_*", "list?"}, DenyList: []string{"read_secret*"}}
	p := provider.New(s, l, provider.Options{Events: newRecorder(t)})

	tests := []struct {
		tool    string
		allowed bool
	}{
		{"read_file", true},
		{"list1", true},
		{"write_file", false},
		{"read_secret_key", false},
		{"list12", false},
		{"", false},
	}
	for _, tt := range tests {
		_, err := p.Call(t.Context(), nil, tt.tool, nil)
		if tt.allowed {
			if err != nil {
				t.Errorf("Call(%q): %v", tt.tool, err)
			}
			continue
		}
		if got := kindOf(t, err); got != provider.KindToolNotAllowed {
			t.Errorf("Call(%q) kind = %q, want %q", tt.tool, got, provider.KindToolNotAllowed)
		}
		if want := "tool_not_allowed: a." + tt.tool + " (blocked by the tool access policy)"; err.Error() != want {
			t.Errorf("Call(%q) error = %q, want %q", tt.tool, err, want)
		}
	}
	if got := toolNames(p.Tools()); !slices.Equal(got, []string{"read_file", "list1"}) {
		t.Errorf("Tools() = %v", got)
	}
	if got := p.FilteredCount(); got != 3 {
		t.Errorf("FilteredCount = %d, want 3", got)
	}
	if got := p.Policy().Type(); got != "allow_and_deny" {
		t.Errorf("policy type = %q", got)
	}
	if got := l.backend(t, 0).calls.Load(); got != 2 {
		t.Errorf("backend calls = %d, want 2 (blocked calls must not reach it)", got)
	}
}

func TestBlockedToolDoesNotStartProvider(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("x")
	s := spec("a")
	s.Tools = config.Tools{DenyList: []string{"*"}}
	p := provider.New(s, l, provider.Options{Events: newRecorder(t)})
	if _, err := p.Call(t.Context(), nil, "x", nil); kindOf(t, err) != provider.KindToolNotAllowed {
		t.Fatalf("Call: %v", err)
	}
	if got := l.Launches(); got != 0 {
		t.Errorf("launches = %d, want 0", got)
	}
	if got := p.State(); got != provider.Cold {
		t.Errorf("state = %s", got)
	}
}

func TestPredefinedToolsWithoutStart(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("live")
	s := spec("a")
	s.Tools = config.Tools{
		DenyList: []string{"hidden"},
		Predefined: []config.ToolDef{
			{Name: "alpha", Description: "A", InputSchema: []byte(`{"type":"object","properties":{"x":{"type":"string"}}}`)},
			{Name: "beta"},
			{Name: "hidden"},
		},
	}
	p := provider.New(s, l, provider.Options{Events: newRecorder(t)})
	if !p.Predefined() {
		t.Fatal("Predefined() = false")
	}
	tools, err := p.ToolsOrStart(t.Context(), call.Progress{})
	if err != nil {
		t.Fatalf("ToolsOrStart: %v", err)
	}
	if got := toolNames(tools); !slices.Equal(got, []string{"alpha", "beta"}) {
		t.Errorf("tools = %v", got)
	}
	if string(tools[0].InputSchema) != `{"type":"object","properties":{"x":{"type":"string"}}}` || tools[0].Description != "A" {
		t.Errorf("alpha = %+v", tools[0])
	}
	if got := l.Launches(); got != 0 {
		t.Errorf("launches = %d, want 0", got)
	}
	if got := p.FilteredCount(); got != 1 {
		t.Errorf("FilteredCount = %d, want 1", got)
	}
	snap := p.Snapshot()
	if snap.State != provider.Cold || snap.ToolsCount != 2 || snap.Alive {
		t.Errorf("snapshot = %+v", snap)
	}
}

func TestToolsOrStartStartsColdProvider(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("one", "two")
	p := provider.New(spec("a"), l, provider.Options{Events: newRecorder(t)})
	if got := p.Tools(); len(got) != 0 {
		t.Errorf("cold Tools() = %v, want none", got)
	}
	tools, err := p.ToolsOrStart(t.Context(), call.Progress{})
	if err != nil {
		t.Fatalf("ToolsOrStart: %v", err)
	}
	if got := toolNames(tools); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("tools = %v", got)
	}
	if got := l.Launches(); got != 1 {
		t.Errorf("launches = %d", got)
	}
}

func TestCallErrorsAndHealth(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("echo", "block", "fail_tool")
	p := provider.New(spec("a"), l, provider.Options{Events: newRecorder(t)})

	res, err := p.Call(t.Context(), nil, "echo", map[string]any{"k": "v"})
	if err != nil || res == nil || res.IsError {
		t.Fatalf("echo: %v %+v", err, res)
	}
	// A tool-level error is a result, not a call failure.
	res, err = p.Call(t.Context(), nil, "fail_tool", nil)
	if err != nil || res == nil || !res.IsError {
		t.Fatalf("fail_tool: %v %+v", err, res)
	}
	// No answer before the caller's deadline, backend alive: call_timeout.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, err = p.Call(ctx, nil, "block", nil)
	if got := kindOf(t, err); got != provider.KindTimeout {
		t.Errorf("blocked call kind = %q (err %v)", got, err)
	}
	if want := "call_timeout: a (no answer before the call timeout)"; err.Error() != want {
		t.Errorf("blocked call error = %q, want %q", err, want)
	}

	snap := p.Snapshot()
	if snap.Health.TotalInvocations != 3 || snap.Health.TotalFailures != 1 {
		t.Errorf("health = %+v, want 3 invocations, 1 failure", snap.Health)
	}
	if !snap.Alive || snap.State != provider.Ready || snap.Inflight != 0 {
		t.Errorf("snapshot = %+v", snap)
	}
	if snap.ContainerID != "ctr-a#1" || snap.Mode != config.ModeDocker || snap.ID != "a" {
		t.Errorf("snapshot identity = %q %q %q", snap.ContainerID, snap.Mode, snap.ID)
	}
	if snap.LastUsed.IsZero() || snap.StartedAt.IsZero() {
		t.Errorf("snapshot times unset: %+v", snap)
	}
}

func TestCallFailedWhenBackendStaysUp(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("error_tool")
	p := provider.New(spec("a"), l, provider.Options{Events: newRecorder(t)})
	if _, err := p.Start(t.Context(), call.Progress{}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	began := time.Now()
	_, err := p.Call(t.Context(), nil, "error_tool", nil)
	if got := kindOf(t, err); got != provider.KindCallFailed {
		t.Fatalf("kind = %q (err %v)", got, err)
	}
	if want := "call_failed: a (bad json-rpc frame)"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	// classify waits a moment to learn whether the backend died.
	if d := time.Since(began); d < 400*time.Millisecond {
		t.Errorf("call_failed after %v; expected the crash wait first", d)
	}
	if got := p.State(); got != provider.Ready {
		t.Errorf("state = %s, want %s", got, provider.Ready)
	}
}

func TestManager(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("echo")
	m := provider.NewManager(l, provider.Options{Events: newRecorder(t)})
	for _, id := range []string{"zeta", "alpha", "mid"} {
		m.Add(spec(id))
	}
	if got := m.IDs(); !slices.Equal(got, []string{"alpha", "mid", "zeta"}) {
		t.Errorf("IDs = %v", got)
	}
	p, ok := m.Get("mid")
	if !ok || p.ID() != "mid" || p.Spec().ID != "mid" {
		t.Fatalf("Get(mid) = %v %v", p, ok)
	}
	if _, ok := m.Get("nope"); ok {
		t.Error("Get(nope) found something")
	}
	if _, err := p.Call(t.Context(), nil, "echo", nil); err != nil {
		t.Fatalf("Call: %v", err)
	}
	if !m.Tracks("ctr-mid#1") {
		t.Error("Tracks(ctr-mid#1) = false")
	}
	if m.Tracks("ctr-other") {
		t.Error("Tracks(ctr-other) = true")
	}
	removed, ok := m.Remove("alpha")
	if !ok || removed.ID() != "alpha" {
		t.Errorf("Remove(alpha) = %v %v", removed, ok)
	}
	if _, ok := m.Remove("alpha"); ok {
		t.Error("second Remove(alpha) reported success")
	}
	if got := m.IDs(); !slices.Equal(got, []string{"mid", "zeta"}) {
		t.Errorf("IDs after remove = %v", got)
	}
	if err := m.StopAll(t.Context(), "shutdown"); err != nil {
		t.Fatalf("StopAll: %v", err)
	}
	for _, p := range m.List() {
		if got := p.State(); got != provider.Cold {
			t.Errorf("%s state after StopAll = %s", p.ID(), got)
		}
	}
	if !l.backend(t, 0).stopped.Load() {
		t.Error("StopAll did not stop the running backend")
	}
}

func TestSpecCallTimeout(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("echo", "block")
	s := spec("a")
	s.CallTimeout = 30 * time.Millisecond
	p := provider.New(s, l, provider.Options{Events: newRecorder(t)})
	began := time.Now()
	_, err := p.Call(t.Context(), nil, "block", nil)
	if got := kindOf(t, err); got != provider.KindTimeout {
		t.Fatalf("kind = %q (err %v)", got, err)
	}
	if want := "call_timeout: a (no answer before the call timeout)"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("call_timeout_s of 30ms took %v", d)
	}
	if _, err := p.Call(t.Context(), nil, "echo", nil); err != nil {
		t.Errorf("a quick call: %v", err)
	}
	if got := p.State(); got != provider.Ready {
		t.Errorf("state = %s, want %s", got, provider.Ready)
	}
}

func TestWaitersOfFailedStartGetItsError(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher("echo")
	l.gate = make(chan struct{})
	l.fail = func(int) error { return errors.New("no such image") }
	p := provider.New(spec("a"), l, provider.Options{Events: newRecorder(t)})

	const n = 5
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := p.Call(t.Context(), nil, "echo", nil)
			errs <- err
		}()
	}
	l.waitEntered(t)
	time.Sleep(20 * time.Millisecond)
	close(l.gate)
	for range n {
		err := <-errs
		if got := kindOf(t, err); got != provider.KindStartFailed {
			t.Errorf("kind = %q, want %q (err %v)", got, provider.KindStartFailed, err)
		}
		if want := "start_failed: a (no such image)"; err.Error() != want {
			t.Errorf("error = %q, want %q", err, want)
		}
	}
	if got := l.Launches(); got != 1 {
		t.Errorf("launches = %d, want 1", got)
	}
}

// TestFastStartFailureIsOneAttempt: when a launch fails at once, the start
// goroutine can set DEAD before Ensure takes the lock again after
// "go p.start(ch)". Ensure then meets DEAD at the top of its loop, not
// after waiting in INITIALIZING, so the "the start this caller waited for
// failed" answer is skipped: with force (hangar_start, hangar_warm) it
// launches again, and again, for as long as it keeps losing that race;
// without force it answers provider_unavailable (backoff) instead of the
// start_failed of its own attempt. Each round here is a fresh provider
// whose launch fails immediately; every round must launch once and report
// start_failed. The race needs more than one CPU to show.
//
// The relaunch also shows a data race in start: after p.mu.Unlock() the
// failed attempt reads p.startFailures for its log line while the next
// attempt increments it under the lock. Not parallel, so that -race report
// is attributed to this test only.
func TestFastStartFailureIsOneAttempt(t *testing.T) {
	const rounds = 3000
	var extraLaunches, wrongKind int
	for i := range rounds {
		l := newFakeLauncher("echo")
		l.fail = func(int) error { return errors.New("no such image") }
		p := provider.New(spec("a"), l, provider.Options{Events: newRecorder(t)})
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		var err error
		if i%2 == 0 {
			_, err = p.Start(ctx, call.Progress{})
		} else {
			_, err = p.Call(ctx, nil, "echo", nil)
		}
		cancel()
		if n := l.Launches(); n != 1 {
			extraLaunches++
		}
		if provider.KindOf(err) != provider.KindStartFailed {
			wrongKind++
			if wrongKind == 1 {
				t.Logf("round %d: %v", i, err)
			}
		}
	}
	if extraLaunches > 0 || wrongKind > 0 {
		t.Errorf("%d of %d rounds launched more than once, %d did not report start_failed", extraLaunches, rounds, wrongKind)
	}
}

// TestEngineBackForgivesFailuresWhileAway: starts that failed while the
// engine was out of reach leave the provider refused past its limit; once
// the engine is back the next call starts it at once.
func TestEngineBackForgivesFailuresWhileAway(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	l := newFakeLauncher("echo")
	away := true
	var mu sync.Mutex
	l.fail = func(int) error {
		mu.Lock()
		defer mu.Unlock()
		if away {
			return errors.New("cannot connect to the Docker daemon")
		}
		return nil
	}
	s := spec("a")
	s.MaxConsecutiveFailures = 2
	p := provider.New(s, l, provider.Options{Now: clock.Now, Events: newRecorder(t), BackoffBase: time.Minute})
	for range 2 {
		_, _ = p.Call(t.Context(), nil, "echo", nil)
		clock.Advance(time.Hour)
	}
	if _, err := p.Call(t.Context(), nil, "echo", nil); kindOf(t, err) != provider.KindUnavailable {
		t.Fatalf("past the limit while the engine is away: %v, want %s", err, provider.KindUnavailable)
	}
	mu.Lock()
	away = false
	mu.Unlock()
	p.EngineBack()
	if _, err := p.Call(t.Context(), nil, "echo", nil); err != nil {
		t.Fatalf("call after the engine came back: %v", err)
	}
	if got := l.Launches(); got != 3 {
		t.Errorf("launches = %d, want 3", got)
	}
}
