package discovery

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
)

// removingSource is a fakeSource whose objects can be removed for good.
type removingSource struct {
	*fakeSource
	mu      sync.Mutex
	removed map[string]bool
	err     error
	asked   []string
}

func (r *removingSource) Removed(_ context.Context, id string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, id)
	return r.removed[id], r.err
}

func (r *removingSource) remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removed[id] = true
}

// TestRemovedLeavesInAnyMode: a server whose container was removed is
// deregistered at the next scan by an additive source too; one that is
// only no longer listed (stopped) stays with an additive source. A source
// that cannot tell keeps it.
func TestRemovedLeavesInAnyMode(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{ModeAdditive, ModeAuthoritative} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			src := &removingSource{fakeSource: newFakeSource(SourceDocker, mode), removed: map[string]bool{}}
			gone, stopped := cand("gone", "f1", "10.0.0.1"), cand("stopped", "f2", "10.0.0.2")
			src.set(nil, nil, gone, stopped)
			reg := newFakeRegistry()
			s := New(discCfg(autoRegister), reg, nil, nil, quietLog(), src)
			s.Scan(ctx)
			if !reg.Registered("gone") || !reg.Registered("stopped") {
				t.Fatal("not registered")
			}

			// The engine cannot be asked: nothing is taken for removed.
			src.err = errors.New("engine down")
			src.set(nil, nil)
			res := s.Scan(ctx)
			if mode == ModeAdditive && (!reg.Registered("gone") || res.DeregisteredCount != 0) {
				t.Error("a server was deregistered although the source could not tell whether it was removed")
			}
			if mode == ModeAuthoritative {
				return // covered by TestRemoval: unlisted is gone
			}
			src.err = nil
			src.remove(gone.ContainerID)
			wantResult(t, s.Scan(ctx), ScanResult{DeregisteredCount: 1})
			if reg.Registered("gone") {
				t.Error("a removed container's server is still registered by an additive source")
			}
			if !reg.Registered("stopped") {
				t.Error("a stopped container's server was deregistered by an additive source")
			}
		})
	}
}

// TestRefreshCatchesMissedRemoval: when the event of a removal is missed
// (the stream was down), the periodic re-list (refresh_interval_s)
// deregisters the server all the same.
func TestRefreshCatchesMissedRemoval(t *testing.T) {
	t.Parallel()
	src := &removingSource{fakeSource: newFakeSource(SourceSwarm, ModeAdditive), removed: map[string]bool{}}
	c := cand("svc", "f1", "10.0.0.1")
	c.Source, c.ContainerID, c.ServiceID = SourceSwarm, "", "service-id-1"
	src.set(nil, nil, c)
	reg := newFakeRegistry()
	s := New(discCfg(autoRegister, func(d *config.Discovery) { d.RefreshInterval = 50 * time.Millisecond }), reg, nil, nil, quietLog(), src)
	s.Start(t.Context())
	t.Cleanup(s.Close)
	<-s.Scanned()
	if !reg.Registered("svc") {
		t.Fatal("not registered")
	}
	src.set(nil, nil)
	src.remove("service-id-1") // and no event: Watch never calls
	began := time.Now()
	for reg.Registered("svc") {
		if time.Since(began) > 5*time.Second {
			t.Fatal("a removed service is still registered 5s after its removal, with a re-list every 50ms")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
