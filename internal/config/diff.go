package config

import (
	"reflect"
	"sort"
)

// ServerDiff says what a reload changes, by top-level server ID.
type ServerDiff struct {
	Added, Removed, Updated, Unchanged []string // each sorted
}

// Diff compares the top-level servers of two configs; a nil config has no
// servers. Any difference in a server, including in its group members or in
// a default it inherits (execution.default_provider_concurrency), makes it
// Updated: the config cannot know which changes a running provider can
// absorb, so it reports them all and lets the caller decide.
func Diff(oldCfg, newCfg *Config) ServerDiff {
	var before, after map[string]*Server
	if oldCfg != nil {
		before = oldCfg.Servers
	}
	if newCfg != nil {
		after = newCfg.Servers
	}
	var d ServerDiff
	for id, s := range after {
		prev, ok := before[id]
		switch {
		case !ok:
			d.Added = append(d.Added, id)
		case reflect.DeepEqual(prev, s):
			d.Unchanged = append(d.Unchanged, id)
		default:
			d.Updated = append(d.Updated, id)
		}
	}
	for id := range before {
		if _, ok := after[id]; !ok {
			d.Removed = append(d.Removed, id)
		}
	}
	for _, l := range [][]string{d.Added, d.Removed, d.Updated, d.Unchanged} {
		sort.Strings(l)
	}
	return d
}
