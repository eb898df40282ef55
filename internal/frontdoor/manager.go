package frontdoor

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/group"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// ManagerSource is the Source over what runs: the providers of a Manager
// and the groups of a Registry. The gateway gives it its call path.
type ManagerSource struct {
	Providers *provider.Manager
	Groups    *group.Registry
	// CallPath is the gateway's way to a server (its callServer: the
	// caller's server filter, the policy, the audit); nil calls the
	// provider or group directly.
	CallPath func(ctx context.Context, rq *call.Request, server, tool string, args any) (*mcp.CallToolResult, error)
	// Exposed decides Servable.Hidden (the gateway's: an installed
	// server's allow_implicit_invocation); nil: the spec's expose.
	Exposed func(id string, spec *config.Server) bool
}

func (s ManagerSource) hidden(id string, spec *config.Server) bool {
	if s.Exposed != nil {
		return !s.Exposed(id, spec)
	}
	return spec != nil && spec.Hidden
}

var _ Source = ManagerSource{}

func (s ManagerSource) Servable() []Servable {
	var out []Servable
	for _, p := range s.Providers.List() {
		if _, member := s.Providers.GroupOf(p.ID()); member {
			continue
		}
		_, quarantined := p.Quarantined()
		out = append(out, Servable{ID: p.ID(), Spec: p.Spec(), Hidden: s.hidden(p.ID(), p.Spec()), Tools: p.Tools(), Predefined: p.Predefined(),
			Cold: p.State() == provider.Cold, Quarantined: quarantined})
	}
	for _, g := range s.Groups.List() {
		sv := Servable{ID: g.ID(), Group: true, Spec: g.Spec(), Hidden: s.hidden(g.ID(), g.Spec())}
		// A group's catalog is its members': the first one that knows it.
		var version string
		for _, m := range g.Members() {
			sv.Members = append(sv.Members, m.Spec())
			tools := m.Tools()
			switch {
			case len(tools) == 0:
			case sv.CatalogFrom == "":
				sv.Tools, sv.Predefined, sv.CatalogFrom, sv.Cold = tools, m.Predefined(), m.ID(), m.State() == provider.Cold
				version = mcpconn.CatalogVersion(tools)
			case mcpconn.CatalogVersion(tools) != version:
				sv.Disagree = append(sv.Disagree, m.ID())
			}
		}
		if sv.CatalogFrom == "" {
			sv.Cold = true
			for _, m := range g.Members() {
				sv.Cold = sv.Cold && m.State() == provider.Cold
			}
		}
		out = append(out, sv)
	}
	SortServable(out)
	return out
}

func (s ManagerSource) Call(ctx context.Context, rq *call.Request, server, tool string, args any) (*mcp.CallToolResult, error) {
	if s.CallPath != nil {
		return s.CallPath(ctx, rq, server, tool, args)
	}
	if grp, ok := s.Groups.Get(server); ok {
		return grp.Call(ctx, rq, tool, args)
	}
	p, ok := s.Providers.Get(server)
	if !ok {
		return nil, &provider.Error{Kind: provider.KindUnknownServer, ID: server}
	}
	return p.Call(ctx, rq, tool, args)
}

func (s ManagerSource) Prefetch(ctx context.Context, server string, whileUp func(context.Context)) error {
	p, ok := s.Providers.Get(server)
	if grp, isGroup := s.Groups.Get(server); isGroup {
		// A group's catalog is any member's: the first one's.
		members := grp.Members()
		if len(members) == 0 {
			return nil
		}
		p, ok = members[0], true
	}
	if !ok || p.State() != provider.Cold || p.Predefined() {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, p.StartWait())
	defer cancel()
	// The prefetch's own start is one demand; any other, even one that
	// joined the start, keeps the provider.
	mark := p.Demand() + 1
	// A prefetch is nobody's call: its pull reports to no client.
	if _, err := p.Start(sctx, call.Progress{}); err != nil {
		// A failed prefetch is not the provider's record: it stays COLD,
		// with no failed start counted, for the first real call to try.
		_ = p.Stop(context.WithoutCancel(ctx), ReasonPrefetched, false)
		return err
	}
	if whileUp != nil {
		whileUp(sctx)
	}
	// Stopped only if nobody else asked for it meanwhile: a warm or a call
	// that came while the catalog was read keeps it (its idle TTL applies).
	sctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), p.StartWait())
	defer cancel()
	p.StopIfUnwanted(sctx, ReasonPrefetched, mark)
	return nil
}

func (s ManagerSource) Learn(ctx context.Context, server string) error {
	if grp, ok := s.Groups.Get(server); ok {
		_, err := grp.Tools(ctx, call.Progress{})
		return err
	}
	p, ok := s.Providers.Get(server)
	if !ok {
		return &provider.Error{Kind: provider.KindUnknownServer, ID: server}
	}
	sctx, cancel := context.WithTimeout(ctx, p.StartWait())
	defer cancel()
	_, err := p.ToolsOrStart(sctx, call.Progress{})
	return err
}

func (s ManagerSource) Extras(ctx context.Context, server string, start bool, f func(context.Context, provider.Extras) error) error {
	var candidates []*provider.Provider
	if grp, ok := s.Groups.Get(server); ok {
		candidates = grp.Members()
	} else if p, ok := s.Providers.Get(server); ok {
		candidates = []*provider.Provider{p}
	} else {
		return &provider.Error{Kind: provider.KindUnknownServer, ID: server}
	}
	// A running member first; else, when starting is allowed, the first.
	for _, p := range candidates {
		if err := p.ExtrasIfRunning(ctx, f); !errors.Is(err, provider.ErrNotRunning) {
			return err
		}
	}
	if !start || len(candidates) == 0 {
		return provider.ErrNotRunning
	}
	return candidates[0].UseExtras(ctx, f)
}
