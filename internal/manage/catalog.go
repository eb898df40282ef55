package manage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/group"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// Sources of a server (source_kind): the catalog's.
const (
	SourceConfig    = string(catalog.SourceConfig)
	SourceDiscovery = string(catalog.SourceDiscovery)
	SourceHotload   = string(catalog.SourceHotload)
	SourceInstalled = string(catalog.SourceInstalled)
	SourceGroup     = string(catalog.SourceGroup)
)

// Catalog is what management needs of the gateway's set of servable IDs.
type Catalog interface {
	// PublishInstalled replaces the desired set of installed servers (the
	// enabled ones, secrets resolved): new ones are registered, changed
	// ones replaced, missing ones removed and their containers stopped.
	PublishInstalled(ctx context.Context, specs []*config.Server) error
	// Servers lists every server the gateway serves, whatever its source,
	// sorted by ID.
	Servers() []Server
	// Server returns one server.
	Server(id string) (Server, bool)
	// Restart stops id's backend; the next Ensure (which Restart starts
	// in the background) brings it back.
	Restart(ctx context.Context, id string) error
}

// Server is one servable ID as the catalog sees it.
type Server struct {
	ID      string
	Source  string
	Spec    *config.Server
	Runtime Runtime
	Tools   []mcpconn.Tool
}

// Runtime are the raw runtime facts of a server.
type Runtime struct {
	// State is the provider's state (cold, initializing, ready,
	// degraded, dead) or, for a group, the group's (cold, healthy,
	// degraded, unavailable).
	State        string
	Group        bool
	Alive        bool
	LastError    string
	Stderr       string
	LastSeenAt   time.Time
	RetryAttempt int
	NextRetryAt  time.Time // zero: no restart backoff running
}

// ProviderCatalog is Catalog over the gateway's catalog (which IDs exist,
// from which source) and the provider manager and group registry (what
// runs under them).
type ProviderCatalog struct {
	Catalog   *catalog.Catalog
	Providers *provider.Manager
	Groups    *group.Registry // nil: no groups
	// Go runs the background start of a restart on a goroutine its
	// caller owns (the app's WaitGroup); nil uses a plain goroutine.
	Go func(f func())
}

var _ Catalog = (*ProviderCatalog)(nil)

// PublishInstalled implements Catalog: the installed source's whole set
// goes to the catalog, whose reconciler registers, replaces and removes.
// An install the catalog refuses (a name a higher source holds) is an
// error naming why.
func (c *ProviderCatalog) PublishInstalled(ctx context.Context, specs []*config.Server) error {
	var errs []error
	for _, ch := range c.Catalog.Publish(ctx, catalog.SourceInstalled, specs, "install") {
		if ch.Action == catalog.Refused && ch.Source == catalog.SourceInstalled {
			errs = append(errs, fmt.Errorf("%s: %s", ch.ID, ch.Reason))
		}
	}
	return errors.Join(errs...)
}

// Servers implements Catalog.
func (c *ProviderCatalog) Servers() []Server {
	var out []Server
	for _, e := range c.Catalog.List() {
		if e.Group != "" && e.Group != e.ID {
			continue // a member: listed under its group
		}
		if s, ok := c.server(e); ok {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Server) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Server implements Catalog.
func (c *ProviderCatalog) Server(id string) (Server, bool) {
	e, ok := c.Catalog.Get(id)
	if !ok {
		return Server{}, false
	}
	return c.server(e)
}

func (c *ProviderCatalog) server(e catalog.Entry) (Server, bool) {
	if c.Groups != nil {
		if g, ok := c.Groups.Get(e.ID); ok {
			return groupServer(g), true
		}
	}
	p, ok := c.Providers.Get(e.ID)
	if !ok {
		return Server{}, false
	}
	s := providerServer(p)
	s.Source = string(e.Source)
	return s, true
}

// Restart implements Catalog.
func (c *ProviderCatalog) Restart(ctx context.Context, id string) error {
	// The start runs in the background (restart answers accepted at
	// once); each start is bounded by its start timeout, and a removed
	// provider's start ends with its lifetime.
	run := c.Go
	if run == nil {
		run = func(f func()) { go f() }
	}
	if c.Groups != nil {
		if g, ok := c.Groups.Get(id); ok {
			if err := g.Stop(ctx, "restart"); err != nil {
				return err
			}
			run(func() { _, _ = g.Start(context.WithoutCancel(ctx), call.Progress{}) })
			return nil
		}
	}
	p, ok := c.Providers.Get(id)
	if !ok {
		return &provider.Error{Kind: provider.KindUnknownServer, ID: id}
	}
	if err := p.Stop(ctx, "restart", false); err != nil {
		return err
	}
	run(func() { _, _ = p.Start(context.WithoutCancel(ctx), call.Progress{}) })
	return nil
}

func providerServer(p *provider.Provider) Server {
	snap := p.Snapshot()
	return Server{
		ID:    p.ID(),
		Spec:  p.Spec(),
		Tools: p.Tools(),
		Runtime: Runtime{
			State:        string(snap.State),
			Alive:        snap.Alive,
			LastError:    snap.LastError,
			Stderr:       snap.Stderr,
			LastSeenAt:   snap.Health.LastSuccessAt,
			RetryAttempt: snap.Health.ConsecutiveFailures,
			NextRetryAt:  snap.RetryAt,
		},
	}
}

func groupServer(g *group.Group) Server {
	st := g.Status()
	spec := &config.Server{ID: st.ID, Mode: config.ModeGroup}
	alive := false
	for _, m := range st.Members {
		if m.State == provider.Ready || m.State == provider.Degraded {
			alive = true
		}
	}
	return Server{ID: st.ID, Source: SourceGroup, Spec: spec, Runtime: Runtime{State: string(st.State), Group: true, Alive: alive}}
}

func sortServers(s []Server) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].ID < s[j-1].ID; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// toolsJSON is the tools part of a cached catalog.
type cachedCatalog struct {
	Tools []mcpconn.Tool `json:"tools"`
}
