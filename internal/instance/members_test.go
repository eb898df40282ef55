package instance

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-hangar/hangar/internal/store"
)

// memberStore is store.Members in memory, with the store's semantics for
// zero times.
type memberStore struct {
	mu   sync.Mutex
	rows map[string]store.Member // by replica
}

func (s *memberStore) Heartbeat(_ context.Context, m store.Member) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rows == nil {
		s.rows = map[string]store.Member{}
	}
	now := time.Now().UTC()
	if m.HeartbeatAt.IsZero() {
		m.HeartbeatAt = now
	}
	if m.StartedAt.IsZero() {
		m.StartedAt = now
		if old, ok := s.rows[m.Replica]; ok {
			m.StartedAt = old.StartedAt
		}
	}
	s.rows[m.Replica] = m
	return nil
}

func (s *memberStore) Members(_ context.Context, instance string) ([]store.Member, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Member
	for _, m := range s.rows {
		if m.Instance == instance {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Replica < out[j].Replica })
	return out, nil
}

func (s *memberStore) DeleteMember(_ context.Context, _, replica string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rows, replica)
	return nil
}

func (s *memberStore) get(replica string) (store.Member, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.rows[replica]
	return m, ok
}

var _ store.Members = (*memberStore)(nil)

func member(st store.Members, replica string) *Membership {
	return &Membership{Store: st, Self: store.Member{Instance: "prod", Replica: replica, AdvertiseURL: "http://" + replica + ":8080", Engine: "E"},
		Every: time.Second, Log: slog.New(slog.DiscardHandler)}
}

func TestJoinAndHeartbeat(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &memberStore{}
		m := member(st, "gw-1")
		if err := m.Join(t.Context()); err != nil {
			t.Fatal(err)
		}
		joined, ok := st.get("gw-1")
		if !ok || joined.AdvertiseURL != "http://gw-1:8080" || !joined.StartedAt.Equal(time.Now()) {
			t.Fatalf("row after Join: %+v, %v", joined, ok)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); m.Run(ctx) }()
		time.Sleep(10*time.Second + time.Millisecond)
		synctest.Wait()
		beat, _ := st.get("gw-1")
		if !beat.StartedAt.Equal(joined.StartedAt) || beat.HeartbeatAt.Sub(joined.HeartbeatAt) != 10*time.Second {
			t.Errorf("after 10 beats: %+v (joined %+v)", beat, joined)
		}
		cancel()
		<-done
		if err := m.Leave(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, ok := st.get("gw-1"); ok {
			t.Error("row left after Leave")
		}
	})
}

func TestJoinTakenName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// before sets up the other process of the same name; it returns
		// a stop function (nil: nothing runs).
		before  func(ctx context.Context, st *memberStore) (stop func())
		taken   bool
		maxWait time.Duration
	}{
		{"a live replica keeps beating", func(ctx context.Context, st *memberStore) func() {
			other := member(st, "gw-1")
			_ = other.Join(ctx)
			ctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); other.Run(ctx) }()
			return func() { cancel(); <-done }
		}, true, 3 * time.Second},
		{"a stale row is taken at once", func(ctx context.Context, st *memberStore) func() {
			_ = st.Heartbeat(ctx, store.Member{Instance: "prod", Replica: "gw-1", HeartbeatAt: time.Now().Add(-time.Hour)})
			return nil
		}, false, 0},
		{"a fresh row that stops beating is taken after the TTL", func(ctx context.Context, st *memberStore) func() {
			_ = st.Heartbeat(ctx, store.Member{Instance: "prod", Replica: "gw-1"})
			return nil
		}, false, 3 * time.Second},
		{"another instance's replica of that name does not count", func(ctx context.Context, st *memberStore) func() {
			_ = st.Heartbeat(ctx, store.Member{Instance: "staging", Replica: "gw-1"})
			return nil
		}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				st := &memberStore{}
				stop := tt.before(t.Context(), st)
				start := time.Now()
				err := member(st, "gw-1").Join(t.Context())
				if waited := time.Since(start); waited > tt.maxWait {
					t.Errorf("Join waited %s, at most %s", waited, tt.maxWait)
				}
				if got := errors.Is(err, ErrReplicaTaken); got != tt.taken {
					t.Errorf("Join = %v, want taken=%v", err, tt.taken)
				}
				if stop != nil {
					stop()
				}
			})
		})
	}
}

func TestReapGone(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st := &memberStore{}
		self := member(st, "gw-0")
		_ = self.Join(ctx)
		for _, r := range []string{"dead", "stuck", "live"} {
			_ = member(st, r).Join(ctx)
		}
		elsewhere := member(st, "elsewhere") // on another engine: out of reach
		elsewhere.Self.Engine = "F"
		_ = elsewhere.Join(ctx)
		time.Sleep(5 * time.Second)                                            // everyone's heartbeat is now stale…
		_ = st.Heartbeat(ctx, store.Member{Instance: "prod", Replica: "live"}) // …but live's
		_ = st.Heartbeat(ctx, store.Member{Instance: "prod", Replica: "gw-0"})
		var reaped []string
		removed, err := self.ReapGone(ctx, func(_ context.Context, g store.Member) error {
			reaped = append(reaped, g.Replica)
			if g.Replica == "stuck" {
				return errors.New("engine unavailable")
			}
			return nil
		})
		if len(reaped) != 2 || reaped[0] != "dead" || reaped[1] != "stuck" {
			t.Errorf("reaped %v, want the two gone replicas on this engine only", reaped)
		}
		if len(removed) != 1 || removed[0] != "dead" || err == nil {
			t.Errorf("removed %v, %v; want dead removed and stuck's failure reported", removed, err)
		}
		if _, ok := st.get("dead"); ok {
			t.Error("dead's row kept after its reap")
		}
		if _, ok := st.get("stuck"); !ok {
			t.Error("stuck's row removed although its reap failed")
		}
		for _, r := range []string{"gw-0", "live", "elsewhere"} {
			if _, ok := st.get(r); !ok {
				t.Errorf("%s removed", r)
			}
		}
	})
}

// TestLive: the live replicas are those whose heartbeat is fresh, this
// one counted even before its first beat; a stale one is not.
func TestLive(t *testing.T) {
	t.Parallel()
	st := &memberStore{}
	now := time.Now().UTC()
	for name, beat := range map[string]time.Time{"a": now, "b": now.Add(-time.Second), "gone": now.Add(-time.Hour)} {
		if err := st.Heartbeat(t.Context(), store.Member{Instance: "i", Replica: name, HeartbeatAt: beat}); err != nil {
			t.Fatal(err)
		}
	}
	_ = st.Heartbeat(t.Context(), store.Member{Instance: "other", Replica: "x"})
	m := &Membership{Store: st, Self: store.Member{Instance: "i", Replica: "self"}}
	if n, err := m.Live(t.Context()); err != nil || n != 3 {
		t.Errorf("Live = %d, %v; want 3 (a, b and this one)", n, err)
	}
}
