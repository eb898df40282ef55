package readmodel

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/store"
)

// The lines of a stderr tail that are new since the tail last read: what
// it grew by, what follows the last bytes seen when its front was cut,
// all of a new process's, and never half a line.
func TestNewStderr(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300) + "\n"
	for _, c := range []struct {
		name, seen, cur string
		want            []string
	}{
		{"first read", "", "a\nb\n", []string{"a", "b"}},
		{"first read, half a line", "", "a\nb", []string{"a"}},
		{"nothing yet", "", "partial", nil},
		{"grew", "a\n", "a\nb\nc\n", []string{"b", "c"}},
		{"grew by half a line", "a\n", "a\nb", nil},
		{"unchanged", "a\n", "a\n", nil},
		{"front cut", "a\nb\nc\n", "b\nc\nd\n", []string{"d"}},
		{"front cut, long lines", long + "k\n", "k\nz\n", []string{"z"}},
		{"front cut to nothing seen", "a\nb\n", "c\n", []string{"c"}},
		{"a new process", "a\nb\n", "x\ny\n", []string{"x", "y"}},
	} {
		got := newStderr(c.seen, c.cur)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: newStderr(%q, %q) = %q, want %q", c.name, c.seen, c.cur, got, c.want)
		}
	}
}

// trail is an audit trail entries are added to while a follower reads.
type trail struct {
	mu sync.Mutex
	es []store.AuditEntry // oldest first
}

func (a *trail) add(e store.AuditEntry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e.ID = int64(len(a.es) + 1)
	a.es = append(a.es, e)
}

func (a *trail) RecentAudit(_ context.Context, server string, limit int) ([]store.AuditEntry, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []store.AuditEntry
	for _, e := range slices.Backward(a.es) {
		if e.Server == server && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

// A follower gets the newest entries first (oldest first), then each new
// one once, and stops when its context ends or send says so.
func TestFollowAudit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		a := &trail{}
		now := time.Now()
		for i := range FollowBacklog + 5 {
			a.add(store.AuditEntry{Server: "s", At: now, Identity: "old", Tool: string(rune('a' + i%26))})
		}
		a.add(store.AuditEntry{Server: "other", Identity: "x"})
		m := &Model{Audit: a}
		var mu sync.Mutex
		var got []LogLine
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			m.Follow(ctx, "s", time.Second, func(l LogLine) bool {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, l)
				return l.Audit.Identity != "stop"
			})
		}()
		synctest.Wait()
		mu.Lock()
		if len(got) != FollowBacklog || got[0].Audit.Tool != "f" || got[0].Kind != LogAudit || got[0].Server != "s" {
			t.Fatalf("backlog of %d, first %+v", len(got), got[0])
		}
		got = nil
		mu.Unlock()
		a.add(store.AuditEntry{Server: "s", Identity: "new1", Allowed: true, Outcome: "ok"})
		a.add(store.AuditEntry{Server: "other", Identity: "not mine"})
		a.add(store.AuditEntry{Server: "s", Identity: "new2", Rule: "s/no-drops"})
		time.Sleep(time.Second)
		synctest.Wait()
		time.Sleep(3 * time.Second) // nothing new: nothing sent again
		synctest.Wait()
		mu.Lock()
		if len(got) != 2 || got[0].Audit.Identity != "new1" || got[1].Audit.Identity != "new2" || !got[0].Audit.Allowed || got[1].Audit.Rule != "s/no-drops" {
			t.Errorf("new lines %+v", got)
		}
		mu.Unlock()
		a.add(store.AuditEntry{Server: "s", Identity: "stop"})
		time.Sleep(time.Second)
		<-done // send said stop
		cancel()
	})
}

// The replicas page: every member with its containers, the caller's
// servers only; this gateway always, live; a member whose heartbeat is
// old, gone.
func TestReplicas(t *testing.T) {
	t.Parallel()
	now := time.Now()
	m := &Model{
		Replication: Replication{Instance: "inst", Self: "r1", TTL: 15 * time.Second,
			Members: func(context.Context) ([]store.Member, error) {
				return []store.Member{
					{Instance: "inst", Replica: "r2", AdvertiseURL: "http://r2:8080", HeartbeatAt: now.Add(-time.Minute)},
					{Instance: "inst", Replica: "r1", AdvertiseURL: "http://r1:8080", HeartbeatAt: now.Add(-time.Minute)},
				}, nil
			}},
		Containers: fakeContainers{},
	}
	r := m.Replicas(t.Context(), func(id string) bool { return id != "secret" })
	if !r.Shared || r.Instance != "inst" || len(r.Members) != 3 {
		t.Fatalf("replicas %+v", r)
	}
	byName := map[string]Replica{}
	for _, x := range r.Members {
		byName[x.Name] = x
	}
	if x := byName["r1"]; !x.Self || !x.Live || x.AdvertiseURL != "http://r1:8080" || len(x.Containers) != 2 || x.Containers[0].Server != "a" || x.Containers[1].Role != "egress-proxy" {
		t.Errorf("r1 %+v", x)
	}
	if x := byName["r2"]; x.Self || x.Live || len(x.Containers) != 0 {
		t.Errorf("r2 %+v: gone, and its container is of a server out of reach", x)
	}
	// A container of a replica with no row (its row was reaped first).
	if x := byName["r3"]; x.Live || len(x.Containers) != 1 {
		t.Errorf("r3 %+v", x)
	}
	// Without a shared store: one gateway, its containers.
	one := (&Model{Replication: Replication{Instance: "inst"}, Containers: fakeContainers{}}).Replicas(t.Context(), nil)
	if one.Shared || len(one.Members) != 4 || one.Members[0].Name != "" || !one.Members[0].Self {
		t.Errorf("one gateway: %+v", one)
	}
}

type fakeContainers struct{}

func (fakeContainers) Managed(context.Context) ([]dockerrt.Managed, error) {
	return []dockerrt.Managed{
		{ID: "3", Server: "a", Replica: "r1", Role: "egress-proxy"},
		{ID: "1", Server: "a", Replica: "r1"},
		{ID: "2", Server: "secret", Replica: "r2"},
		{ID: "4", Server: "b", Replica: "r3"},
	}, nil
}
