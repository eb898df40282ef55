package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/frontdoor"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// ReasonDiscoveryRemoved is the stop reason of a server whose container
// an authoritative source no longer sees.
const ReasonDiscoveryRemoved = "discovery_removed"

// discoveryClaims lets discovery claim names in the catalog (source
// discovery); the catalog decides whether each is served.
type discoveryClaims struct{ c *catalog.Catalog }

var _ discovery.Registry = discoveryClaims{}

func (r discoveryClaims) Register(s *config.Server) error {
	return r.c.Put(context.Background(), catalog.SourceDiscovery, s, "discovered")
}

func (r discoveryClaims) Deregister(ctx context.Context, id string) error {
	r.c.Delete(ctx, catalog.SourceDiscovery, id, ReasonDiscoveryRemoved)
	return nil
}

func (r discoveryClaims) Refusal(id string) error {
	if err := r.c.RefusalOf(catalog.SourceDiscovery, id); err != nil {
		return err
	}
	return r.c.Check(catalog.SourceDiscovery, id)
}

// startDiscovery builds the discovery service the config asks for and
// starts its watches; candidates are health-checked with a throw-away
// provider (handshake and tools/list) that is removed afterwards.
func (a *App) startDiscovery(ctx context.Context, launcher provider.Launcher) error {
	cfg := a.Config.Discovery
	store, err := discovery.OpenStore(ctx, a.Store, a.Log)
	if err != nil {
		return fmt.Errorf("discovery state: %w", err)
	}
	// "auto" scopes a docker source to the compose project the gateway
	// runs in, so two copies of a stack on one engine never see each
	// other's containers; on a host it sees every project.
	cfg.Sources = slices.Clone(cfg.Sources)
	for i, src := range cfg.Sources {
		if src.Type != discovery.SourceDocker {
			continue
		}
		f := discovery.ResolveFilter(src.Filters, a.self.ComposeProject)
		cfg.Sources[i].Filters.ComposeProject = cmp.Or(f.ComposeProject, config.ComposeAny)
		a.Log.Info("docker discovery scope", "source", i, "compose_project", cfg.Sources[i].Filters.ComposeProject,
			"labels", src.Filters.Labels, "networks", src.Filters.Networks)
	}
	srcs, err := discovery.BuildSources(cfg, a.docker, a.selfNets, a.Log)
	if err != nil {
		return err
	}
	// What a check reads goes to the front door: an approved candidate is
	// listed from it, not started again to learn the same tools.
	learned := func(ctx context.Context, spec *config.Server, tools []mcpconn.Tool, b frontdoor.Lister) {
		if fd := a.Gateway.FrontDoor; fd != nil {
			fd.Learned(ctx, spec, tools, b)
		}
	}
	check := func(ctx context.Context, spec *config.Server) error {
		if spec.Mode == config.ModeRemote && spec.Transport == config.TransportHTTP {
			return handshake(ctx, spec, learned)
		}
		p := provider.New(spec, launcher, provider.Options{Log: a.Log})
		defer func() { _ = p.Retire(context.WithoutCancel(ctx), "discovery_health_check", false) }()
		// A health check: nobody waits for its pull.
		if _, err := p.Start(ctx, call.Progress{}); err != nil {
			return err
		}
		tools := p.Tools()
		if err := p.ExtrasIfRunning(ctx, func(ctx context.Context, b provider.Extras) error {
			learned(ctx, spec, tools, b)
			return nil
		}); errors.Is(err, provider.ErrNoExtras) {
			learned(ctx, spec, tools, nil)
		}
		return nil
	}
	svc := discovery.New(cfg, discoveryClaims{a.Gateway.Catalog}, check, store, a.Log.With("component", "discovery"), srcs...)
	svc.OnScan = func(r discovery.ScanResult) { a.Metrics.DiscoveryScan(r.Duration, r.ErrorCount) }
	// The pending and quarantine lists are not in the catalog: their
	// readers (the dashboard) hear of them on /events this way.
	svc.OnChange = func(names []string) { a.Manage.DiscoveryChanged(ctx, names) }
	a.discovery = svc
	a.Gateway.Discovery = svc
	svc.Start(ctx)
	return nil
}

// handshake checks an HTTP candidate where its labels say it listens: an
// MCP handshake and tools/list, nothing started or attached.
func handshake(ctx context.Context, spec *config.Server, learned func(context.Context, *config.Server, []mcpconn.Tool, frontdoor.Lister)) error {
	tr, err := mcpconn.HTTP(spec.Endpoint, spec.Headers, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", spec.Endpoint, err)
	}
	conn, err := mcpconn.Connect(ctx, tr, "")
	if err != nil {
		return fmt.Errorf("mcp handshake with %s: %w", spec.Endpoint, err)
	}
	defer func() { _ = conn.Close() }()
	tools, err := conn.ListTools(ctx)
	if err != nil {
		return fmt.Errorf("tools/list at %s: %w", spec.Endpoint, err)
	}
	learned(ctx, spec, tools, conn)
	return nil
}
