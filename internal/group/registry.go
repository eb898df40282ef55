package group

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// Registry holds the groups by ID and registers their members with the
// provider manager.
type Registry struct {
	mgr  *provider.Manager
	opts Options

	mu     sync.RWMutex
	groups map[string]*Group
	sorted []*Group // by ID, rebuilt on change
}

// NewRegistry returns an empty registry whose groups' members live in mgr.
func NewRegistry(mgr *provider.Manager, opts Options) *Registry {
	return &Registry{mgr: mgr, opts: opts.withDefaults(), groups: map[string]*Group{}}
}

// Add registers the group spec describes and its members, all COLD. It
// registers nothing when the group's ID or a member's ID is taken.
func (r *Registry) Add(spec *config.Server) (*Group, error) {
	if spec.Mode != config.ModeGroup {
		return nil, fmt.Errorf("add group %s: mode is %q, not group", spec.ID, spec.Mode)
	}
	g := newGroup(spec, r.mgr, r.opts)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.groups[spec.ID]; ok {
		return nil, fmt.Errorf("add group %s: a group with this id exists", spec.ID)
	}
	for i, ms := range spec.Members {
		p, ok := r.mgr.AddMember(ms, spec.ID, memberEvents{g: g, m: g.members[i]})
		if !ok {
			for _, added := range g.members[:i] {
				r.unregister(added.p)
				_ = added.p.Retire(context.Background(), "group_rejected", false)
			}
			return nil, fmt.Errorf("add group %s: member id %s is already registered", spec.ID, ms.ID)
		}
		g.members[i].p = p
	}
	r.groups[spec.ID] = g
	r.resort()
	return g, nil
}

// Remove unregisters group id and its members and returns it, for the
// caller to Retire.
func (r *Registry) Remove(id string) (*Group, bool) {
	r.mu.Lock()
	g, ok := r.groups[id]
	if ok {
		delete(r.groups, id)
		r.resort()
	}
	r.mu.Unlock()
	if !ok {
		return nil, false
	}
	g.retire()
	for _, m := range g.members {
		r.unregister(m.p)
	}
	return g, true
}

// unregister removes p from the manager unless its ID now names another
// provider.
func (r *Registry) unregister(p *provider.Provider) {
	if cur, ok := r.mgr.Get(p.ID()); ok && cur == p {
		r.mgr.Remove(p.ID())
	}
}

// Retire stops the members of a removed group for good, in parallel; with
// graceful each first waits (until ctx ends) for its calls in flight.
func (g *Group) Retire(ctx context.Context, reason string, graceful bool) error {
	g.retire()
	var mu sync.Mutex
	var errs []string
	g.eachMember(func(m *member) {
		if err := m.p.Retire(ctx, reason, graceful); err != nil {
			mu.Lock()
			errs = append(errs, fmt.Sprintf("%s: %v", m.p.ID(), err))
			mu.Unlock()
		}
	})
	if len(errs) > 0 {
		return fmt.Errorf("retire group %s: %s", g.id, joinSorted(errs))
	}
	return nil
}

// Get returns the group with id.
func (r *Registry) Get(id string) (*Group, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	g, ok := r.groups[id]
	return g, ok
}

// List returns the groups sorted by ID. The slice is shared: do not modify
// it.
func (r *Registry) List() []*Group {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.sorted
}

func (r *Registry) resort() {
	s := make([]*Group, 0, len(r.groups))
	for _, g := range r.groups {
		s = append(s, g)
	}
	sort.Slice(s, func(i, j int) bool { return s[i].id < s[j].id })
	r.sorted = s
}
