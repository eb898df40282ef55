package group

import "github.com/mcp-hangar/hangar/internal/provider"

// State of a group.
type State string

// Group states. They are derived, never stored: see stateOf.
const (
	Cold        State = "cold"
	Healthy     State = "healthy"
	Degraded    State = "degraded"
	Unavailable State = "unavailable"
)

// Indicator is the hangar_status tag of a group state, from the same set
// as a provider's (seed 001 fixes the set).
func (s State) Indicator() string {
	switch s {
	case Healthy:
		return "[READY]"
	case Degraded:
		return "[DEGRADED]"
	case Unavailable:
		return "[DEAD]"
	}
	return "[COLD]"
}

// MemberStatus is one member as hangar_details and hangar_group_list show
// it.
type MemberStatus struct {
	ID                  string
	State               provider.State // the member provider's own state
	InRotation          bool
	Weight              int
	Priority            int
	ConsecutiveFailures int // as the group counts them, not the provider
}

// healthy reports whether a member counts towards healthy_count: it is in
// rotation and its provider can serve a call now or on demand (READY, or
// COLD or INITIALIZING, which start or are starting). A DEAD or DEGRADED
// member does not count even while still in rotation.
func (m MemberStatus) healthy() bool {
	if !m.InRotation {
		return false
	}
	switch m.State {
	case provider.Ready, provider.Cold, provider.Initializing:
		return true
	}
	return false
}

// stateOf derives a group's state and healthy count. The first rule that
// matches decides:
//
//  1. unavailable: the circuit breaker refuses calls right now (open, or
//     half-open with its trial call in flight), or no member is in
//     rotation;
//  2. cold: every member's provider is COLD and every member is in
//     rotation with no failure counted, i.e. nothing runs and nothing is
//     wrong (a new group, or one whose members were stopped or collected
//     idle);
//  3. healthy: healthy_count ≥ min_healthy;
//  4. degraded: fewer healthy members than min_healthy (possibly none) but
//     at least one member in rotation, which calls still try.
func stateOf(members []MemberStatus, minHealthy int, refusing bool) (State, int) {
	healthy, inRotation, quiet := 0, 0, true
	for _, m := range members {
		if m.healthy() {
			healthy++
		}
		if m.InRotation {
			inRotation++
		}
		if m.State != provider.Cold || !m.InRotation || m.ConsecutiveFailures > 0 {
			quiet = false
		}
	}
	switch {
	case refusing || inRotation == 0:
		return Unavailable, healthy
	case quiet:
		return Cold, healthy
	case healthy >= max(minHealthy, 1):
		return Healthy, healthy
	}
	return Degraded, healthy
}
