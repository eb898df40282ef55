package provider_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// preparingLauncher is a fakeLauncher with a Prepare step.
type preparingLauncher struct {
	*fakeLauncher
	prepares atomic.Int32
	err      error
	// sawCaller records whether Prepare got the caller's context.
	sawCaller atomic.Bool
}

type callerKey struct{}

func (l *preparingLauncher) Prepare(ctx context.Context, _ *config.Server) error {
	l.prepares.Add(1)
	l.sawCaller.Store(ctx.Value(callerKey{}) == "me")
	return l.err
}

var _ provider.Preparer = (*preparingLauncher)(nil)

func TestPrepareRunsOnCallerContextBeforeStart(t *testing.T) {
	t.Parallel()
	l := &preparingLauncher{fakeLauncher: newFakeLauncher("echo")}
	p := provider.New(spec("a"), l, provider.Options{})
	ctx := context.WithValue(t.Context(), callerKey{}, "me")
	if _, err := p.Call(ctx, "echo", nil); err != nil {
		t.Fatal(err)
	}
	if l.prepares.Load() != 1 || !l.sawCaller.Load() {
		t.Fatalf("prepares = %d, caller context = %v; want 1 on the caller's context", l.prepares.Load(), l.sawCaller.Load())
	}
	// A READY provider needs no preparation.
	if _, err := p.Call(ctx, "echo", nil); err != nil {
		t.Fatal(err)
	}
	if l.prepares.Load() != 1 {
		t.Errorf("prepared %d times, want once (not again while ready)", l.prepares.Load())
	}
}

func TestPrepareFailureIsTheAnswer(t *testing.T) {
	t.Parallel()
	l := &preparingLauncher{fakeLauncher: newFakeLauncher("echo"), err: errors.New("image x is not present and its pull policy is never")}
	p := provider.New(spec("a"), l, provider.Options{})
	_, err := p.Call(t.Context(), "echo", nil)
	if provider.KindOf(err) != provider.KindStartFailed || !strings.Contains(err.Error(), "pull policy is never") {
		t.Fatalf("err = %v, want start_failed with the cause", err)
	}
	if l.Launches() != 0 {
		t.Errorf("launched %d times after a failed preparation", l.Launches())
	}
	if got := p.Snapshot().LastError; !strings.Contains(got, "pull policy is never") {
		t.Errorf("last error %q does not show the cause", got)
	}
	if p.State() != provider.Cold {
		t.Errorf("state %s, want cold (nothing was started)", p.State())
	}
}
