package group

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
)

// TestStrategyOrder: the members sequential calls through the group land
// on, for the deterministic strategies.
func TestStrategyOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		strategy string
		members  []*config.Server
		calls    int
		want     string
	}{
		{"round robin", config.StrategyRoundRobin, members(3), 7, "m0 m1 m2 m0 m1 m2 m0"},
		{"round robin ignores weight and priority", config.StrategyRoundRobin,
			[]*config.Server{memberSpec("a", 5, 1), memberSpec("b", 1, 9)}, 4, "a b a b"},
		{"smooth weighted 5 1 1", config.StrategyWeightedRoundRobin,
			[]*config.Server{memberSpec("a", 5, 1), memberSpec("b", 1, 1), memberSpec("c", 1, 1)}, 14,
			"a a b a c a a a a b a c a a"},
		{"smooth weighted 2 1", config.StrategyWeightedRoundRobin,
			[]*config.Server{memberSpec("a", 2, 1), memberSpec("b", 1, 1)}, 6, "a b a a b a"},
		{"smooth weighted equal weights is round robin", config.StrategyWeightedRoundRobin, members(3), 6, "m0 m1 m2 m0 m1 m2"},
		{"priority: lowest number wins, ties round robin", config.StrategyPriority,
			[]*config.Server{memberSpec("low", 1, 2), memberSpec("a", 1, 1), memberSpec("b", 1, 1)}, 5, "a b a b a"},
		{"least connections: idle ties go round robin", config.StrategyLeastConnections, members(3), 6, "m0 m1 m2 m0 m1 m2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, groupSpec("g", tt.strategy, tt.members...), fixtureOpts{})
			var got []string
			for range tt.calls {
				got = append(got, f.who(t))
			}
			if s := strings.Join(got, " "); s != tt.want {
				t.Errorf("calls landed on %q, want %q", s, tt.want)
			}
		})
	}
}

// TestStrategyDistribution: over many calls each member's share is its
// weight's (exact for the round robins), or close to even for random.
func TestStrategyDistribution(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		strategy string
		members  []*config.Server
		calls    int
		want     map[string]int
		slack    int // allowed deviation per member
	}{
		{"round robin", config.StrategyRoundRobin, members(3), 300, map[string]int{"m0": 100, "m1": 100, "m2": 100}, 0},
		{"weighted 3 2 1", config.StrategyWeightedRoundRobin,
			[]*config.Server{memberSpec("a", 3, 1), memberSpec("b", 2, 1), memberSpec("c", 1, 1)}, 600,
			map[string]int{"a": 300, "b": 200, "c": 100}, 0},
		{"priority", config.StrategyPriority,
			[]*config.Server{memberSpec("a", 1, 1), memberSpec("b", 1, 3), memberSpec("c", 1, 2)}, 50,
			map[string]int{"a": 50}, 0},
		{"least connections", config.StrategyLeastConnections, members(4), 400,
			map[string]int{"m0": 100, "m1": 100, "m2": 100, "m3": 100}, 0},
		{"random", config.StrategyRandom, members(3), 3000, map[string]int{"m0": 1000, "m1": 1000, "m2": 1000}, 150},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(1, 2))
			f := newFixture(t, groupSpec("g", tt.strategy, tt.members...), fixtureOpts{rand: r.IntN})
			got := map[string]int{}
			for range tt.calls {
				got[f.who(t)]++
			}
			for _, m := range tt.members {
				if d := got[m.ID] - tt.want[m.ID]; d < -tt.slack || d > tt.slack {
					t.Errorf("%s got %d calls, want %d±%d (all: %v)", m.ID, got[m.ID], tt.want[m.ID], tt.slack, got)
				}
			}
		})
	}
}

// TestLeastConnectionsAvoidsBusyMembers: with calls in flight, a new call
// goes to the member with the fewest.
func TestLeastConnectionsAvoidsBusyMembers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, groupSpec("g", config.StrategyLeastConnections, members(3)...), fixtureOpts{})
	cancels := map[string]context.CancelFunc{}
	ended := make(chan error, 3)
	for range 3 {
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			_, err := f.g.Call(ctx, nil, "block", nil)
			ended <- err
		}()
		m := f.l.waitEntered(t)
		if cancels[m] != nil {
			t.Fatalf("a second concurrent call landed on busy %s", m)
		}
		cancels[m] = cancel
	}
	// One in flight on each: a tie, broken round robin.
	if got := f.who(t); got != "m0" {
		t.Errorf("with one call in flight on each member, the next went to %s, want m0", got)
	}
	cancels["m1"]()
	if err := <-ended; kindOf(err) != "call_timeout" {
		t.Fatalf("cancelled call: %v", err)
	}
	for range 2 {
		if got := f.who(t); got != "m1" {
			t.Errorf("with m1 idle and the others busy, a call went to %s, want m1", got)
		}
	}
	for _, c := range cancels {
		c()
	}
}

// TestPriorityFallsBackWhenBestLeaves: when the preferred members leave
// rotation, the next priority takes over, and the best return when they
// rejoin.
func TestPriorityFallsBackWhenBestLeaves(t *testing.T) {
	t.Parallel()
	spec := groupSpec("g", config.StrategyPriority, memberSpec("primary", 1, 1), memberSpec("backup", 1, 2))
	spec.Health.UnhealthyThreshold = 1
	f := newFixture(t, spec, fixtureOpts{})
	if got := f.who(t); got != "primary" {
		t.Fatalf("first call on %s", got)
	}
	f.l.backend("primary").end("exit 1") // a crash: out of rotation
	waitFor(t, func() bool { return !f.member(t, "primary").InRotation })
	for range 3 {
		if got := f.who(t); got != "backup" {
			t.Errorf("with primary out, call on %s", got)
		}
	}
	if _, err := f.g.Rebalance(t.Context(), call.Progress{}); err != nil {
		t.Fatal(err)
	}
	if got := f.who(t); got != "primary" {
		t.Errorf("after rebalance, call on %s, want primary", got)
	}
}
