package provider

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/mcp-hangar/hangar/internal/config"
)

// Manager holds the providers by ID. Lookups take a read lock only; no
// provider I/O happens under it.
type Manager struct {
	launcher Launcher
	opts     Options

	mu        sync.RWMutex
	providers map[string]*Provider
	sorted    []*Provider // by ID, rebuilt on change
}

// NewManager returns an empty manager; opts apply to every provider.
func NewManager(launcher Launcher, opts Options) *Manager {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Events == nil {
		opts.Events = NoEvents{}
	}
	return &Manager{launcher: launcher, opts: opts, providers: map[string]*Provider{}}
}

// Get returns the provider with id.
func (m *Manager) Get(id string) (*Provider, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.providers[id]
	return p, ok
}

// List returns the providers sorted by ID. The slice is shared: do not
// modify it.
func (m *Manager) List() []*Provider {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.sorted
}

// Add registers a COLD provider for spec, replacing none: the caller
// removes an old one first.
func (m *Manager) Add(spec *config.Server) *Provider {
	p := New(spec, m.launcher, m.opts)
	m.mu.Lock()
	m.providers[spec.ID] = p
	m.resort()
	m.mu.Unlock()
	m.opts.Events.StateChanged(spec.ID, "", Cold)
	return p
}

// AddIfAbsent registers a COLD provider for spec unless one with its ID
// exists; the check and the insert are one step.
func (m *Manager) AddIfAbsent(spec *config.Server) (*Provider, bool) {
	m.mu.Lock()
	if _, ok := m.providers[spec.ID]; ok {
		m.mu.Unlock()
		return nil, false
	}
	p := New(spec, m.launcher, m.opts)
	m.providers[spec.ID] = p
	m.resort()
	m.mu.Unlock()
	m.opts.Events.StateChanged(spec.ID, "", Cold)
	return p, true
}

// Remove unregisters id and returns it, for the caller to retire.
func (m *Manager) Remove(id string) (*Provider, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.providers[id]
	if ok {
		delete(m.providers, id)
		m.resort()
		m.opts.Events.Removed(id)
	}
	return p, ok
}

func (m *Manager) resort() {
	s := make([]*Provider, 0, len(m.providers))
	for _, p := range m.providers {
		s = append(s, p)
	}
	sort.Slice(s, func(i, j int) bool { return s[i].id < s[j].id })
	m.sorted = s
}

// IDs returns the sorted provider IDs.
func (m *Manager) IDs() []string {
	list := m.List()
	ids := make([]string, len(list))
	for i, p := range list {
		ids[i] = p.id
	}
	return ids
}

// StopAll retires every provider in parallel (shutdown).
func (m *Manager) StopAll(ctx context.Context, reason string) error {
	var g errgroup.Group
	g.SetLimit(16)
	for _, p := range slices.Clone(m.List()) {
		g.Go(func() error { return p.Retire(ctx, reason, false) })
	}
	return g.Wait()
}

// Inflight returns the calls in flight by provider (metrics).
func (m *Manager) Inflight() map[string]int {
	out := map[string]int{}
	for _, p := range m.List() {
		p.mu.Lock()
		out[p.id] = p.inflight
		p.mu.Unlock()
	}
	return out
}

// Tracks reports whether a running provider owns the container (reaper).
func (m *Manager) Tracks(containerID string) bool {
	for _, p := range m.List() {
		if p.Snapshot().ContainerID == containerID {
			return true
		}
	}
	return false
}
