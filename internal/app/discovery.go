package app

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// ReasonDiscoveryRemoved is the stop reason of a server whose container
// an authoritative source no longer sees.
const ReasonDiscoveryRemoved = "discovery_removed"

// registry lets discovery register and deregister providers.
type registry struct{ m *provider.Manager }

var _ discovery.Registry = registry{}

func (r registry) Register(s *config.Server) error {
	if _, ok := r.m.AddIfAbsent(s); !ok {
		return fmt.Errorf("mcp server %s already exists", s.ID)
	}
	return nil
}

func (r registry) Deregister(ctx context.Context, id string) error {
	p, ok := r.m.Remove(id)
	if !ok {
		return nil
	}
	return p.Retire(ctx, ReasonDiscoveryRemoved, false)
}

func (r registry) Registered(id string) bool {
	_, ok := r.m.Get(id)
	return ok
}

func (r registry) Origin(id string) string {
	if p, ok := r.m.Get(id); ok {
		return p.Spec().Origin
	}
	return ""
}

// startDiscovery builds the discovery service the config asks for and
// starts its watches; candidates are health-checked with a throw-away
// provider (handshake and tools/list) that is removed afterwards.
func (a *App) startDiscovery(ctx context.Context, launcher provider.Launcher) error {
	cfg := a.Config.Discovery
	store, err := discovery.OpenStore(a.Config.DataDir, a.Log)
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
	check := func(ctx context.Context, spec *config.Server) error {
		p := provider.New(spec, launcher, provider.Options{Log: a.Log})
		defer func() { _ = p.Retire(context.WithoutCancel(ctx), "discovery_health_check", false) }()
		_, err := p.Start(ctx)
		return err
	}
	svc := discovery.New(cfg, registry{a.Providers}, check, store, a.Log.With("component", "discovery"), srcs...)
	svc.OnScan = func(r discovery.ScanResult) { a.Metrics.DiscoveryScan(r.Duration, r.ErrorCount) }
	a.discovery = svc
	a.Gateway.Discovery = svc
	svc.Start(ctx)
	return nil
}
