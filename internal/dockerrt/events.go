package dockerrt

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/retry"
)

// EventsAPI is the part of the engine client the event watcher uses.
type EventsAPI interface {
	Events(ctx context.Context, opts client.EventsListOptions) client.EventsResult
	Ping(ctx context.Context, opts client.PingOptions) (client.PingResult, error)
}

// oomGrace is how long an exit with status 137 waits for the engine's "oom"
// event, which can arrive just after the wait answer.
const oomGrace = 250 * time.Millisecond

// oomTracker remembers which of our containers the kernel OOM-killed.
type oomTracker struct {
	mu   sync.Mutex
	seen map[string]chan struct{}
}

func newOOMTracker() *oomTracker { return &oomTracker{seen: map[string]chan struct{}{}} }

func (t *oomTracker) track(id string) {
	t.mu.Lock()
	if _, ok := t.seen[id]; !ok {
		t.seen[id] = make(chan struct{})
	}
	t.mu.Unlock()
}

func (t *oomTracker) mark(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ch, ok := t.seen[id]
	if !ok {
		ch = make(chan struct{})
		t.seen[id] = ch
	}
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// take reports whether the container was OOM-killed and forgets it. With
// wait set it gives the event a short grace to arrive.
func (t *oomTracker) take(id string, wait bool) bool {
	t.mu.Lock()
	ch, ok := t.seen[id]
	t.mu.Unlock()
	if !ok {
		return false
	}
	defer func() {
		t.mu.Lock()
		delete(t.seen, id)
		t.mu.Unlock()
	}()
	if !wait {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	select {
	case <-ch:
		return true
	case <-time.After(oomGrace):
		return false
	}
}

// EngineState tells whether the engine answered the last time it was asked.
type EngineState struct {
	available atomic.Bool
	lastErr   atomic.Pointer[string]
}

// Available reports whether the event stream is connected.
func (s *EngineState) Available() bool { return s.available.Load() }

// LastError is the last connection error, "" if none.
func (s *EngineState) LastError() string {
	if p := s.lastErr.Load(); p != nil {
		return *p
	}
	return ""
}

func (s *EngineState) set(ok bool, err error) {
	s.available.Store(ok)
	if err != nil {
		msg := err.Error()
		s.lastErr.Store(&msg)
	} else if ok {
		s.lastErr.Store(nil)
	}
}

// WatchEvents follows the engine's events for this runtime's containers
// until ctx ends, reconnecting with backoff when the engine goes away.
// onReconnect runs after every reconnection so the caller can reconcile
// what it missed.
func (r *Runtime) WatchEvents(ctx context.Context, api EventsAPI, state *EngineState, onReconnect func()) {
	wait := retry.Reconnect()
	first := true
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, shortCallTimeout)
		_, err := api.Ping(pctx, client.PingOptions{})
		cancel()
		if err != nil {
			state.set(false, err)
			d := wait.NextBackOff()
			r.log.Warn("docker engine unavailable", "error", err, "retry_in", d)
			if !retry.Sleep(ctx, d) {
				return
			}
			continue
		}
		sctx, cancel := context.WithCancel(ctx)
		res := api.Events(sctx, client.EventsListOptions{Filters: make(client.Filters).
			Add("type", string(events.ContainerEventType)).
			Add("label", LabelOwner+"="+r.owner).
			Add("event", string(events.ActionOOM))})
		state.set(true, nil)
		if !first && onReconnect != nil {
			r.log.Info("docker engine reconnected")
			onReconnect()
		}
		first = false
		wait.Reset()
		err = r.pump(sctx, res)
		cancel()
		if ctx.Err() != nil {
			return
		}
		state.set(false, err)
		r.log.Warn("docker event stream ended", "error", err)
	}
}

func (r *Runtime) pump(ctx context.Context, res client.EventsResult) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-res.Err:
			return err
		case m := <-res.Messages:
			if m.Action == events.ActionOOM {
				r.oom.mark(m.Actor.ID)
			}
		}
	}
}
