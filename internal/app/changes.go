package app

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/registry"
	"github.com/mcp-hangar/hangar/internal/store"
)

// changeTimeout bounds the application of one change from another
// replica (a store read and a catalog publish; stops of replaced servers
// run in the background of the catalog).
const changeTimeout = 30 * time.Second

// replicaChanges follows what the other replicas of the instance change
// in the shared store and applies each change through the code path a
// local change takes; it announces this replica's config reloads.
type replicaChanges struct {
	feed store.Changes
	// remoteReload is set while a reload another replica asked for runs,
	// so that it is not announced back.
	remoteReload atomic.Bool
}

// followChanges starts applying other replicas' changes; nothing without
// a shared store.
func (a *App) followChanges(ctx context.Context) {
	feed, ok := a.Store.(store.Changes)
	if !ok || a.member == nil {
		return
	}
	a.changes = &replicaChanges{feed: feed}
	changes := feed.Watch(ctx)
	a.goOwned(func() {
		for c := range changes {
			a.applyRecovering(ctx, c)
		}
	})
	// The others share their rate limits with this replica from now on.
	a.announce(store.Change{Kind: store.ChangeMembers})
}

// applyRecovering is applyChange in the feed's loop: a panic applying
// one change is logged, and the next change is applied.
func (a *App) applyRecovering(ctx context.Context, c store.Change) {
	defer func() {
		if p := recover(); p != nil {
			a.Log.Error("applying another replica's change panicked", "component", "replicas", "change", c.Kind, "id", c.ID, "panic", p)
		}
	}()
	a.applyChange(ctx, c)
}

// applyChange applies one change another replica made: the changed thing
// is read from the store again and served as if it had been changed here
// (the catalog tells the front door, which sends list_changed to this
// replica's clients).
func (a *App) applyChange(ctx context.Context, c store.Change) {
	cctx, cancel := context.WithTimeout(ctx, changeTimeout)
	defer cancel()
	log := a.Log.With("component", "replicas", "change", c.Kind, "id", c.ID)
	switch c.Kind {
	case store.ChangeInstall:
		a.reloadInstalls(cctx)
	case store.ChangeDecision:
		a.reloadDecision(cctx, c.ID)
	case store.ChangeConfig:
		r := a.remoteReload(cctx)
		log.Info("config reloaded: another replica reloaded its config", "status", r.Status, "message", r.Message)
	case store.ChangeMembers:
		a.shareRateLimits(cctx)
	case store.ChangeHotload, store.ChangeUnload:
		a.kickHotloads()
	case store.ChangeResync:
		// Notices may have been missed while the feed was down (or
		// before it first listened): read again what they would name.
		a.shareRateLimits(cctx)
		a.reloadInstalls(cctx)
		a.kickHotloads()
		if d := a.discovery; d != nil {
			// Every decision, a candidate being checked included: its
			// check registers it if it was approved meanwhile.
			if err := d.Resync(cctx); err != nil {
				log.Warn("discovery decisions not read again", "error", err)
			}
			for _, p := range d.Pending() {
				a.reloadDecision(cctx, p.Name)
			}
			for _, q := range d.Quarantined() {
				a.reloadDecision(cctx, q.Name)
			}
		}
	default:
		log.Debug("change of an unknown kind ignored (a newer replica?)")
		return
	}
	log.Debug("applied a change from another replica")
}

// kickHotloads has the stored hot-loads applied here (in the background:
// a load may take a while).
func (a *App) kickHotloads() {
	if l, ok := a.Gateway.HotLoad.(*replicatedLoader); ok {
		l.Kick()
	}
}

// remoteReload reloads the config file without announcing it back.
func (a *App) remoteReload(ctx context.Context) gateway.ReloadResult {
	a.changes.remoteReload.Store(true)
	defer a.changes.remoteReload.Store(false)
	return a.Gateway.Reload(ctx, true)
}

func (a *App) reloadInstalls(ctx context.Context) {
	if err := a.Manage.Reload(ctx); err != nil {
		a.Log.Error("installed servers not reloaded after another replica's change", "component", "replicas", "error", err)
	}
	// A policy change may leave the served set as it was and change only
	// what the front door lists (allow_implicit_invocation).
	if fd := a.Gateway.FrontDoor; fd != nil {
		fd.Kick()
	}
}

// reloadDecision applies another replica's decisions about id: an
// approval or quarantine of a discovered server, and the approval of a
// provider quarantine (hangar_approve there). A new provider quarantine
// is not taken over: each replica vets the tools and image its own
// container serves, and quarantines on its own.
func (a *App) reloadDecision(ctx context.Context, id string) {
	if a.discovery != nil {
		if err := a.discovery.Decided(ctx, id); err != nil {
			a.Log.Warn("another replica's decision not applied", "component", "replicas", "mcp_server", id, "error", err)
		}
	}
	kept, err := a.quarantines.Reload(ctx, id)
	if err != nil {
		a.Log.Warn("another replica's decision not applied", "component", "replicas", "mcp_server", id, "error", err)
		return
	}
	if p, ok := a.Providers.Get(id); ok && !kept && p.Reconsider(ctx) {
		if fd := a.Gateway.FrontDoor; fd != nil {
			fd.Kick() // its tools are served again
		}
	}
}

// configReloaded tells the other replicas that this one put a reloaded
// config in force, unless they asked for it.
func (a *App) configReloaded() {
	if a.changes == nil || a.changes.remoteReload.Load() {
		return
	}
	a.announce(store.Change{Kind: store.ChangeConfig})
}

// announce tells the other replicas of a change that is no store write;
// a failure is logged (the change holds here).
func (a *App) announce(c store.Change) {
	if a.changes == nil {
		return
	}
	// Not cut off by shutdown: a replica leaving announces it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), 10*time.Second)
	defer cancel()
	if err := a.changes.feed.Announce(ctx, c); err != nil {
		a.Log.Warn("other replicas not told of a change", "component", "replicas", "change", c.Kind, "error", err)
	}
}

// replicatedLoader is the hot-loader of a replica: what is hot-loaded or
// unloaded here is stored (store.Hotloads), and every replica runs what is
// stored (sync), one started later or whose change feed was down too.
// Each replica runs its own copy; the stored row names the registry
// server and the load's parameters, and each replica resolves it (with
// the secrets of its own environment).
type replicatedLoader struct {
	gateway.HotLoader
	store store.Hotloads
	log   *slog.Logger
	// kick asks the sync loop for a sync (one slot: kicks during a sync
	// make one more).
	kick chan struct{}

	mu sync.Mutex
	// params are the parameters each registry name was loaded with here,
	// stored: a server of the loader that is not in params is being
	// loaded here and not stored yet, and a sync leaves it alone.
	params map[string]store.Hotload
	// waiters are closed when a sync that began after they were added
	// has ended (AwaitServer).
	waiters []chan struct{}
	// seq counts the local loads and unloads; touched holds, per registry
	// name, the count at its last one. A sync leaves alone a name touched
	// after it began reading the store: what it read of that name is
	// older than what runs here, and the touch kicks another sync.
	seq     uint64
	touched map[string]uint64
}

// awaitLimit bounds how long a call naming a server this replica does not
// serve waits for the stored hot-loads to be applied here.
const awaitLimit = 30 * time.Second

func newReplicatedLoader(inner gateway.HotLoader, st store.Hotloads, log *slog.Logger) *replicatedLoader {
	return &replicatedLoader{HotLoader: inner, store: st, log: log, kick: make(chan struct{}, 1),
		params: map[string]store.Hotload{}, touched: map[string]uint64{}}
}

func (l *replicatedLoader) Load(ctx context.Context, progress call.Progress, name string, forceUnverified bool, allow, deny []string) gateway.LoadResult {
	before := l.ids()
	res := l.HotLoader.Load(ctx, progress, name, forceUnverified, allow, deny)
	if res.Status != registry.StatusLoaded {
		return res
	}
	h := store.Hotload{Name: res.Name, ForceUnverified: forceUnverified, AllowTools: allow, DenyTools: deny}
	if err := l.store.PutHotload(ctx, h); err != nil {
		// Acknowledged hot-loads are stored: one that is not runs nowhere.
		if !before[res.MCPServer] {
			l.HotLoader.Unload(context.WithoutCancel(ctx), res.MCPServer)
		}
		return gateway.LoadResult{Status: registry.StatusFailed, Name: res.Name,
			Message: fmt.Sprintf("%s was not hot-loaded: the load could not be stored for the other replicas: %v", res.Name, err)}
	}
	l.mu.Lock()
	l.params[h.Name] = h
	l.touch(h.Name)
	l.mu.Unlock()
	l.Kick()
	return res
}

// touch records a local load or unload of name; l.mu is held.
func (l *replicatedLoader) touch(name string) {
	l.seq++
	l.touched[name] = l.seq
}

func (l *replicatedLoader) Unload(ctx context.Context, id string) gateway.UnloadResult {
	if name := l.nameOf(id); name != "" {
		// Stored first: an unload that cannot be stored is not made.
		if err := l.store.DeleteHotload(ctx, name); err != nil {
			return gateway.UnloadResult{Status: registry.StatusFailed, MCPServer: id,
				Message: fmt.Sprintf("%s was not unloaded: the unload could not be stored for the other replicas: %v", id, err)}
		}
		l.mu.Lock()
		delete(l.params, name)
		l.touch(name)
		l.mu.Unlock()
	}
	res := l.HotLoader.Unload(ctx, id)
	l.Kick()
	return res
}

// ids are the IDs of the servers hot-loaded here.
func (l *replicatedLoader) ids() map[string]bool {
	out := map[string]bool{}
	for _, s := range l.HotLoader.Runtime() {
		out[s.ID] = true
	}
	return out
}

// nameOf is the registry name of the server hot-loaded here as id.
func (l *replicatedLoader) nameOf(id string) string {
	for _, s := range l.HotLoader.Runtime() {
		if s.ID == id {
			return s.Name
		}
	}
	return ""
}

// Kick asks for a sync without waiting for it.
func (l *replicatedLoader) Kick() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Run syncs at every kick until ctx ends.
func (l *replicatedLoader) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.kick:
		}
		l.mu.Lock()
		waiters := l.waiters
		l.waiters = nil
		l.mu.Unlock()
		l.sync(ctx)
		for _, w := range waiters {
			close(w)
		}
	}
}

// AwaitServer is for a call naming id, which this replica does not serve:
// another replica may have hot-loaded it a moment ago (its answer given,
// the row stored) and this one not applied it yet. It has the stored
// hot-loads applied here now, waits for that (at most awaitLimit), and
// reports whether id is served then. A sync with nothing to apply is one
// store read.
func (l *replicatedLoader) AwaitServer(ctx context.Context, id string) bool {
	if l.ids()[id] {
		return true
	}
	done := make(chan struct{})
	l.mu.Lock()
	l.waiters = append(l.waiters, done)
	l.mu.Unlock()
	l.Kick()
	ctx, cancel := context.WithTimeout(ctx, awaitLimit)
	defer cancel()
	select {
	case <-done:
		return l.ids()[id]
	case <-ctx.Done():
		return false
	}
}

// sync brings what is hot-loaded here in line with what is stored: loads
// what is stored and not run here (or run with other parameters), unloads
// what this replica stored or synced and is no longer stored. A name
// loaded or unloaded here since the store was read is left to the next
// sync.
func (l *replicatedLoader) sync(ctx context.Context) {
	l.mu.Lock()
	began := l.seq
	l.mu.Unlock()
	want, err := l.store.Hotloads(ctx)
	if err != nil {
		l.log.Warn("stored hot-loads not read; this replica's may differ until the next change", "error", err)
		return
	}
	// fresh: nothing was loaded or unloaded here under name since the read.
	fresh := func(name string) bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.touched[name] <= began
	}
	defer func() {
		l.mu.Lock()
		maps.DeleteFunc(l.touched, func(_ string, at uint64) bool { return at <= began })
		l.mu.Unlock()
	}()
	have := map[string]string{} // name → ID
	for _, s := range l.HotLoader.Runtime() {
		have[s.Name] = s.ID
	}
	stored := map[string]bool{}
	for _, h := range want {
		stored[h.Name] = true
		l.mu.Lock()
		p, known := l.params[h.Name]
		l.mu.Unlock()
		id, running := have[h.Name]
		if (running && known && sameLoad(p, h)) || !fresh(h.Name) {
			continue
		}
		if running && known {
			l.HotLoader.Unload(ctx, id) // another replica loaded it anew, with other parameters
		} else if running {
			continue // being loaded here: its own row comes when it is done
		}
		res := l.HotLoader.Load(ctx, call.Progress{}, h.Name, h.ForceUnverified, h.AllowTools, h.DenyTools) // nobody here waits
		if res.Status != registry.StatusLoaded {
			l.log.Warn("a stored hot-load does not run here", "name", h.Name, "status", res.Status, "message", res.Message)
			continue
		}
		l.mu.Lock()
		l.params[h.Name] = h
		l.mu.Unlock()
		l.log.Info("hot-loaded: stored by another replica", "name", h.Name, "mcp_server", res.MCPServer)
	}
	for name, id := range have {
		if !fresh(name) {
			continue
		}
		l.mu.Lock()
		_, known := l.params[name]
		if !stored[name] && known {
			delete(l.params, name)
		}
		l.mu.Unlock()
		if stored[name] || !known {
			continue
		}
		res := l.HotLoader.Unload(ctx, id)
		l.log.Info("unloaded: no longer stored (another replica unloaded it)", "name", name, "mcp_server", id, "status", res.Status)
	}
}

func sameLoad(a, b store.Hotload) bool {
	return a.ForceUnverified == b.ForceUnverified && slices.Equal(a.AllowTools, b.AllowTools) && slices.Equal(a.DenyTools, b.DenyTools)
}

// startHotloads begins following the stored hot-loads: a replica that
// finds no other live one starts the instance afresh, and the hot-loads of
// its last run go (they are ephemeral); the others run what is stored.
func (a *App) startHotloads(ctx context.Context) {
	l, ok := a.Gateway.HotLoad.(*replicatedLoader)
	if !ok {
		return
	}
	if n, err := a.member.Live(ctx); err == nil && n == 1 {
		if err := l.store.ClearHotloads(ctx); err != nil {
			a.Log.Warn("the last run's hot-loads not cleared", "component", "replicas", "error", err)
		}
	}
	a.goOwned(func() { l.Run(ctx) })
	l.Kick()
}

// shareRateLimits counts the live replicas (hangar_replicas_live) and
// divides every rate-limit bucket by their number: behind a balancer that
// spreads a client's requests, N replicas together then admit the
// configured rate (see auth.Limiter).
func (a *App) shareRateLimits(ctx context.Context) {
	if a.member == nil {
		return
	}
	n, err := a.member.Live(ctx)
	if err != nil {
		a.Log.Warn("live replicas not counted; rate limits keep their share", "component", "replicas", "error", err)
		return
	}
	a.Metrics.ReplicasLive(n)
	if a.Gateway.RateLimiter == nil {
		return
	}
	if old := a.Gateway.RateLimiter.Share(); old != n {
		a.Gateway.RateLimiter.SetShare(n)
		a.Log.Info("rate limits shared by the live replicas", "component", "replicas", "replicas", n, "was", old)
	}
}
