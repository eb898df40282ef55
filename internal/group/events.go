package group

import (
	"time"

	"github.com/mcp-hangar/hangar/internal/provider"
)

// memberEvents watches one member's provider: every outcome, of calls
// through the group and of direct calls, health checks and starts alike,
// moves the member's rotation counters. Each failure is counted once: a
// crash by its BackendExited (not also by the calls it failed), a failed
// start by its ColdStart (not also by every call that waited for it).
type memberEvents struct {
	g *Group
	m *member
}

var _ provider.Events = memberEvents{}

// StateChanged is called under the provider's lock, so it must not take
// the group's; states are read when needed instead.
func (memberEvents) StateChanged(string, provider.State, provider.State) {}
func (memberEvents) Removed(string)                                      {}
func (memberEvents) QuarantineChanged(string)                            {}

func (e memberEvents) ColdStart(_ string, _ time.Duration, err error) {
	e.g.observe(e.m, verdict(err == nil))
}

func (e memberEvents) BackendExited(string, string, bool) { e.g.observe(e.m, failure) }

func (e memberEvents) HealthChecked(_ string, err error) { e.g.observe(e.m, verdict(err == nil)) }

func (e memberEvents) CallDone(_, _, outcome string, _ time.Duration) {
	e.g.observe(e.m, memberOutcome(outcome))
}

func verdict(ok bool) outcome {
	if ok {
		return success
	}
	return failure
}

// memberOutcome judges a call's outcome for rotation. A tool error is an
// answer, so a success. Crashes and failed starts are counted by their own
// events. A tool the policy blocks and a stop on purpose say nothing about
// the member's health; every other failure counts.
func memberOutcome(kind string) outcome {
	switch kind {
	case "success", provider.KindToolError:
		return success
	case provider.KindCrashed, provider.KindStartFailed, provider.KindToolNotAllowed, provider.KindStopped:
		return neutral
	}
	return failure
}

// callOutcome judges a call through the group for the circuit breaker: a
// call fails when the group could not get an answer from a member.
func callOutcome(err error) outcome {
	if err == nil {
		return success
	}
	switch provider.KindOf(err) {
	case provider.KindToolNotAllowed, provider.KindStopped, provider.KindNoHealthyMember, provider.KindUnknownGroup:
		return neutral
	}
	return failure
}

// failover reports whether a call that failed with err may be tried once on
// another member: only when the way to the member failed, never for an
// answer (a tool error is not an error here) or a timeout.
func failover(err error) bool {
	switch provider.KindOf(err) {
	case provider.KindCrashed, provider.KindCallFailed, provider.KindUnavailable, provider.KindBusy, provider.KindStartFailed:
		return true
	}
	return false
}
