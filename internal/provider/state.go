// Package provider owns a provider's lifecycle: the state machine, the
// single-flight start, per-provider limits, health bookkeeping and the tool
// cache. It knows nothing of Docker; a Launcher starts the backend.
package provider

import "fmt"

// State of a provider (seed 002).
type State string

// States.
const (
	Cold         State = "cold"
	Initializing State = "initializing"
	Ready        State = "ready"
	Degraded     State = "degraded"
	Dead         State = "dead"
)

// Indicator is the hangar_status dashboard tag of a state.
func (s State) Indicator() string {
	switch s {
	case Initializing:
		return "[STARTING]"
	default:
		return "[" + upper(string(s)) + "]"
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// allowed lists the explicit transitions of the state machine.
var allowed = map[State][]State{
	Cold:         {Initializing},
	Initializing: {Ready, Dead, Cold},
	Ready:        {Degraded, Dead, Cold},
	Degraded:     {Ready, Cold, Dead},
	Dead:         {Initializing, Cold},
}

// CanTransition reports whether from → to is a legal transition.
func CanTransition(from, to State) bool {
	for _, s := range allowed[from] {
		if s == to {
			return true
		}
	}
	return false
}

// errIllegal is a programming error: the provider code broke the machine.
func errIllegal(id string, from, to State) error {
	return fmt.Errorf("provider %s: illegal transition %s → %s", id, from, to)
}
