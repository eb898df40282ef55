package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
)

// fakeRuntime records what the reconciler does, in order.
type fakeRuntime struct {
	mu      sync.Mutex
	ops     []string
	running map[string]*config.Server
	failAdd map[string]error
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{running: map[string]*config.Server{}, failAdd: map[string]error{}}
}

func (f *fakeRuntime) add(kind string, s *config.Server) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failAdd[s.ID]; err != nil {
		return err
	}
	if _, ok := f.running[s.ID]; ok {
		return fmt.Errorf("%s already running", s.ID)
	}
	f.running[s.ID] = s
	f.ops = append(f.ops, kind+" "+s.ID+" "+s.Image)
	return nil
}

func (f *fakeRuntime) AddServer(s *config.Server) error { return f.add("add", s) }
func (f *fakeRuntime) AddGroup(s *config.Server) error  { return f.add("group", s) }

func (f *fakeRuntime) Remove(id string) (func(context.Context, string, bool) error, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.running[id]; !ok {
		return nil, false
	}
	delete(f.running, id)
	return func(_ context.Context, reason string, _ bool) error {
		f.mu.Lock()
		f.ops = append(f.ops, "stop "+id+" "+reason)
		f.mu.Unlock()
		return nil
	}, true
}

func (f *fakeRuntime) takeOps() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ops := f.ops
	f.ops = nil
	return ops
}

func srv(id, image string) *config.Server {
	return &config.Server{ID: id, Mode: config.ModeDocker, Image: image}
}

func grp(id string, members ...string) *config.Server {
	g := &config.Server{ID: id, Mode: config.ModeGroup}
	for _, m := range members {
		g.Members = append(g.Members, srv(m, "member"))
	}
	return g
}

func TestPrecedence(t *testing.T) {
	t.Parallel()
	type claim struct {
		src  Source
		spec *config.Server
	}
	cases := []struct {
		name    string
		claims  []claim
		want    map[string]Source // served ID → source
		refused map[string]error  // "id/source" → sentinel
	}{
		{
			name:   "one source",
			claims: []claim{{SourceDiscovery, srv("a", "x")}},
			want:   map[string]Source{"a": SourceDiscovery},
		},
		{
			name:    "config beats discovery",
			claims:  []claim{{SourceDiscovery, srv("a", "d")}, {SourceConfig, srv("a", "c")}},
			want:    map[string]Source{"a": SourceConfig},
			refused: map[string]error{"a/discovery": ErrShadowed},
		},
		{
			name:    "config beats installed beats discovery beats hotload",
			claims:  []claim{{SourceHotload, srv("a", "h")}, {SourceDiscovery, srv("a", "d")}, {SourceInstalled, srv("a", "i")}, {SourceConfig, srv("a", "c")}},
			want:    map[string]Source{"a": SourceConfig},
			refused: map[string]error{"a/hotload": ErrShadowed, "a/discovery": ErrShadowed, "a/installed": ErrShadowed},
		},
		{
			name:    "installed beats discovery",
			claims:  []claim{{SourceDiscovery, srv("a", "d")}, {SourceInstalled, srv("a", "i")}},
			want:    map[string]Source{"a": SourceInstalled},
			refused: map[string]error{"a/discovery": ErrShadowed},
		},
		{
			name:    "discovery beats hotload",
			claims:  []claim{{SourceHotload, srv("a", "h")}, {SourceDiscovery, srv("a", "d")}},
			want:    map[string]Source{"a": SourceDiscovery},
			refused: map[string]error{"a/hotload": ErrShadowed},
		},
		{
			name:    "group member reserved against discovery",
			claims:  []claim{{SourceGroup, grp("pool", "m1", "m2")}, {SourceDiscovery, srv("m1", "d")}},
			want:    map[string]Source{"pool": SourceGroup, "m1": SourceGroup, "m2": SourceGroup},
			refused: map[string]error{"m1/discovery": ErrReserved},
		},
		{
			name:    "group id reserved against hotload",
			claims:  []claim{{SourceGroup, grp("pool", "m1")}, {SourceHotload, srv("pool", "h")}},
			want:    map[string]Source{"pool": SourceGroup, "m1": SourceGroup},
			refused: map[string]error{"pool/hotload": ErrReserved},
		},
		{
			name:    "group member reserved against config",
			claims:  []claim{{SourceGroup, grp("pool", "m1")}, {SourceConfig, srv("m1", "c")}},
			want:    map[string]Source{"pool": SourceGroup, "m1": SourceGroup},
			refused: map[string]error{"m1/config": ErrReserved},
		},
		{
			name:   "distinct ids all served",
			claims: []claim{{SourceConfig, srv("a", "c")}, {SourceInstalled, srv("b", "i")}, {SourceHotload, srv("c", "h")}},
			want:   map[string]Source{"a": SourceConfig, "b": SourceInstalled, "c": SourceHotload},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := claims{}
			for _, cl := range tc.claims {
				if c[cl.src] == nil {
					c[cl.src] = map[string]*config.Server{}
				}
				c[cl.src][cl.spec.ID] = cl.spec
			}
			r := resolve(c)
			got := map[string]Source{}
			for id, e := range r.served {
				got[id] = e.Source
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("served = %v, want %v", got, tc.want)
			}
			if len(r.refused) != len(tc.refused) {
				t.Errorf("refused = %v, want %v", r.refused, tc.refused)
			}
			for k, err := range r.refused {
				want := tc.refused[k.id+"/"+string(k.src)]
				if want == nil || !errors.Is(err, want) {
					t.Errorf("refused %s/%s = %v, want %v", k.id, k.src, err, want)
				}
			}
		})
	}
}

func TestRefusalReasons(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  *RefusedError
		want string
	}{
		{&RefusedError{ID: "m1", Source: SourceDiscovery, By: SourceGroup, Group: "pool", Member: true},
			"mcp server id m1 is reserved: it is a member of group pool"},
		{&RefusedError{ID: "pool", Source: SourceHotload, By: SourceGroup, Group: "pool"},
			"mcp server id pool is reserved: it is the id of group pool"},
		{&RefusedError{ID: "a", Source: SourceDiscovery, By: SourceConfig},
			"mcp server id a is served from config, which takes precedence over discovery"},
	}
	for _, tc := range cases {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestReconcile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rt := newFakeRuntime()
	c := New(rt, nil)

	steps := []struct {
		name    string
		do      func() Batch
		ops     []string
		changes []string // "action id source"
	}{
		{
			name: "add",
			do: func() Batch {
				return c.Publish(ctx, SourceConfig, []*config.Server{srv("a", "1"), srv("b", "1")}, "start")
			},
			ops:     []string{"add a 1", "add b 1"},
			changes: []string{"added a config", "added b config"},
		},
		{
			name: "same set again changes nothing",
			do: func() Batch {
				return c.Publish(ctx, SourceConfig, []*config.Server{srv("a", "1"), srv("b", "1")}, "reload")
			},
			ops:     nil,
			changes: nil,
		},
		{
			name: "replace a changed spec: stop the old, then register the new",
			do: func() Batch {
				return c.Publish(ctx, SourceConfig, []*config.Server{srv("a", "2"), srv("b", "1")}, "reload")
			},
			ops:     []string{"stop a reload", "add a 2"},
			changes: []string{"updated a config"},
		},
		{
			name:    "remove",
			do:      func() Batch { return c.Publish(ctx, SourceConfig, []*config.Server{srv("a", "2")}, "reload") },
			ops:     []string{"stop b reload"},
			changes: []string{"removed b config"},
		},
		{
			name: "refuse a lower claim",
			do: func() Batch {
				var b Batch
				unsub := c.Subscribe(func(got Batch) { b = got })
				defer unsub()
				if err := c.Put(ctx, SourceDiscovery, srv("a", "d"), "discovered"); !errors.Is(err, ErrShadowed) {
					t.Errorf("Put(a) = %v, want ErrShadowed", err)
				}
				return b
			},
			ops:     nil,
			changes: []string{"refused a discovery"},
		},
		{
			name: "shadowed claim is served when the winner goes",
			do:   func() Batch { return c.Publish(ctx, SourceConfig, nil, "reload") },
			ops:  []string{"stop a reload", "add a d"},
			// One entry: a is now discovery's.
			changes: []string{"updated a discovery"},
		},
		{
			name: "a higher source takes an ID: the lower is stopped and refused",
			do:   func() Batch { return c.Publish(ctx, SourceInstalled, []*config.Server{srv("a", "i")}, "install") },
			ops:  []string{"stop a install", "add a i"},
			// a changes hands; discovery's claim is refused again.
			changes: []string{"updated a installed", "refused a discovery"},
		},
		{
			name: "a group takes a member id from installed",
			do: func() Batch {
				return c.Publish(ctx, SourceGroup, []*config.Server{grp("pool", "a")}, "reload")
			},
			ops:     []string{"stop a reload", "group pool "},
			changes: []string{"updated a group", "added pool group", "refused a installed", "refused a discovery"},
		},
		{
			name:    "withdrawing a refused claim changes nothing served",
			do:      func() Batch { c.Delete(ctx, SourceDiscovery, "a", "gone"); return nil },
			ops:     nil,
			changes: nil,
		},
		{
			name:    "removing the group frees its member id",
			do:      func() Batch { return c.Publish(ctx, SourceGroup, nil, "reload") },
			ops:     []string{"stop pool reload", "add a i"},
			changes: []string{"updated a installed", "removed pool group"},
		},
	}
	for _, st := range steps {
		b := st.do()
		if ops := rt.takeOps(); !slices.Equal(ops, st.ops) {
			t.Errorf("%s: ops = %q, want %q", st.name, ops, st.ops)
		}
		var got []string
		for _, ch := range b {
			got = append(got, fmt.Sprintf("%s %s %s", ch.Action, ch.ID, ch.Source))
		}
		if !slices.Equal(got, st.changes) {
			t.Errorf("%s: changes = %q, want %q", st.name, got, st.changes)
		}
	}
	if e, ok := c.Get("a"); !ok || e.Source != SourceInstalled || e.Spec.Image != "i" {
		t.Errorf("Get(a) = %+v %v", e, ok)
	}
}

func TestPutAndCheck(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := New(newFakeRuntime(), nil)
	c.Publish(ctx, SourceGroup, []*config.Server{grp("pool", "m1", "m2")}, "start")
	c.Publish(ctx, SourceConfig, []*config.Server{srv("math", "c")}, "start")

	cases := []struct {
		src  Source
		id   string
		want error
	}{
		{SourceDiscovery, "m1", ErrReserved},
		{SourceHotload, "pool", ErrReserved},
		{SourceConfig, "m2", ErrReserved},
		{SourceDiscovery, "math", ErrShadowed},
		{SourceInstalled, "math", ErrShadowed},
		{SourceConfig, "math", nil},
		{SourceDiscovery, "free", nil},
	}
	for _, tc := range cases {
		if err := c.Check(tc.src, tc.id); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("Check(%s, %s) = %v, want %v", tc.src, tc.id, err, tc.want)
		}
	}

	// A refused Put keeps its claim and shows its refusal.
	err := c.Put(ctx, SourceDiscovery, srv("m1", "d"), "discovered")
	var re *RefusedError
	if !errors.As(err, &re) || re.Group != "pool" || !strings.Contains(err.Error(), "member of group pool") {
		t.Fatalf("Put(m1) = %v", err)
	}
	if r := c.Refused(); len(r) != 1 || r[0].ID != "m1" || r[0].Source != SourceDiscovery {
		t.Errorf("Refused = %+v", r)
	}
	if e, _ := c.Get("m1"); e.Source != SourceGroup || e.Group != "pool" {
		t.Errorf("Get(m1) = %+v, want the group's member", e)
	}
	if !c.Delete(ctx, SourceDiscovery, "m1", "gone") || c.RefusalOf(SourceDiscovery, "m1") != nil {
		t.Error("Delete did not withdraw the refused claim")
	}
	if c.Delete(ctx, SourceDiscovery, "m1", "gone") {
		t.Error("second Delete reported a claim")
	}
}

// An install is a source like the others: it publishes its whole set, is
// beaten by config and beats discovery.
func TestInstalledSource(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rt := newFakeRuntime()
	c := New(rt, nil)
	c.Publish(ctx, SourceConfig, []*config.Server{srv("math", "c")}, "start")
	if err := c.Put(ctx, SourceDiscovery, srv("web", "d"), "discovered"); err != nil {
		t.Fatal(err)
	}
	b := c.Publish(ctx, SourceInstalled, []*config.Server{srv("math", "i"), srv("web", "i"), srv("fs", "i")}, "install")
	want := []string{"added fs installed", "updated web installed", "refused math installed", "refused web discovery"}
	var got []string
	for _, ch := range b {
		got = append(got, fmt.Sprintf("%s %s %s", ch.Action, ch.ID, ch.Source))
	}
	if !slices.Equal(got, want) {
		t.Errorf("changes = %q, want %q", got, want)
	}
	if e, _ := c.Get("web"); e.Source != SourceInstalled {
		t.Errorf("web served from %s", e.Source)
	}
}

func TestApplyFailureIsRefusal(t *testing.T) {
	t.Parallel()
	rt := newFakeRuntime()
	rt.failAdd["bad"] = errors.New("add group bad: member id x is already registered")
	c := New(rt, nil)
	b := c.Publish(t.Context(), SourceGroup, []*config.Server{grp("bad", "x")}, "start")
	if len(b) != 1 || b[0].Action != Refused || b[0].ID != "bad" || !strings.Contains(b[0].Reason, "already registered") {
		t.Fatalf("batch = %+v", b)
	}
	if _, ok := c.Get("x"); ok {
		t.Error("member of a group that failed to register is served")
	}
}

// One publication is one batch, to every subscriber, in order; a cancelled
// subscription gets nothing more.
func TestNotificationsBatch(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := New(newFakeRuntime(), nil)
	var mu sync.Mutex
	var a, b []Batch
	stopA := c.Subscribe(func(x Batch) { mu.Lock(); a = append(a, x); mu.Unlock() })
	c.Subscribe(func(x Batch) { mu.Lock(); b = append(b, x); mu.Unlock() })

	c.PublishSets(ctx, Publication{Reason: "start", Sets: map[Source][]*config.Server{
		SourceConfig: {srv("a", "1"), srv("b", "1")},
		SourceGroup:  {grp("g", "m")},
	}})
	c.Publish(ctx, SourceConfig, []*config.Server{srv("a", "1"), srv("b", "1")}, "no change")
	stopA()
	c.Publish(ctx, SourceConfig, nil, "reload")

	mu.Lock()
	defer mu.Unlock()
	if len(a) != 1 || len(a[0]) != 4 {
		t.Fatalf("subscriber a got %v, want one batch of 4 (a, b, g, m)", a)
	}
	if len(b) != 2 || len(b[1]) != 2 || b[1][0].Action != Removed {
		t.Fatalf("subscriber b got %v, want two batches", b)
	}
	if m := a[0][3]; m.ID != "m" || m.Group != "g" || m.Source != SourceGroup {
		t.Errorf("member change = %+v", m)
	}
}

// blockingRuntime's retire waits for release: a graceful stop in progress.
type blockingRuntime struct {
	*fakeRuntime
	stopping chan struct{}
	release  chan struct{}
}

func (b blockingRuntime) Remove(id string) (func(context.Context, string, bool) error, bool) {
	retire, ok := b.fakeRuntime.Remove(id)
	if !ok {
		return nil, false
	}
	return func(ctx context.Context, reason string, graceful bool) error {
		close(b.stopping)
		<-b.release
		return retire(ctx, reason, graceful)
	}, true
}

// Readers do not wait for a stop in progress: they see the state before
// the change until it is applied.
func TestReadsDuringAStop(t *testing.T) {
	t.Parallel()
	rt := blockingRuntime{newFakeRuntime(), make(chan struct{}), make(chan struct{})}
	c := New(rt, nil)
	c.Publish(t.Context(), SourceConfig, []*config.Server{srv("a", "1")}, "start")
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.PublishSets(t.Context(), Publication{Sets: map[Source][]*config.Server{SourceConfig: nil}, Reason: "reload", Graceful: true})
	}()
	<-rt.stopping
	if e, ok := c.Get("a"); !ok || e.Source != SourceConfig {
		t.Errorf("Get(a) during the stop = %+v %v", e, ok)
	}
	if l := c.List(); len(l) != 1 {
		t.Errorf("List during the stop = %+v", l)
	}
	if err := c.Check(SourceDiscovery, "a"); !errors.Is(err, ErrShadowed) {
		t.Errorf("Check during the stop = %v", err)
	}
	close(rt.release)
	<-done
	if _, ok := c.Get("a"); ok {
		t.Error("a still served after the stop")
	}
}
