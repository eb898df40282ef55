package manage

import (
	"context"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// ---------------------------------------------------------------------------
// Notifications

// emit publishes a notification under the next snapshot version; build
// gets the version. Notifications leave in version order.
func (s *Service) emit(ctx context.Context, method, server string, build func(v uint64) map[string]any) {
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	v, err := s.Store.NextSnapshotVersion(ctx)
	if err != nil {
		s.Log.Error("snapshot version not advanced; notification not sent", "method", method, "error", err)
		return
	}
	s.Notifier.Publish(method, server, build(v))
}

func (s *Service) emitChanged(ctx context.Context, changes []Change) {
	if s.Options.OnChanged != nil {
		defer s.Options.OnChanged()
	}
	// A reader sees the changes about servers it may reach only.
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	v, err := s.Store.NextSnapshotVersion(ctx)
	if err != nil {
		s.Log.Error("snapshot version not advanced; notification not sent", "method", MethodChanged, "error", err)
		return
	}
	if len(changes) == 1 {
		s.Notifier.Publish(MethodChanged, changes[0].Name, map[string]any{"snapshot_version": v, "changed": changes})
		return
	}
	s.Notifier.PublishFiltered(MethodChanged, func(id auth.Identity) (map[string]any, bool) {
		var mine []Change
		for _, c := range changes {
			if id.MayReach(c.Name) {
				mine = append(mine, c)
			}
		}
		return map[string]any{"snapshot_version": v, "changed": mine}, len(mine) > 0
	})
}

// DiscoveryChanged tells readers of the named servers that their place in
// discovery's pending or quarantine list changed (discovery.Service's
// OnChange): one mcp/changed.
func (s *Service) DiscoveryChanged(ctx context.Context, names []string) {
	changes := make([]Change, 0, len(names))
	for _, n := range names {
		changes = append(changes, Change{Name: n, Action: ActionDiscovery})
	}
	if len(changes) > 0 {
		s.emitChanged(ctx, changes)
	}
}

// Run turns provider state changes into mcp/server/status_changed (and
// mcp/server/catalog_changed when a start brings a new catalog) until ctx
// ends.
func (s *Service) Run(ctx context.Context, sink *Sink) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sink.signal:
		}
		for _, c := range sink.take() {
			s.stateChanged(ctx, c)
		}
	}
}

func (s *Service) stateChanged(ctx context.Context, c stateChange) {
	if c.healthy {
		if srv, ok := s.Catalog.Server(c.id); ok && !srv.Runtime.Group {
			if _, member := s.memberOf(c.id); !member {
				s.checkCatalog(ctx, c.id, srv.Tools)
			}
		}
		return
	}
	s.mu.Lock()
	if c.to != provider.Cold {
		s.started[c.id] = true
	}
	if c.to == provider.Ready || c.to == provider.Dead {
		delete(s.restarting, c.id)
	}
	s.mu.Unlock()
	if c.from == "" {
		// Registration, not a transition: the catalog kept from an
		// earlier run is what a first start compares with. Read now,
		// before any start, so that the owner's write of the new one
		// (the front door's) cannot come first.
		s.seedCatalogVersion(ctx, c.id)
		return
	}
	srv, ok := s.Catalog.Server(c.id)
	if !ok {
		return // removed meanwhile (uninstall, unload)
	}
	if _, member := s.memberOf(c.id); member {
		return
	}
	srv.Runtime.State = string(c.to)
	it := s.item(ctx, c.id, srv, true)
	s.emit(ctx, MethodStatusChanged, c.id, func(v uint64) map[string]any {
		return map[string]any{"snapshot_version": v, "server": map[string]any{
			"id": it.ID, "name": it.Name, "runtime": it.Runtime, "status": it.Status, "status_reason": it.StatusReason,
		}}
	})
	if c.to == provider.Ready {
		s.checkCatalog(ctx, c.id, srv.Tools)
	}
}

// memberOf hides group members: their group is the listed server.
func (s *Service) memberOf(id string) (string, bool) {
	if pc, ok := s.Catalog.(*ProviderCatalog); ok {
		return pc.Providers.GroupOf(id)
	}
	return "", false
}

// seedCatalogVersion remembers id's stored catalog version, when there is
// one and nothing newer is known.
func (s *Service) seedCatalogVersion(ctx context.Context, id string) {
	c, err := s.Store.Catalog(ctx, id)
	if err != nil {
		return
	}
	s.mu.Lock()
	if _, known := s.catalogVer[id]; !known {
		s.catalogVer[id] = c.Version
	}
	s.mu.Unlock()
}

// checkCatalog sends catalog_changed when id's catalog hash differs from
// the last one known (from this run, else the stored one read when id was
// registered).
func (s *Service) checkCatalog(ctx context.Context, id string, tools []mcpconn.Tool) {
	ver := mcpconn.CatalogVersion(tools)
	s.mu.Lock()
	prev, known := s.catalogVer[id]
	s.catalogVer[id] = ver
	s.mu.Unlock()
	if known && prev == ver {
		return
	}
	if save := s.Options.SaveCatalog; save != nil {
		if err := save(ctx, id, tools); err != nil {
			s.Log.Warn("catalog not cached", "mcp_server", id, "error", err)
		}
	}
	s.emit(ctx, MethodCatalogChanged, id, func(v uint64) map[string]any {
		return map[string]any{"snapshot_version": v, "server_id": id, "name": id, "catalog_version": ver,
			"tools_count": len(tools), "resources_count": 0, "resource_templates_count": 0, "prompts_count": 0}
	})
}
