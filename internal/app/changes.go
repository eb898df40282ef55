package app

import (
	"context"
	"encoding/json"
	"log/slog"
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
		a.applyHotload(cctx, c, log)
	case store.ChangeResync:
		// Notices may have been missed while the feed was down (or
		// before it first listened): read again what they would name.
		a.shareRateLimits(cctx)
		a.reloadInstalls(cctx)
		if d := a.discovery; d != nil {
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

// hotloadParams are a hot-load's parameters as another replica repeats
// it (store.ChangeHotload's ID).
type hotloadParams struct {
	Name            string   `json:"name"`
	ForceUnverified bool     `json:"force_unverified,omitempty"`
	Allow           []string `json:"allow_tools,omitempty"`
	Deny            []string `json:"deny_tools,omitempty"`
}

// replicatedLoader is the hot-loader of a replica: a server loaded or
// unloaded here is loaded or unloaded on the other replicas too (each
// runs its own copy; hot-loaded servers are not stored).
type replicatedLoader struct {
	gateway.HotLoader
	a *App
}

func (l *replicatedLoader) Load(ctx context.Context, progress call.Progress, name string, forceUnverified bool, allow, deny []string) gateway.LoadResult {
	res := l.HotLoader.Load(ctx, progress, name, forceUnverified, allow, deny)
	if res.Status == registry.StatusLoaded {
		id, _ := json.Marshal(hotloadParams{Name: name, ForceUnverified: forceUnverified, Allow: allow, Deny: deny})
		l.a.announce(store.Change{Kind: store.ChangeHotload, ID: string(id)})
	}
	return res
}

func (l *replicatedLoader) Unload(ctx context.Context, id string) gateway.UnloadResult {
	res := l.HotLoader.Unload(ctx, id)
	if res.Status == registry.StatusUnloaded {
		l.a.announce(store.Change{Kind: store.ChangeUnload, ID: id})
	}
	return res
}

// applyHotload repeats another replica's hot-load or unload here, through
// the loader itself (so it is not announced back).
func (a *App) applyHotload(ctx context.Context, c store.Change, log *slog.Logger) {
	l, ok := a.Gateway.HotLoad.(*replicatedLoader)
	if !ok {
		log.Warn("another replica hot-loaded or unloaded a server, but hot-loading is off here")
		return
	}
	if c.Kind == store.ChangeUnload {
		res := l.HotLoader.Unload(ctx, c.ID)
		log.Info("unloaded: another replica unloaded it", "status", res.Status)
		return
	}
	var p hotloadParams
	if err := json.Unmarshal([]byte(c.ID), &p); err != nil || p.Name == "" {
		log.Warn("hot-load of another replica not understood", "error", err)
		return
	}
	res := l.HotLoader.Load(ctx, call.Progress{}, p.Name, p.ForceUnverified, p.Allow, p.Deny) // another replica's load: nobody here waits
	log.Info("hot-loaded: another replica loaded it", "name", p.Name, "status", res.Status, "mcp_server", res.MCPServer)
}

// shareRateLimits divides every rate-limit bucket by the number of live
// replicas: behind a balancer that spreads a client's requests, N replicas
// together then admit the configured rate (see auth.Limiter).
func (a *App) shareRateLimits(ctx context.Context) {
	if a.member == nil || a.Gateway.RateLimiter == nil {
		return
	}
	n, err := a.member.Live(ctx)
	if err != nil {
		a.Log.Warn("live replicas not counted; rate limits keep their share", "component", "replicas", "error", err)
		return
	}
	if old := a.Gateway.RateLimiter.Share(); old != n {
		a.Gateway.RateLimiter.SetShare(n)
		a.Log.Info("rate limits shared by the live replicas", "component", "replicas", "replicas", n, "was", old)
	}
}
