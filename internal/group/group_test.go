package group

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// TestRotationThresholds: a member leaves rotation after
// unhealthy_threshold consecutive failures and rejoins after
// healthy_threshold consecutive successes; a success in between resets the
// count.
func TestRotationThresholds(t *testing.T) {
	t.Parallel()
	b := memberSpec("b", 1, 1)
	b.HealthCheckInterval = time.Nanosecond // every CheckHealth is due
	b.MaxConsecutiveFailures = 5            // and does not degrade b
	spec := groupSpec("g", config.StrategyRoundRobin, memberSpec("a", 1, 1), b)
	spec.Health = config.GroupHealth{UnhealthyThreshold: 2, HealthyThreshold: 2}
	f := newFixture(t, spec, fixtureOpts{})
	f.l.set(f.l.failing, "b", true)

	// b's start fails (1), and its next turn finds it in restart backoff
	// (2): out. Every call still succeeds on a, by failover.
	for i := range 4 {
		if got := f.who(t); got != "a" {
			t.Errorf("call %d on %s, want a", i, got)
		}
	}
	if m := f.member(t, "b"); m.InRotation || m.ConsecutiveFailures != 2 {
		t.Fatalf("b after two failures: %+v", m)
	}
	if n := f.l.launchCount("b"); n != 1 {
		t.Errorf("b launched %d times, want 1 (then backoff, then out of rotation)", n)
	}

	// One success is not enough with healthy_threshold 2.
	f.l.set(f.l.failing, "b", false)
	st, err := f.g.Rebalance(t.Context(), call.Progress{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(st.InRotation, "b") {
		t.Fatalf("b rejoined after one success: %v", st.InRotation)
	}
	if m := f.member(t, "b"); m.State != provider.Ready || m.ConsecutiveFailures != 0 {
		t.Fatalf("b after a good start: %+v", m)
	}
	// The second (a health check of the running b) is.
	st, _ = f.g.Rebalance(t.Context(), call.Progress{})
	if !slices.Equal(st.InRotation, []string{"a", "b"}) {
		t.Fatalf("after two successes in rotation: %v", st.InRotation)
	}

	// Failed health checks (the workers') count as failures too.
	f.l.set(f.l.failList, "b", true)
	pb, _ := f.mgr.Get("b")
	if !pb.CheckHealth(t.Context()) {
		t.Fatal("no health check ran")
	}
	if m := f.member(t, "b"); !m.InRotation || m.ConsecutiveFailures != 1 {
		t.Fatalf("b after one failed check: %+v", m)
	}
	pb.CheckHealth(t.Context())
	if m := f.member(t, "b"); m.InRotation || m.ConsecutiveFailures != 2 {
		t.Fatalf("b after two failed checks: %+v", m)
	}
}

// TestRebalanceEjectsFailingMember: a member that fails its rebalance check
// leaves rotation at once, below unhealthy_threshold; the breaker is reset.
func TestRebalanceEjectsFailingMember(t *testing.T) {
	t.Parallel()
	spec := groupSpec("g", config.StrategyRoundRobin, members(3)...)
	spec.Health.UnhealthyThreshold = 5
	f := newFixture(t, spec, fixtureOpts{})
	if _, err := f.g.Start(t.Context(), call.Progress{}); err != nil {
		t.Fatal(err)
	}
	// m0 runs but fails its check; m1 is fine; m2 is out of rotation,
	// stopped, and will not start again.
	f.l.set(f.l.failList, "m0", true)
	f.l.set(f.l.failing, "m2", true)
	m2, _ := f.mgr.Get("m2")
	_ = m2.Stop(t.Context(), "test", false)
	f.g.eject(f.g.members[2], nil)
	// And the breaker is open.
	f.g.mu.Lock()
	f.g.breaker.openedAt = f.clock.Now()
	f.g.mu.Unlock()

	st, err := f.g.Rebalance(t.Context(), call.Progress{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.InRotation, []string{"m1"}) {
		t.Errorf("in rotation after rebalance: %v, want [m1]", st.InRotation)
	}
	if m := f.member(t, "m0"); m.ConsecutiveFailures != 1 {
		t.Errorf("m0: %+v", m)
	}
	if n := f.l.launchCount("m2"); n != 2 {
		t.Errorf("m2 launched %d times, want 2 (the rebalance tried it)", n)
	}
	if st.CircuitOpen || st.State != Healthy {
		t.Errorf("after rebalance: circuit_open %v state %s", st.CircuitOpen, st.State)
	}
}

// TestOutcomesMoveRotation: which outcomes of a direct call on a member
// count for its rotation. The member has one failure counted before.
func TestOutcomesMoveRotation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tool string
		want int // consecutive failures after the call
	}{
		{"success resets", "who", 0},
		{"tool error is an answer", "fail", 0},
		{"crash counts once", "crash", 2},
		{"blocked tool is not the member's fault", "secret", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := memberSpec("a", 1, 1)
			m.Tools.DenyList = []string{"secret"}
			spec := groupSpec("g", config.StrategyRoundRobin, m)
			spec.Health.UnhealthyThreshold = 5
			f := newFixture(t, spec, fixtureOpts{})
			p, _ := f.mgr.Get("a")
			if _, err := p.Start(t.Context(), call.Progress{}); err != nil {
				t.Fatal(err)
			}
			f.g.observe(f.g.members[0], failure)
			_, _ = p.Call(t.Context(), nil, tt.tool, nil)
			if got := f.member(t, "a").ConsecutiveFailures; got != tt.want {
				t.Errorf("consecutive_failures = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestCrashLeavesRotation: a member that crashes under a direct call
// leaves rotation (threshold 1), calls go to the others, and a rebalance
// restarts it and brings it back.
func TestCrashLeavesRotation(t *testing.T) {
	t.Parallel()
	spec := groupSpec("g", config.StrategyRoundRobin, members(2)...)
	spec.Health.UnhealthyThreshold = 1
	f := newFixture(t, spec, fixtureOpts{})
	if n, err := f.g.Start(t.Context(), call.Progress{}); err != nil || n != 2 {
		t.Fatalf("Start = %d, %v", n, err)
	}
	m0, _ := f.mgr.Get("m0")
	if _, err := m0.Call(t.Context(), nil, "crash", nil); kindOf(err) != provider.KindCrashed {
		t.Fatalf("crash: %v", err)
	}
	st := f.g.Status()
	if !slices.Equal(st.InRotation, []string{"m1"}) || st.HealthyCount != 1 || st.State != Healthy {
		t.Fatalf("after the crash: %+v", st)
	}
	for range 3 {
		if got := f.who(t); got != "m1" {
			t.Errorf("call on %s with m0 out", got)
		}
	}
	st, err := f.g.Rebalance(t.Context(), call.Progress{})
	if err != nil || !slices.Equal(st.InRotation, []string{"m0", "m1"}) || st.HealthyCount != 2 {
		t.Fatalf("after rebalance: %+v, %v", st, err)
	}
	if n := f.l.launchCount("m0"); n != 2 {
		t.Errorf("m0 launched %d times, want 2 (restarted by the rebalance)", n)
	}
}

// TestFailover: a call whose way to the member fails is tried once on
// another member; an answer (tool error) or a timeout is not.
func TestFailover(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		setup     func(l *fakeLauncher)
		tool      string
		timeout   time.Duration
		wantKind  string // "" for success
		wantCalls []string
	}{
		{"failed start moves on", func(l *fakeLauncher) { l.failing["m0"] = true }, "who", 0, "", []string{"m1"}},
		{"crash moves on", func(l *fakeLauncher) { l.crashing["m0"] = true }, "who", 0, "", []string{"m0", "m1"}},
		{"only once", func(l *fakeLauncher) { l.crashing["m0"], l.crashing["m1"] = true, true }, "who", 0,
			provider.KindCrashed, []string{"m0", "m1"}},
		{"tool error is the answer", nil, "fail", 0, "", []string{"m0"}},
		{"timeout is the answer", nil, "block", 50 * time.Millisecond, provider.KindTimeout, []string{"m0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, groupSpec("g", config.StrategyRoundRobin, members(3)...), fixtureOpts{})
			if tt.setup != nil {
				f.l.mu.Lock()
				tt.setup(f.l)
				f.l.mu.Unlock()
			}
			ctx := t.Context()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			res, err := f.g.Call(ctx, nil, tt.tool, nil)
			if kindOf(err) != tt.wantKind {
				t.Errorf("error %v, want kind %q", err, tt.wantKind)
			}
			if tt.tool == "fail" && (res == nil || !res.IsError) {
				t.Errorf("tool error not passed on: %+v", res)
			}
			var calls []string
			for len(calls) < 10 {
				select {
				case m := <-f.l.entered:
					calls = append(calls, m)
					continue
				default:
				}
				break
			}
			if !slices.Equal(calls, tt.wantCalls) {
				t.Errorf("calls on %v, want %v", calls, tt.wantCalls)
			}
		})
	}
}

// TestNoHealthyMembers: with every member out of rotation a call fails at
// once with no_healthy_members_in_group, and so does hangar_tools.
func TestNoHealthyMembers(t *testing.T) {
	t.Parallel()
	spec := groupSpec("pool", config.StrategyRoundRobin, members(2)...)
	spec.Health.UnhealthyThreshold = 1
	f := newFixture(t, spec, fixtureOpts{})
	f.l.set(f.l.failing, "m0", true)
	f.l.set(f.l.failing, "m1", true)
	if _, err := f.g.Call(t.Context(), nil, "who", nil); kindOf(err) != provider.KindStartFailed {
		t.Fatalf("first call: %v", err)
	}
	_, err := f.g.Call(t.Context(), nil, "who", nil)
	if err == nil || err.Error() != "no_healthy_members_in_group: pool" {
		t.Fatalf("call with no member in rotation: %v", err)
	}
	if _, err := f.g.Tools(t.Context(), call.Progress{}); err == nil || err.Error() != "no_healthy_members_in_group: pool" {
		t.Errorf("Tools: %v", err)
	}
	if st := f.g.Status(); st.State != Unavailable || st.HealthyCount != 0 || st.Available || len(st.InRotation) != 0 {
		t.Errorf("status: %+v", st)
	}
}

// TestStateOf covers the state rules.
func TestStateOf(t *testing.T) {
	t.Parallel()
	m := func(state provider.State, inRot bool, failures int) MemberStatus {
		return MemberStatus{State: state, InRotation: inRot, ConsecutiveFailures: failures}
	}
	cold, ready, dead := provider.Cold, provider.Ready, provider.Dead
	tests := []struct {
		name        string
		members     []MemberStatus
		minHealthy  int
		refusing    bool
		want        State
		wantHealthy int
	}{
		{"all cold", []MemberStatus{m(cold, true, 0), m(cold, true, 0)}, 1, false, Cold, 2},
		{"one ready", []MemberStatus{m(ready, true, 0), m(cold, true, 0)}, 2, false, Healthy, 2},
		{"starting", []MemberStatus{m(provider.Initializing, true, 0), m(cold, true, 0)}, 1, false, Healthy, 2},
		{"cold with a failure is not cold", []MemberStatus{m(cold, true, 1), m(cold, true, 0)}, 1, false, Healthy, 2},
		{"cold out of rotation is not cold", []MemberStatus{m(cold, false, 2), m(cold, true, 0)}, 1, false, Healthy, 1},
		{"below min_healthy", []MemberStatus{m(ready, true, 0), m(dead, false, 2), m(ready, false, 2)}, 2, false, Degraded, 1},
		{"dead in rotation is not healthy", []MemberStatus{m(dead, true, 1), m(ready, true, 0)}, 2, false, Degraded, 1},
		{"none healthy but some in rotation", []MemberStatus{m(dead, true, 1), m(provider.Degraded, true, 1)}, 1, false, Degraded, 0},
		{"none in rotation", []MemberStatus{m(ready, false, 2), m(dead, false, 3)}, 1, false, Unavailable, 0},
		{"circuit refusing", []MemberStatus{m(ready, true, 0)}, 1, true, Unavailable, 1},
		{"circuit refusing beats cold", []MemberStatus{m(cold, true, 0)}, 1, true, Unavailable, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, healthy := stateOf(tt.members, tt.minHealthy, tt.refusing)
			if got != tt.want || healthy != tt.wantHealthy {
				t.Errorf("stateOf = %s, %d healthy; want %s, %d", got, healthy, tt.want, tt.wantHealthy)
			}
		})
	}
}

// TestLifecycle: Start starts every member, Tools answers from a running
// member, Stop stops them all and the group is cold again.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	f := newFixture(t, groupSpec("g", config.StrategyRoundRobin, members(3)...), fixtureOpts{})
	if st := f.g.Status(); st.State != Cold || st.HealthyCount != 3 || st.TotalMembers != 3 || !st.Available {
		t.Fatalf("new group: %+v", st)
	}
	tools, err := f.g.Tools(t.Context(), call.Progress{})
	if err != nil || len(tools) != 4 {
		t.Fatalf("Tools = %v, %v", tools, err)
	}
	if n := f.l.launchCount("m0") + f.l.launchCount("m1") + f.l.launchCount("m2"); n != 1 {
		t.Errorf("Tools started %d members, want 1", n)
	}
	n, err := f.g.Start(t.Context(), call.Progress{})
	if err != nil || n != 3 {
		t.Fatalf("Start = %d, %v", n, err)
	}
	if st := f.g.Status(); st.State != Healthy {
		t.Errorf("started group: %s", st.State)
	}
	if err := f.g.Stop(t.Context(), "manual_stop"); err != nil {
		t.Fatal(err)
	}
	for _, p := range f.g.Members() {
		if p.State() != provider.Cold {
			t.Errorf("%s after Stop: %s", p.ID(), p.State())
		}
	}
	if st := f.g.Status(); st.State != Cold {
		t.Errorf("stopped group: %s", st.State)
	}
}

// TestStartFailsOnlyWhenNoMemberStarts.
func TestStartFailsOnlyWhenNoMemberStarts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, groupSpec("g", config.StrategyRoundRobin, members(2)...), fixtureOpts{})
	f.l.set(f.l.failing, "m0", true)
	if n, err := f.g.Start(t.Context(), call.Progress{}); err != nil || n != 1 {
		t.Errorf("Start with one failing member = %d, %v", n, err)
	}
	f.l.set(f.l.failing, "m1", true)
	f.g.Stop(t.Context(), "test")
	_, err := f.g.Start(t.Context(), call.Progress{})
	if kindOf(err) != provider.KindStartFailed || !strings.HasPrefix(err.Error(), "start_failed: g (no member started: ") {
		t.Errorf("Start with no member starting: %v", err)
	}
}

// TestRegistry: members are registered and unregistered with their group;
// a taken member ID rejects the whole group; a removed group answers
// unknown_group.
func TestRegistry(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher()
	defer close(l.gate)
	mgr := provider.NewManager(l, provider.Options{Log: quiet})
	reg := NewRegistry(mgr, Options{Log: quiet})
	g, err := reg.Add(groupSpec("pool", config.StrategyRoundRobin, members(2)...))
	if err != nil {
		t.Fatal(err)
	}
	if got := mgr.IDs(); !slices.Equal(got, []string{"m0", "m1"}) {
		t.Errorf("manager holds %v", got)
	}
	if grp, ok := mgr.GroupOf("m1"); !ok || grp != "pool" {
		t.Errorf("GroupOf(m1) = %q, %v", grp, ok)
	}
	if _, err := reg.Add(groupSpec("pool", config.StrategyRoundRobin, memberSpec("x", 1, 1))); err == nil {
		t.Error("a second group pool was accepted")
	}
	if _, err := reg.Add(groupSpec("other", config.StrategyRoundRobin, memberSpec("y", 1, 1), memberSpec("m0", 1, 1))); err == nil {
		t.Error("a group reusing member m0 was accepted")
	}
	if got := mgr.IDs(); !slices.Equal(got, []string{"m0", "m1"}) {
		t.Errorf("after a rejected group the manager holds %v", got)
	}
	if _, err := g.Call(t.Context(), nil, "who", nil); err != nil {
		t.Fatal(err)
	}
	removed, ok := reg.Remove("pool")
	if !ok || removed != g {
		t.Fatal("Remove did not return the group")
	}
	if err := removed.Retire(t.Context(), "test", true); err != nil {
		t.Fatal(err)
	}
	if got := mgr.IDs(); len(got) != 0 {
		t.Errorf("after Remove the manager holds %v", got)
	}
	for _, p := range g.Members() {
		if p.State() != provider.Cold {
			t.Errorf("%s after Retire: %s", p.ID(), p.State())
		}
	}
	if _, err := g.Call(t.Context(), nil, "who", nil); err == nil || err.Error() != "unknown_group: pool" {
		t.Errorf("call on a removed group: %v", err)
	}
	if _, ok := reg.Get("pool"); ok || len(reg.List()) != 0 {
		t.Error("the registry still has pool")
	}
}

// TestConcurrentCalls: many calls through the group at once, with status
// reads, rebalances and a member failing under them; every call succeeds
// (failover) and every one is counted once on some member. Run with -race.
func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	for _, strategy := range []string{config.StrategyRoundRobin, config.StrategyWeightedRoundRobin,
		config.StrategyLeastConnections, config.StrategyRandom, config.StrategyPriority} {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			ms := []*config.Server{memberSpec("a", 3, 1), memberSpec("b", 2, 1), memberSpec("c", 1, 1)}
			spec := groupSpec("g", strategy, ms...)
			spec.CircuitBreaker.FailureThreshold = 1000
			f := newFixture(t, spec, fixtureOpts{})
			const workers, per = 8, 40
			var wg sync.WaitGroup
			errs := make(chan error, workers*per)
			counts := make(chan string, workers*per)
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range per {
						res, err := f.g.Call(t.Context(), nil, "who", nil)
						if err != nil {
							errs <- err
							continue
						}
						counts <- text(res)
					}
				}()
			}
			stop := make(chan struct{})
			var side sync.WaitGroup
			side.Add(1)
			go func() {
				defer side.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					_ = f.g.Status()
					_, _ = f.g.Rebalance(t.Context(), call.Progress{})
				}
			}()
			// c fails its health checks: rebalances move it in and out.
			f.l.set(f.l.failList, "c", true)
			wg.Wait()
			close(stop)
			side.Wait()
			close(errs)
			close(counts)
			for err := range errs {
				t.Errorf("call failed: %v", err)
			}
			total := 0
			for range counts {
				total++
			}
			if total != workers*per {
				t.Errorf("%d calls answered, want %d", total, workers*per)
			}
			f.g.mu.Lock()
			for _, m := range f.g.members {
				if m.inflight != 0 {
					t.Errorf("%s: %d in flight after all calls ended", m.p.ID(), m.inflight)
				}
			}
			f.g.mu.Unlock()
		})
	}
}
