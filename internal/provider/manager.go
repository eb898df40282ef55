package provider

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mcp-hangar/hangar/internal/config"
)

// Manager holds the providers by ID. Lookups take a read lock only; no
// provider I/O happens under it.
type Manager struct {
	launcher  Launcher
	opts      Options
	listeners *listeners

	mu        sync.RWMutex
	providers map[string]*Provider
	sorted    []*Provider       // by ID, rebuilt on change
	members   map[string]string // group member ID → group ID
}

// NewManager returns an empty manager; opts apply to every provider.
func NewManager(launcher Launcher, opts Options) *Manager {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Events == nil {
		opts.Events = NoEvents{}
	}
	l := &listeners{first: opts.Events}
	opts.Events = l
	return &Manager{launcher: launcher, opts: opts, listeners: l, providers: map[string]*Provider{}, members: map[string]string{}}
}

// Listen adds e to the listeners of every provider's events, those
// registered already included: for a listener made after the manager (the
// front door, which hears what changes the served set).
func (m *Manager) Listen(e Events) {
	for {
		old := m.listeners.more.Load()
		var next []Events
		if old != nil {
			next = slices.Clone(*old)
		}
		next = append(next, e)
		if m.listeners.more.CompareAndSwap(old, &next) {
			return
		}
	}
}

// listeners are the manager's events: Options.Events, then those added
// with Listen.
type listeners struct {
	first Events
	more  atomic.Pointer[[]Events]
}

func (l *listeners) each(f func(Events)) {
	f(l.first)
	if more := l.more.Load(); more != nil {
		for _, e := range *more {
			f(e)
		}
	}
}

func (l *listeners) StateChanged(id string, from, to State) {
	l.each(func(e Events) { e.StateChanged(id, from, to) })
}
func (l *listeners) ColdStart(id string, d time.Duration, err error) {
	l.each(func(e Events) { e.ColdStart(id, d, err) })
}
func (l *listeners) BackendExited(id, exit string, oom bool) {
	l.each(func(e Events) { e.BackendExited(id, exit, oom) })
}
func (l *listeners) CallDone(id, tool, outcome string, d time.Duration) {
	l.each(func(e Events) { e.CallDone(id, tool, outcome, d) })
}
func (l *listeners) HealthChecked(id string, err error) {
	l.each(func(e Events) { e.HealthChecked(id, err) })
}
func (l *listeners) Removed(id string) { l.each(func(e Events) { e.Removed(id) }) }
func (l *listeners) QuarantineChanged(id string) {
	l.each(func(e Events) { e.QuarantineChanged(id) })
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

// AddMember registers a COLD provider for a member of group unless its ID
// is taken. Its events go to obs as well as to the manager's, so that the
// group sees every outcome of its member, direct calls included. Like the
// manager's, obs.StateChanged is called with the provider's lock held.
func (m *Manager) AddMember(spec *config.Server, group string, obs Events) (*Provider, bool) {
	opts := m.opts
	opts.Events = teeEvents{m.opts.Events, obs}
	m.mu.Lock()
	if _, ok := m.providers[spec.ID]; ok {
		m.mu.Unlock()
		return nil, false
	}
	p := New(spec, m.launcher, opts)
	m.providers[spec.ID] = p
	m.members[spec.ID] = group
	m.resort()
	m.mu.Unlock()
	m.opts.Events.StateChanged(spec.ID, "", Cold)
	return p, true
}

// GroupOf returns the group a provider is a member of.
func (m *Manager) GroupOf(id string) (string, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g, ok := m.members[id]
	return g, ok
}

// ErrNotRunning is Probe's answer for a provider with no backend.
var ErrNotRunning = errors.New("not running")

// Probe health-checks id's running backend now, off the workers' schedule
// (a group rebalance): tools/list within the health check timeout, which
// also refreshes the tool cache. A success brings a DEGRADED provider back;
// a failure is counted but changes no state: the workers decide that.
func (m *Manager) Probe(ctx context.Context, id string) error {
	p, ok := m.Get(id)
	if !ok {
		return &Error{Kind: KindUnknownServer, ID: id}
	}
	p.mu.Lock()
	inst := p.inst
	p.mu.Unlock()
	if inst == nil {
		return ErrNotRunning
	}
	cctx, cancel := context.WithTimeout(ctx, healthCheckTimeout)
	tools, err := inst.b.ListTools(cctx)
	var q *Quarantine
	if err == nil {
		q = p.vetTools(cctx, tools)
	}
	cancel()
	now := p.opts.Now()
	p.mu.Lock()
	if p.inst != inst {
		// Stopped or restarted meanwhile; the result is stale.
		p.mu.Unlock()
		return ErrNotRunning
	}
	p.health.LastCheck = now
	if err == nil {
		p.tools = tools
		p.applyVet(q, tools)
		p.health.ConsecutiveFailures = 0
		p.health.LastSuccessAt = now
		p.degradations = 0
		if p.state == Degraded {
			p.setState(Ready)
		}
	} else {
		p.health.ConsecutiveFailures++
		p.health.LastFailureAt = now
	}
	p.mu.Unlock()
	if err == nil {
		p.syncQuarantine(ctx)
	}
	p.events().HealthChecked(p.id, err)
	return err
}

// teeEvents sends every event to both a and b.
type teeEvents struct{ a, b Events }

func (t teeEvents) StateChanged(id string, from, to State) {
	t.a.StateChanged(id, from, to)
	t.b.StateChanged(id, from, to)
}
func (t teeEvents) ColdStart(id string, d time.Duration, err error) {
	t.a.ColdStart(id, d, err)
	t.b.ColdStart(id, d, err)
}
func (t teeEvents) BackendExited(id, exit string, oom bool) {
	t.a.BackendExited(id, exit, oom)
	t.b.BackendExited(id, exit, oom)
}
func (t teeEvents) CallDone(id, tool, outcome string, d time.Duration) {
	t.a.CallDone(id, tool, outcome, d)
	t.b.CallDone(id, tool, outcome, d)
}
func (t teeEvents) HealthChecked(id string, err error) {
	t.a.HealthChecked(id, err)
	t.b.HealthChecked(id, err)
}
func (t teeEvents) Removed(id string) {
	t.a.Removed(id)
	t.b.Removed(id)
}
func (t teeEvents) QuarantineChanged(id string) {
	t.a.QuarantineChanged(id)
	t.b.QuarantineChanged(id)
}

// Remove unregisters id and returns it, for the caller to retire.
func (m *Manager) Remove(id string) (*Provider, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.providers[id]
	if ok {
		delete(m.providers, id)
		delete(m.members, id)
		m.resort()
		p.removed.Store(true)
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

// EngineBack runs after the container engine came back: every DEAD
// provider gets a fresh start (Provider.EngineBack).
func (m *Manager) EngineBack() {
	for _, p := range m.List() {
		p.EngineBack()
	}
}

// Tracks reports whether a running provider owns the container (reaper).
func (m *Manager) Tracks(containerID string) bool {
	for _, p := range m.List() {
		if p.TracksContainer(containerID) {
			return true
		}
	}
	return false
}
