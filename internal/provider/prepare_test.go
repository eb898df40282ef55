package provider_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// preparingLauncher is a fakeLauncher with a Prepare step.
type preparingLauncher struct {
	*fakeLauncher
	prepares atomic.Int32
	err      error
	// sawCaller records whether Prepare got the values of the caller's
	// context.
	sawCaller atomic.Bool
	// block, when set, makes Prepare wait for it or for its context.
	block   chan struct{}
	entered chan struct{}
	ended   chan error
}

type callerKey struct{}

func newPreparing(tools ...string) *preparingLauncher {
	return &preparingLauncher{fakeLauncher: newFakeLauncher(tools...), entered: make(chan struct{}, 16), ended: make(chan error, 16)}
}

func (l *preparingLauncher) Prepare(ctx context.Context, _ *config.Server, _ call.Progress) error {
	l.prepares.Add(1)
	l.sawCaller.Store(ctx.Value(callerKey{}) == "me")
	l.entered <- struct{}{}
	if l.block != nil {
		select {
		case <-l.block:
		case <-ctx.Done():
			l.ended <- ctx.Err()
			return ctx.Err()
		}
	}
	return l.err
}

var _ provider.Preparer = (*preparingLauncher)(nil)

func TestPrepareCarriesTheCallerAndRunsOncePerStart(t *testing.T) {
	t.Parallel()
	l := newPreparing("echo")
	p := provider.New(spec("a"), l, provider.Options{})
	ctx := context.WithValue(t.Context(), callerKey{}, "me")
	if _, err := p.Call(ctx, nil, "echo", nil); err != nil {
		t.Fatal(err)
	}
	if l.prepares.Load() != 1 || !l.sawCaller.Load() {
		t.Fatalf("prepares = %d, caller values = %v; want 1 with the caller's values", l.prepares.Load(), l.sawCaller.Load())
	}
	if _, err := p.Call(ctx, nil, "echo", nil); err != nil {
		t.Fatal(err)
	}
	if l.prepares.Load() != 1 {
		t.Errorf("prepared %d times, want once (not again while ready)", l.prepares.Load())
	}
}

// TestPrepareFailureIsAStartFailure: the cause is the answer, the provider
// ends DEAD, and nothing is launched.
func TestPrepareFailureIsAStartFailure(t *testing.T) {
	t.Parallel()
	l := newPreparing("echo")
	l.err = errors.New("image x is not present and its pull policy is never")
	p := provider.New(spec("a"), l, provider.Options{})
	_, err := p.Call(t.Context(), nil, "echo", nil)
	if provider.KindOf(err) != provider.KindStartFailed || !strings.Contains(err.Error(), "pull policy is never") {
		t.Fatalf("err = %v, want start_failed with the cause", err)
	}
	if l.Launches() != 0 {
		t.Errorf("launched %d times after a failed preparation", l.Launches())
	}
	if p.State() != provider.Dead || !strings.Contains(p.Snapshot().LastError, "pull policy is never") {
		t.Errorf("state %s, last error %q; want dead with the cause", p.State(), p.Snapshot().LastError)
	}
}

// TestPrepareAbandonedWhenEveryCallerLeaves: the preparation runs while
// one caller still waits, and is cancelled (back to COLD, no failure
// counted) once the last one leaves.
func TestPrepareAbandonedWhenEveryCallerLeaves(t *testing.T) {
	t.Parallel()
	l := newPreparing("echo")
	l.block = make(chan struct{})
	s := spec("a")
	s.MaxConcurrency = 4
	p := provider.New(s, l, provider.Options{})

	ctx1, cancel1 := context.WithCancel(t.Context())
	ctx2, cancel2 := context.WithCancel(t.Context())
	errs := make(chan error, 2)
	go func() { _, err := p.Call(ctx1, nil, "echo", nil); errs <- err }()
	<-l.entered
	go func() { _, err := p.Call(ctx2, nil, "echo", nil); errs <- err }()
	waitFor(t, func() bool { return p.State() == provider.Initializing }, "initializing")
	// Let the second caller reach the wait before the first leaves.
	time.Sleep(20 * time.Millisecond)
	cancel1()
	<-errs
	select {
	case err := <-l.ended:
		t.Fatalf("preparation cancelled (%v) while a caller still waits", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel2()
	<-errs
	select {
	case <-l.ended:
	case <-time.After(5 * time.Second):
		t.Fatal("preparation not cancelled after the last caller left")
	}
	waitFor(t, func() bool { return p.State() == provider.Cold }, "cold")
	if l.Launches() != 0 {
		t.Errorf("launched after an abandoned preparation")
	}

	// The next call starts afresh, with no backoff from the abandoned one.
	close(l.block)
	if _, err := p.Call(t.Context(), nil, "echo", nil); err != nil {
		t.Fatalf("call after an abandoned start: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
