package call_test

import (
	"testing"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/retry"
)

// TestNilRequest: an in-process call (no request) is local, may always
// try, reports no progress and forwards nothing of a caller's.
func TestNilRequest(t *testing.T) {
	t.Parallel()
	var rq *call.Request
	if id := rq.CallerOr(); id.Kind != auth.KindLocal || !id.Has(auth.ScopeAdmin) {
		t.Errorf("caller of a nil request = %+v, want the local identity", id)
	}
	if !rq.Take() || !rq.Take() {
		t.Error("a request without a budget may not try")
	}
	if rq.ProgressOf().Wanted() {
		t.Error("a nil request wants progress")
	}
	if rq.Options() != nil {
		t.Error("a nil request forwards options")
	}
}

// TestBudgetIsPerCopy: WithBudget gives an entry its own budget and leaves
// the batch's request as it was; the copies share everything else.
func TestBudgetIsPerCopy(t *testing.T) {
	t.Parallel()
	base := &call.Request{Caller: auth.NewIdentity("a", auth.KindToken, nil, nil), Session: "s"}
	one := base.WithBudget(retry.NewBudget(1))
	if !one.Take() || one.Take() {
		t.Error("a budget of 1 did not grant exactly one attempt")
	}
	if base.Budget != nil || !base.Take() {
		t.Error("the base request's budget changed")
	}
	if one.Caller.Name != "a" || one.Session != "s" {
		t.Errorf("copy lost the caller or session: %+v", one)
	}
}

// TestOptionsProgress: the provider's progress is routed to the caller only
// when the caller asked for it (a token and somewhere to send).
func TestOptionsProgress(t *testing.T) {
	t.Parallel()
	send := func(map[string]any) {}
	for _, tt := range []struct {
		name string
		p    call.Progress
		want bool
	}{
		{"token and sender", call.Progress{Token: "t", Send: send}, true},
		{"no token", call.Progress{Send: send}, false},
		{"no sender", call.Progress{Token: "t"}, false},
	} {
		o := (&call.Request{Progress: tt.p}).Options()
		if got := o.OnProgress != nil; got != tt.want {
			t.Errorf("%s: OnProgress set = %v, want %v", tt.name, got, tt.want)
		}
	}
}
