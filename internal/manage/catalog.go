package manage

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/group"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// Sources of a server (source_kind).
const (
	SourceConfig    = "config"
	SourceDiscovery = "discovery"
	SourceHotload   = "hotload"
	SourceInstalled = "installed"
	SourceGroup     = "group"
)

// SourceOf names where a spec came from.
func SourceOf(s *config.Server) string {
	switch s.Origin {
	case "":
		if s.Mode == config.ModeGroup {
			return SourceGroup
		}
		return SourceConfig
	case config.OriginInstalled:
		return SourceInstalled
	case config.OriginRegistry:
		return SourceHotload
	}
	return SourceDiscovery // docker, filesystem
}

// Catalog is what management needs of the gateway's set of servable IDs.
// The catalog package (one owner of IDs, sources publish desired specs)
// will implement it; until then ProviderCatalog adapts provider.Manager.
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
}

// ProviderCatalog adapts today's provider.Manager (and group registry) to
// Catalog.
type ProviderCatalog struct {
	Providers *provider.Manager
	Groups    *group.Registry // nil: no groups
	// Go runs the background start of a restart on a goroutine its
	// caller owns (the app's WaitGroup); nil uses a plain goroutine.
	Go func(f func())
}

var _ Catalog = (*ProviderCatalog)(nil)

// PublishInstalled implements Catalog.
func (c *ProviderCatalog) PublishInstalled(ctx context.Context, specs []*config.Server) error {
	want := make(map[string]*config.Server, len(specs))
	for _, s := range specs {
		want[s.ID] = s
	}
	var firstErr error
	for _, p := range c.Providers.List() {
		if p.Spec().Origin != config.OriginInstalled {
			continue
		}
		if s, ok := want[p.ID()]; ok && reflect.DeepEqual(s, p.Spec()) {
			delete(want, p.ID()) // unchanged: keep it running
			continue
		}
		if old, ok := c.Providers.Remove(p.ID()); ok {
			if err := old.Retire(ctx, "uninstalled_or_updated", false); err != nil && firstErr == nil {
				firstErr = fmt.Errorf("stop %s: %w", p.ID(), err)
			}
		}
	}
	for _, s := range specs {
		if _, ok := want[s.ID]; !ok {
			continue
		}
		if _, ok := c.Providers.AddIfAbsent(s); !ok && firstErr == nil {
			firstErr = fmt.Errorf("%s: the name is taken by a server of another source", s.ID)
		}
	}
	return firstErr
}

// Servers implements Catalog.
func (c *ProviderCatalog) Servers() []Server {
	var out []Server
	for _, p := range c.Providers.List() {
		if _, member := c.Providers.GroupOf(p.ID()); member {
			continue // listed under its group
		}
		out = append(out, providerServer(p))
	}
	if c.Groups != nil {
		for _, g := range c.Groups.List() {
			out = append(out, groupServer(g))
		}
	}
	sortServers(out)
	return out
}

// Server implements Catalog.
func (c *ProviderCatalog) Server(id string) (Server, bool) {
	if c.Groups != nil {
		if g, ok := c.Groups.Get(id); ok {
			return groupServer(g), true
		}
	}
	p, ok := c.Providers.Get(id)
	if !ok {
		return Server{}, false
	}
	return providerServer(p), true
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
			run(func() { _, _ = g.Start(context.WithoutCancel(ctx)) })
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
	run(func() { _, _ = p.Start(context.WithoutCancel(ctx)) })
	return nil
}

func providerServer(p *provider.Provider) Server {
	snap := p.Snapshot()
	return Server{
		ID:     p.ID(),
		Source: SourceOf(p.Spec()),
		Spec:   p.Spec(),
		Tools:  p.Tools(),
		Runtime: Runtime{
			State:        string(snap.State),
			Alive:        snap.Alive,
			LastError:    snap.LastError,
			Stderr:       snap.Stderr,
			LastSeenAt:   snap.Health.LastSuccessAt,
			RetryAttempt: snap.Health.ConsecutiveFailures,
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

func encodeCatalog(tools []mcpconn.Tool) json.RawMessage {
	b, _ := json.Marshal(cachedCatalog{Tools: tools})
	return b
}
