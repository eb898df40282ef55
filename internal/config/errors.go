package config

import (
	"sort"
	"strings"
)

// Problem is one thing wrong with a configuration, at one key path such as
// "mcp_servers.math.idle_ttl_s" or "mcp_servers.pool.members[0].image".
type Problem struct {
	Path    string
	Message string
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// ValidationError carries every problem found in a configuration, so that a
// user can fix them all in one edit instead of one per restart.
type ValidationError struct {
	Problems []Problem // sorted by Path
}

// Error lists the problems one per line as "path: message".
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// newValidationError sorts and de-duplicates problems; nil means none.
func newValidationError(problems []Problem) *ValidationError {
	if len(problems) == 0 {
		return nil
	}
	ps := append([]Problem(nil), problems...)
	// Stable so that several problems at one path keep the order in which
	// the walker found them, which follows the order of the schema.
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Path < ps[j].Path })
	out := ps[:0]
	for _, p := range ps {
		if len(out) > 0 && p == out[len(out)-1] {
			continue
		}
		out = append(out, p)
	}
	return &ValidationError{Problems: out}
}
