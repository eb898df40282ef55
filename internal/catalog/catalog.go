// Package catalog owns every servable ID: which IDs exist, from which
// source, with which spec. Sources publish the specs they want served;
// one reconciler decides collisions and applies the difference to the
// provider manager and the group registry (register, replace, stop,
// remove). No other package keeps its own list of IDs.
//
// # Sources and precedence
//
// A source publishes its whole desired set (Publish; the config file and
// its reloads, installs) or claims and withdraws single IDs (Put, Delete;
// discovery and hot-load). When two sources claim one ID, the first in
//
//	group > config > installed > discovery > hotload
//
// is served and the others are refused. Group IDs and their members' IDs
// are reserved: no other source may take one, whatever it is. A refused
// claim is kept, is visible (Refused, RefusalOf, and a "refused" Change)
// and is served as soon as the claim that beats it goes away.
//
// # Notifications
//
// Every Publish, Put or Delete that changes something sends its changes as
// one Batch to each subscriber (Subscribe), in order, so the front door can
// send one list_changed per batch.
package catalog

import (
	"context"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mcp-hangar/hangar/internal/config"
)

// Action is what a Change did to an ID.
type Action string

// Actions of a Change.
const (
	Added   Action = "added"
	Updated Action = "updated" // spec or source changed: the old one was stopped
	Removed Action = "removed"
	Refused Action = "refused" // a claim is not served (Reason says why)
)

// Change is one ID's change in a Batch.
type Change struct {
	ID     string
	Source Source
	Action Action
	// Reason is the publisher's reason (config_reload, discovery_removed,
	// ...), or for Refused why the claim is not served.
	Reason string
	// Group is set for a member of a group.
	Group string
}

// Batch is the changes of one Publish, Put or Delete.
type Batch []Change

// Runtime is where the catalog's decisions take effect: the provider
// manager and the group registry (see Apply).
type Runtime interface {
	// AddServer registers a COLD provider for spec.
	AddServer(spec *config.Server) error
	// AddGroup registers the group spec describes and its members, COLD.
	AddGroup(spec *config.Server) error
	// Remove unregisters the server or group id (with its members) and
	// returns how to stop it for good; ok is false when nothing has id.
	Remove(id string) (retire func(ctx context.Context, reason string, graceful bool) error, ok bool)
}

// Field names of the catalog's log lines.
const (
	FieldID     = "mcp_server"
	FieldSource = "source"
	FieldAction = "action"
	FieldReason = "reason"
	FieldGroup  = "group"
	FieldError  = "error"
)

const (
	// stopLimit caps providers stopped at once.
	stopLimit = 8
	// gracefulWait bounds how long a graceful stop waits for calls in flight.
	gracefulWait = 60 * time.Second
	// stopWait bounds a stop that does not wait for calls in flight.
	stopWait = 30 * time.Second
)

// Publication is a change of one or more sources' whole desired sets,
// applied as one batch.
type Publication struct {
	// Sets replaces each listed source's desired specs; a source with a
	// nil or empty set withdraws every claim it had. Sources not listed
	// keep theirs.
	Sets map[Source][]*config.Server
	// Reason is the stop reason of what this publication stops.
	Reason string
	// Graceful stops wait (a bounded while) for calls in flight.
	Graceful bool
}

// Catalog is the one owner of servable IDs.
type Catalog struct {
	rt  Runtime
	log *slog.Logger

	// mu serializes changes: one reconcile at a time, and batches reach
	// subscribers in the order they were applied.
	mu     sync.Mutex
	claims claims

	// viewMu guards view, replaced whole after each reconcile, so readers
	// never wait for a stop in progress.
	viewMu sync.RWMutex
	view   view

	subMu  sync.Mutex
	subs   map[int]func(Batch)
	nextID int
}

// view is what is served and what is refused.
type view struct {
	served  map[string]Entry
	sorted  []Entry              // served, by ID: List is read on every hangar_list
	refused map[refusalKey]error // *RefusedError, or why applying failed
}

// New returns an empty catalog that applies its decisions to rt.
func New(rt Runtime, log *slog.Logger) *Catalog {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Catalog{
		rt: rt, log: log, claims: claims{}, subs: map[int]func(Batch){},
		view: view{served: map[string]Entry{}, refused: map[refusalKey]error{}},
	}
}

// Publish replaces src's desired set with specs and applies the
// difference; reason is the stop reason of what it stops.
func (c *Catalog) Publish(ctx context.Context, src Source, specs []*config.Server, reason string) Batch {
	return c.PublishSets(ctx, Publication{Sets: map[Source][]*config.Server{src: specs}, Reason: reason})
}

// PublishConfig publishes cfg's servers (source config) and groups with
// their members (source group) as one batch; reason is the stop reason of
// what it removes or replaces.
func (c *Catalog) PublishConfig(ctx context.Context, cfg *config.Config, reason string, graceful bool) Batch {
	var servers, groups []*config.Server
	for _, id := range slices.Sorted(maps.Keys(cfg.Servers)) {
		s := cfg.Servers[id]
		if s.Mode == config.ModeGroup {
			groups = append(groups, s)
		} else {
			servers = append(servers, s)
		}
	}
	return c.PublishSets(ctx, Publication{
		Sets:     map[Source][]*config.Server{SourceConfig: servers, SourceGroup: groups},
		Reason:   reason,
		Graceful: graceful,
	})
}

// PublishSets applies a Publication: several sources at once, one batch.
func (c *Catalog) PublishSets(ctx context.Context, p Publication) Batch {
	c.mu.Lock()
	defer c.mu.Unlock()
	for src, specs := range p.Sets {
		set := make(map[string]*config.Server, len(specs))
		for _, s := range specs {
			set[s.ID] = s
		}
		c.claims[src] = set
	}
	return c.reconcile(ctx, p.Reason, p.Graceful)
}

// Put claims spec.ID for src (replacing src's earlier claim on it) and
// applies it. The claim is kept even when it is refused: the error (a
// *RefusedError, errors.Is ErrReserved or ErrShadowed) says why it is not
// served now; Delete withdraws it.
func (c *Catalog) Put(ctx context.Context, src Source, spec *config.Server, reason string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.claims[src] == nil {
		c.claims[src] = map[string]*config.Server{}
	}
	c.claims[src][spec.ID] = spec
	c.reconcile(ctx, reason, false)
	return c.RefusalOf(src, spec.ID)
}

// Delete withdraws src's claim on id and applies that; it reports whether
// there was one. Claims of other sources on id are not touched.
func (c *Catalog) Delete(ctx context.Context, src Source, id, reason string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.claims[src][id]; !ok {
		return false
	}
	delete(c.claims[src], id)
	c.reconcile(ctx, reason, false)
	return true
}

// Check tells whether a claim of src on id would be served, without
// claiming: nil, or a *RefusedError naming what holds the ID.
func (c *Catalog) Check(src Source, id string) error {
	c.viewMu.RLock()
	defer c.viewMu.RUnlock()
	e, ok := c.view.served[id]
	if !ok || (e.Source == src && e.Group == "") || rank(e.Source) > rank(src) {
		return nil
	}
	return refusal(id, src, id, e)
}

// Get returns the served entry with id (a server, a group or a member).
func (c *Catalog) Get(id string) (Entry, bool) {
	c.viewMu.RLock()
	defer c.viewMu.RUnlock()
	e, ok := c.view.served[id]
	return e, ok
}

// List returns every served entry, members included, sorted by ID. The
// slice is shared: do not modify it.
func (c *Catalog) List() []Entry {
	c.viewMu.RLock()
	defer c.viewMu.RUnlock()
	return c.view.sorted
}

// RefusalOf returns why src's claim on id is not served; nil when it is
// served or when src has no claim on id.
func (c *Catalog) RefusalOf(src Source, id string) error {
	c.viewMu.RLock()
	defer c.viewMu.RUnlock()
	return c.view.refused[refusalKey{id, src}]
}

// Refused lists the claims that are not served, by ID then source
// precedence.
func (c *Catalog) Refused() []Refusal {
	c.viewMu.RLock()
	defer c.viewMu.RUnlock()
	out := make([]Refusal, 0, len(c.view.refused))
	for k, err := range c.view.refused {
		out = append(out, Refusal{ID: k.id, Source: k.src, Err: err})
	}
	slices.SortFunc(out, func(a, b Refusal) int {
		if a.ID != b.ID {
			if a.ID < b.ID {
				return -1
			}
			return 1
		}
		return rank(a.Source) - rank(b.Source)
	})
	return out
}

// Subscribe calls fn with every later batch, in order, until cancel is
// called. fn runs while the catalog applies no other change: it must
// return quickly and must not call Publish, Put or Delete (reads are
// fine).
func (c *Catalog) Subscribe(fn func(Batch)) (cancel func()) {
	c.subMu.Lock()
	id := c.nextID
	c.nextID++
	c.subs[id] = fn
	c.subMu.Unlock()
	return func() {
		c.subMu.Lock()
		delete(c.subs, id)
		c.subMu.Unlock()
	}
}

func changed(a, b Entry) bool {
	return a.Source != b.Source || a.Group != b.Group || !reflect.DeepEqual(a.Spec, b.Spec)
}

// reconcile resolves the claims and brings the runtime in line: first it
// stops what is gone or changed (in parallel, and waits, so a replacement
// never runs beside the server it replaces), then it registers what is
// new. It logs and notifies each change once. c.mu is held.
func (c *Catalog) reconcile(ctx context.Context, reason string, graceful bool) Batch {
	next := resolve(c.claims)
	prev := c.view
	nv := view{served: maps.Clone(next.served), refused: map[refusalKey]error{}}
	for k, err := range next.refused {
		nv.refused[k] = err
	}

	// Stop: top-level entries that are gone or changed.
	wait, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopWait)
	if graceful {
		wait, cancel = context.WithTimeout(context.WithoutCancel(ctx), gracefulWait)
	}
	defer cancel()
	var eg errgroup.Group
	eg.SetLimit(stopLimit)
	for _, id := range slices.Sorted(maps.Keys(prev.served)) {
		old := prev.served[id]
		if old.Group != "" {
			continue // stopped with its group
		}
		if cur, ok := next.served[id]; ok && !changed(old, cur) {
			continue
		}
		if retire, ok := c.rt.Remove(id); ok {
			eg.Go(func() error {
				if err := retire(wait, reason, graceful); err != nil {
					c.log.Warn("catalog: stopping a server", FieldID, id, FieldSource, old.Source, FieldError, err)
				}
				return nil
			})
		}
	}
	_ = eg.Wait()

	// Register: top-level entries that are new or changed.
	for _, id := range slices.Sorted(maps.Keys(next.served)) {
		cur := next.served[id]
		if cur.Group != "" {
			continue
		}
		if old, ok := prev.served[id]; ok && !changed(old, cur) {
			continue
		}
		var err error
		if cur.IsGroup() {
			err = c.rt.AddGroup(cur.Spec)
		} else {
			err = c.rt.AddServer(cur.Spec)
		}
		if err != nil {
			// Not served after all; its members are free again.
			delete(nv.served, id)
			for _, m := range cur.Spec.Members {
				if e, ok := nv.served[m.ID]; ok && e.Group == id {
					delete(nv.served, m.ID)
				}
			}
			nv.refused[refusalKey{id, cur.Source}] = err
		}
	}

	for _, id := range slices.Sorted(maps.Keys(nv.served)) {
		nv.sorted = append(nv.sorted, nv.served[id])
	}
	c.viewMu.Lock()
	c.view = nv
	c.viewMu.Unlock()

	b := diff(prev, nv, reason)
	for _, ch := range b {
		attrs := []any{FieldID, ch.ID, FieldSource, ch.Source, FieldAction, ch.Action, FieldReason, ch.Reason}
		if ch.Group != "" {
			attrs = append(attrs, FieldGroup, ch.Group)
		}
		level := slog.LevelInfo
		if ch.Action == Refused {
			level = slog.LevelWarn
		}
		c.log.Log(ctx, level, "catalog change", attrs...)
	}
	if len(b) > 0 {
		c.subMu.Lock()
		subs := slices.Collect(maps.Values(c.subs))
		c.subMu.Unlock()
		for _, fn := range subs {
			fn(slices.Clone(b))
		}
	}
	return b
}

// diff lists what changed from prev to next: served IDs added, updated or
// removed, and claims newly refused (or refused for another reason).
func diff(prev, next view, reason string) Batch {
	var b Batch
	ids := map[string]struct{}{}
	for id := range prev.served {
		ids[id] = struct{}{}
	}
	for id := range next.served {
		ids[id] = struct{}{}
	}
	refusedNow := map[refusalKey]bool{}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		old, had := prev.served[id]
		cur, has := next.served[id]
		switch {
		case !had && has:
			b = append(b, Change{ID: id, Source: cur.Source, Action: Added, Reason: reason, Group: cur.Group})
		case had && has && changed(old, cur):
			b = append(b, Change{ID: id, Source: cur.Source, Action: Updated, Reason: reason, Group: cur.Group})
		case had && !has:
			k := refusalKey{id, old.Source}
			if err, ok := next.refused[k]; ok {
				b = append(b, Change{ID: id, Source: old.Source, Action: Refused, Reason: err.Error(), Group: old.Group})
				refusedNow[k] = true
				continue
			}
			b = append(b, Change{ID: id, Source: old.Source, Action: Removed, Reason: reason, Group: old.Group})
		}
	}
	keys := slices.SortedFunc(maps.Keys(next.refused), func(a, b refusalKey) int {
		if a.id != b.id {
			if a.id < b.id {
				return -1
			}
			return 1
		}
		return rank(a.src) - rank(b.src)
	})
	for _, k := range keys {
		err := next.refused[k]
		if refusedNow[k] {
			continue
		}
		if was, ok := prev.refused[k]; ok && was.Error() == err.Error() {
			continue
		}
		b = append(b, Change{ID: k.id, Source: k.src, Action: Refused, Reason: err.Error()})
	}
	return b
}
