package catalog

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/mcp-hangar/hangar/internal/config"
)

// Source says where a claim on an ID comes from.
type Source string

// The sources, in precedence order: a claim of an earlier source wins.
const (
	// SourceGroup: a group of the config file and its members. Their IDs
	// are reserved: no other source may take one.
	SourceGroup Source = "group"
	// SourceConfig: a server of the config file.
	SourceConfig Source = "config"
	// SourceInstalled: a server installed through the management protocol.
	SourceInstalled Source = "installed"
	// SourceDiscovery: an approved (or auto-registered) discovered server.
	SourceDiscovery Source = "discovery"
	// SourceHotload: a server loaded from an MCP registry by hangar_load.
	SourceHotload Source = "hotload"
)

// Precedence lists the sources, the winning one first.
var Precedence = []Source{SourceGroup, SourceConfig, SourceInstalled, SourceDiscovery, SourceHotload}

// rank is the position of src in Precedence; lower wins. Unknown sources
// rank last.
func rank(src Source) int {
	if i := slices.Index(Precedence, src); i >= 0 {
		return i
	}
	return len(Precedence)
}

// Valid reports whether src is one of the sources above.
func (s Source) Valid() bool { return slices.Contains(Precedence, s) }

// Entry is one served ID.
type Entry struct {
	ID     string
	Source Source
	// Spec is the server (or group) as its source published it; for a
	// group member, the member's spec.
	Spec *config.Server
	// Group is the ID of the group this entry is a member of; "" for a
	// top-level server or a group.
	Group string
}

// IsGroup reports whether the entry is a group.
func (e Entry) IsGroup() bool { return e.Spec != nil && e.Spec.Mode == config.ModeGroup }

// Refusal is a claim that is not served, and why.
type Refusal struct {
	ID     string
	Source Source
	// Err is a *RefusedError, or why registering the claim failed.
	Err error
}

// Sentinel errors that a *RefusedError matches with errors.Is.
var (
	// ErrReserved: the ID is a group's or a group member's.
	ErrReserved = errors.New("id reserved by a group")
	// ErrShadowed: a source of higher precedence serves the ID.
	ErrShadowed = errors.New("id served from a source of higher precedence")
)

// RefusedError tells why a claim is not served.
type RefusedError struct {
	ID     string
	Source Source // of the refused claim
	By     Source // of the claim that is served instead
	// Group is set when the ID is reserved: the group it belongs to.
	Group string
	// Member is true when the ID is one of Group's members (false: the
	// group's own ID).
	Member bool
}

func (e *RefusedError) Error() string {
	switch {
	case e.Group != "" && e.Member:
		return fmt.Sprintf("mcp server id %s is reserved: it is a member of group %s", e.ID, e.Group)
	case e.Group != "":
		return fmt.Sprintf("mcp server id %s is reserved: it is the id of group %s", e.ID, e.Group)
	}
	return fmt.Sprintf("mcp server id %s is served from %s, which takes precedence over %s", e.ID, e.By, e.Source)
}

// Is matches ErrReserved or ErrShadowed.
func (e *RefusedError) Is(target error) bool {
	if e.Group != "" {
		return target == ErrReserved
	}
	return target == ErrShadowed
}

// claims are the desired specs of every source, by source and ID.
type claims map[Source]map[string]*config.Server

// resolved is the outcome of precedence: the served entries by ID (group
// members included) and the refused claims.
type resolved struct {
	served  map[string]Entry
	refused map[refusalKey]*RefusedError
}

type refusalKey struct {
	id  string
	src Source
}

// resolve applies the precedence rule to every claim. It is a pure
// function: sources in Precedence order, IDs sorted within a source; the
// first claim on an ID wins. A group claims its ID and its members' IDs at
// once: it is served whole or refused whole.
func resolve(c claims) resolved {
	r := resolved{served: map[string]Entry{}, refused: map[refusalKey]*RefusedError{}}
	sources := slices.Clone(Precedence)
	for src := range c {
		if !slices.Contains(sources, src) {
			sources = append(sources, src)
		}
	}
	for _, src := range sources {
		specs := c[src]
		for _, id := range slices.Sorted(maps.Keys(specs)) {
			spec := specs[id]
			ids := []string{id}
			if spec.Mode == config.ModeGroup {
				for _, m := range spec.Members {
					ids = append(ids, m.ID)
				}
			}
			var blocked *RefusedError
			for _, want := range ids {
				if w, taken := r.served[want]; taken {
					blocked = refusal(id, src, want, w)
					break
				}
			}
			if blocked != nil {
				r.refused[refusalKey{id, src}] = blocked
				continue
			}
			r.served[id] = Entry{ID: id, Source: src, Spec: spec}
			if spec.Mode == config.ModeGroup {
				for _, m := range spec.Members {
					r.served[m.ID] = Entry{ID: m.ID, Source: src, Spec: m, Group: id}
				}
			}
		}
	}
	return r
}

// refusal explains why claim (id, src) loses to the served entry w, which
// holds the ID want (id itself or one of the claim's group members).
func refusal(id string, src Source, want string, w Entry) *RefusedError {
	e := &RefusedError{ID: id, Source: src, By: w.Source}
	switch {
	case w.Group != "":
		e.Group, e.Member = w.Group, true
	case w.IsGroup():
		e.Group = w.ID
	}
	if want != id && e.Group == "" {
		// A member of the refused group is a served server's ID.
		e.ID = want
	}
	return e
}
