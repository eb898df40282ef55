package group

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
)

// TestBreaker drives the breaker through sequences of steps: "s", "f" and
// "n" are a call let through that succeeds, fails or proves nothing, "x" a
// call that must be refused, "+10s" advances the clock, "reset" resets.
// want is the status after the last step.
func TestBreaker(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		steps string
		want  string
	}{
		{"closed below threshold", "f f s f f", circuitClosed},
		{"opens at threshold", "f f f x", circuitOpen},
		{"neutral does not reset the count", "f n f f x", circuitOpen},
		{"success resets the count", "f f s f f s", circuitClosed},
		{"stays open until the timeout", "f f f +9s x", circuitOpen},
		{"half-open after the timeout", "f f f +10s", circuitHalfOpen},
		{"trial success closes", "f f f +10s s s s", circuitClosed},
		{"trial failure reopens for a whole timeout", "f f f +10s f x +9s x +1s s", circuitClosed},
		{"neutral trial leaves the next call to be the trial", "f f f +10s n f x", circuitOpen},
		{"closed after a trial counts from zero", "f f f +10s s f f s", circuitClosed},
		{"reset closes", "f f f x reset s", circuitClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock()
			b := newBreaker(3, 10*time.Second)
			for i, step := range strings.Fields(tt.steps) {
				now := clock.Now()
				switch step {
				case "reset":
					b.reset()
				case "x":
					if _, ok := b.allow(now); ok {
						t.Fatalf("step %d: call let through, want refused (%s)", i, b.status(now))
					}
				case "s", "f", "n":
					tk, ok := b.allow(now)
					if !ok {
						t.Fatalf("step %d: call refused (%s)", i, b.status(now))
					}
					b.done(now, map[string]outcome{"s": success, "f": failure, "n": neutral}[step], tk)
				default:
					d, err := time.ParseDuration(strings.TrimPrefix(step, "+"))
					if err != nil {
						t.Fatal(err)
					}
					clock.Advance(d)
				}
			}
			if got := b.status(clock.Now()); got != tt.want {
				t.Errorf("status = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestBreakerOneTrialAtATime: while the half-open trial is in flight every
// other call is refused; a call let through before a reset no longer
// counts after it.
func TestBreakerOneTrialAtATime(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	b := newBreaker(1, time.Second)
	tk, _ := b.allow(clock.Now())
	b.done(clock.Now(), failure, tk)
	clock.Advance(time.Second)
	trial, ok := b.allow(clock.Now())
	if !ok || !trial.trial {
		t.Fatalf("first call after the timeout: ok %v trial %v", ok, trial.trial)
	}
	if _, ok := b.allow(clock.Now()); ok {
		t.Fatal("a second call went through with the trial in flight")
	}
	if !b.refusing(clock.Now()) {
		t.Error("refusing = false with the trial in flight")
	}
	b.reset()
	b.done(clock.Now(), failure, trial) // the old trial fails after the reset
	if got := b.status(clock.Now()); got != circuitClosed {
		t.Errorf("a call from before the reset reopened the breaker: %s", got)
	}
}

// TestCircuitThroughGroup: calls that keep failing open the group's
// breaker; while open, calls fail at once without touching a member; after
// the reset timeout one trial goes through, and its success closes it.
func TestCircuitThroughGroup(t *testing.T) {
	t.Parallel()
	spec := groupSpec("pool", config.StrategyRoundRobin, members(2)...)
	spec.Health.UnhealthyThreshold = 100 // keep members in rotation
	spec.CircuitBreaker = config.CircuitBreaker{FailureThreshold: 3, ResetTimeout: 30 * time.Second}
	f := newFixture(t, spec, fixtureOpts{backoff: time.Nanosecond})
	for _, m := range spec.Members {
		f.l.set(f.l.failing, m.ID, true)
	}
	for i := range 3 {
		if _, err := f.g.Call(t.Context(), nil, "who", nil); kindOf(err) != "start_failed" {
			t.Fatalf("call %d: %v, want start_failed", i, err)
		}
	}
	launches := f.l.launchCount("m0") + f.l.launchCount("m1")
	if launches != 6 {
		t.Errorf("launches = %d, want 6 (each call tried both members once)", launches)
	}
	_, err := f.g.Call(t.Context(), nil, "who", nil)
	if kindOf(err) != KindCircuitOpen || !strings.HasPrefix(err.Error(), "circuit_open: pool (") {
		t.Fatalf("call with the circuit open: %v", err)
	}
	if n := f.l.launchCount("m0") + f.l.launchCount("m1"); n != launches {
		t.Errorf("a refused call launched a member (%d launches, was %d)", n, launches)
	}
	st := f.g.Status()
	if !st.CircuitOpen || st.State != Unavailable || st.Available {
		t.Errorf("open circuit: status %+v", st)
	}

	// After the timeout a trial call goes through; it fails and reopens.
	f.clock.Advance(30 * time.Second)
	if _, err := f.g.Call(t.Context(), nil, "who", nil); kindOf(err) != "start_failed" {
		t.Fatalf("trial call: %v, want start_failed", err)
	}
	if _, err := f.g.Call(t.Context(), nil, "who", nil); kindOf(err) != KindCircuitOpen {
		t.Fatalf("after a failed trial: %v, want circuit_open", err)
	}

	// The members recover; the next trial succeeds and closes it.
	for _, m := range spec.Members {
		f.l.set(f.l.failing, m.ID, false)
	}
	f.clock.Advance(30 * time.Second)
	for i := range 4 {
		if _, err := f.g.Call(t.Context(), nil, "who", nil); err != nil {
			t.Fatalf("call %d after recovery: %v", i, err)
		}
	}
	if st := f.g.Status(); st.CircuitOpen || st.State != Healthy {
		t.Errorf("after a good trial: circuit_open %v state %s", st.CircuitOpen, st.State)
	}
}

// TestCircuitHalfOpenLetsOneCallThrough: while the trial call is in
// flight, other calls are refused.
func TestCircuitHalfOpenLetsOneCallThrough(t *testing.T) {
	t.Parallel()
	spec := groupSpec("pool", config.StrategyRoundRobin, members(1)...)
	spec.Health.UnhealthyThreshold = 100
	spec.CircuitBreaker = config.CircuitBreaker{FailureThreshold: 1, ResetTimeout: time.Second}
	f := newFixture(t, spec, fixtureOpts{backoff: time.Nanosecond})
	f.l.set(f.l.failing, "m0", true)
	if _, err := f.g.Call(t.Context(), nil, "who", nil); err == nil {
		t.Fatal("call on a failing member succeeded")
	}
	f.l.set(f.l.failing, "m0", false)
	f.clock.Advance(time.Second)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	var trialErr error
	go func() {
		defer wg.Done()
		_, trialErr = f.g.Call(ctx, nil, "block", nil)
	}()
	f.l.waitEntered(t)
	if _, err := f.g.Call(t.Context(), nil, "who", nil); kindOf(err) != KindCircuitOpen {
		t.Errorf("call during the trial: %v, want circuit_open", err)
	}
	if st := f.g.Status(); st.State != Unavailable {
		t.Errorf("state during the trial = %s, want unavailable", st.State)
	}
	cancel() // the trial times out: a failure, the breaker reopens
	wg.Wait()
	if kindOf(trialErr) != "call_timeout" {
		t.Fatalf("trial: %v", trialErr)
	}
	if _, err := f.g.Call(t.Context(), nil, "who", nil); kindOf(err) != KindCircuitOpen {
		t.Errorf("after the trial timed out: %v, want circuit_open", err)
	}
	// A rebalance closes it at once.
	if _, err := f.g.Rebalance(t.Context(), call.Progress{}); err != nil {
		t.Fatal(err)
	}
	if got := f.who(t); got != "m0" {
		t.Errorf("after rebalance: %s", got)
	}
}
