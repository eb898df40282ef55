package registry

import (
	"fmt"
	"slices"
	"strings"
)

// nameMatches is the naming rule of hangar_load: name is the server's
// full name, or (when name has no "/") its last path segment, so that
// "filesystem" names "io.github.x/filesystem". Case does not matter.
func nameMatches(full, name string) bool {
	if strings.EqualFold(full, name) {
		return true
	}
	return !strings.Contains(name, "/") && strings.EqualFold(lastSegment(full), name)
}

// Match picks the entry that name refers to among a search's entries. A
// server named exactly name wins; otherwise the servers whose last name
// segment is name must be exactly one (several: StatusAmbiguous with
// their names in Matches; none: StatusNotFound). Versions of one server
// count once (the latest one is kept). On success the outcome's Status is
// "" .
func Match(entries []Entry, name string) (Entry, Outcome) {
	name = strings.TrimSpace(name)
	byName := map[string]Entry{}
	var order []string
	for _, e := range entries {
		if deleted(e) || !nameMatches(e.Server.Name, name) {
			continue
		}
		prev, seen := byName[e.Server.Name]
		if !seen {
			order = append(order, e.Server.Name)
		}
		if !seen || (!isLatest(prev) && isLatest(e)) {
			byName[e.Server.Name] = e
		}
	}
	// A full name: exact spelling first, then any case.
	for _, n := range order {
		if n == name {
			return byName[n], Outcome{}
		}
	}
	for _, n := range order {
		if strings.EqualFold(n, name) {
			return byName[n], Outcome{}
		}
	}
	switch len(order) {
	case 0:
		return Entry{}, Outcome{Status: StatusNotFound, Message: fmt.Sprintf("no MCP server named %q was found", name)}
	case 1:
		return byName[order[0]], Outcome{}
	}
	slices.Sort(order)
	return Entry{}, Outcome{
		Status:  StatusAmbiguous,
		Message: fmt.Sprintf("%q matches %d MCP servers; call hangar_load again with one of the full names in matches", name, len(order)),
		Matches: order,
	}
}

func isLatest(e Entry) bool { return e.Official != nil && e.Official.IsLatest }
