package group

import (
	"slices"
	"testing"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/retry"
)

// A failover is made only when the caller's attempt budget allows one more
// member call.
func TestFailoverTakesFromTheBudget(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		budget    int
		wantCalls []string
	}{
		{1, []string{"m0"}},       // the caller spent the only attempt on m0
		{2, []string{"m0", "m1"}}, // one left for the failover
	} {
		f := newFixture(t, groupSpec("g", config.StrategyRoundRobin, members(3)...), fixtureOpts{})
		f.l.mu.Lock()
		f.l.crashing["m0"], f.l.crashing["m1"] = true, true
		f.l.mu.Unlock()
		b := retry.NewBudget(tt.budget)
		b.Take() // the caller's own attempt, as the batch executor takes it
		_, err := f.g.Call(t.Context(), &call.Request{Budget: b}, "who", nil)
		if kindOf(err) != provider.KindCrashed {
			t.Errorf("budget %d: error %v, want a crash", tt.budget, err)
		}
		var calls []string
		for done := false; !done; {
			select {
			case m := <-f.l.entered:
				calls = append(calls, m)
			default:
				done = true
			}
		}
		if !slices.Equal(calls, tt.wantCalls) {
			t.Errorf("budget %d: calls on %v, want %v", tt.budget, calls, tt.wantCalls)
		}
	}
}
