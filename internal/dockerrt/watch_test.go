package dockerrt

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// flakyEngine is an engine that is down until up is set, and whose event
// stream can be cut.
type flakyEngine struct {
	up       atomic.Bool
	mu       sync.Mutex
	streams  []chan error
	messages chan events.Message
	pings    atomic.Int32
}

func (e *flakyEngine) Ping(context.Context, client.PingOptions) (client.PingResult, error) {
	e.pings.Add(1)
	if !e.up.Load() {
		return client.PingResult{}, errors.New("Cannot connect to the Docker daemon")
	}
	return client.PingResult{}, nil
}

func (e *flakyEngine) Events(ctx context.Context, _ client.EventsListOptions) client.EventsResult {
	errs := make(chan error, 1)
	e.mu.Lock()
	e.streams = append(e.streams, errs)
	e.mu.Unlock()
	return client.EventsResult{Messages: e.messages, Err: errs}
}

// cut ends every open event stream, as a daemon restart does.
func (e *flakyEngine) cut() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.streams {
		s <- io.ErrUnexpectedEOF
	}
	e.streams = nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWatchEventsReconnectsAndReconciles(t *testing.T) {
	t.Parallel()
	eng := &flakyEngine{messages: make(chan events.Message)}
	rt := New(nil, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	var state EngineState
	var reconciles atomic.Int32
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		rt.WatchEvents(ctx, eng, &state, func() { reconciles.Add(1) })
		close(done)
	}()

	// Down at start: reported unavailable, with the cause, and retried.
	waitFor(t, "a second ping", func() bool { return eng.pings.Load() >= 2 })
	if state.Available() || state.LastError() == "" {
		t.Fatalf("engine down: available=%v lastErr=%q, want false and a cause", state.Available(), state.LastError())
	}
	eng.up.Store(true)
	waitFor(t, "engine available", state.Available)
	if n := reconciles.Load(); n != 0 {
		t.Fatalf("first connection reconciled %d times, want 0", n)
	}

	// An OOM event marks the container.
	rt.oom.track("c1")
	eng.messages <- events.Message{Action: events.ActionOOM, Actor: events.Actor{ID: "c1"}}
	// take forgets what it looked at: polled, a look just before the mark
	// would forget it. Its wait is for exactly this (the event is on its
	// way: the watcher has received it).
	if !rt.oom.take("c1", true) {
		t.Fatal("the OOM event did not mark the container")
	}

	// The daemon restarts: unavailable, then back, then one reconcile.
	eng.up.Store(false)
	eng.cut()
	waitFor(t, "engine unavailable", func() bool { return !state.Available() })
	eng.up.Store(true)
	waitFor(t, "reconcile after reconnect", func() bool { return reconciles.Load() == 1 })
	if !state.Available() || state.LastError() != "" {
		t.Fatalf("after reconnect: available=%v lastErr=%q", state.Available(), state.LastError())
	}

	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("WatchEvents did not return after cancel")
	}
}
