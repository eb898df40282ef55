package app

import (
	"context"
	"encoding/json"

	"github.com/mcp-hangar/hangar/internal/dashboard"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/readmodel"
)

// wireViews builds the one read model of servers and gives it to its
// three faces: hangar_details, mcp/server/details and the dashboard.
// The front door and discovery are read through the gateway at each view
// (they are built after the model, and a reload may replace them).
func (a *App) wireViews() {
	m := &readmodel.Model{
		Providers: a.Providers,
		Groups:    a.Gateway.Groups,
		Catalog:   a.Gateway.Catalog,
		Stored:    a.Store,
		Installs:  a.Store,
		Images:    a.Images,
		Metrics:   a.Metrics,
		FrontDoor: frontDoorView{a.Gateway},
		Bindings:  frontDoorBindings{a.Gateway},
		Extras:    frontDoorView{a.Gateway}.Extras,
		Discovery: discoveryView{a.Gateway},
		Egress:    a.Gateway.EgressDetails,
		Log:       a.Log.With("component", "readmodel"),
	}
	if a.Gateway.AuditStore != nil {
		m.Audit = a.Gateway.AuditStore
	}
	a.Gateway.Views = m
	a.Manage.Views = m
	a.Dashboard = dashboard.New(m, a.MCP, a.Log.With("component", "dashboard"))
	a.Dashboard.Decisions = discoveryDecisions{a}
	a.Dashboard.Audit = a.Gateway.RecordAudit
}

// discoveryDecisions is the dashboard's Reject: the discovery service's,
// dashboard.ErrDiscoveryOff when discovery is off.
type discoveryDecisions struct{ a *App }

func (d discoveryDecisions) Reject(ctx context.Context, name, by string) (discovery.QuarantineEntry, error) {
	if s := d.a.discovery; s != nil {
		return s.Reject(ctx, name, by)
	}
	return discovery.QuarantineEntry{}, dashboard.ErrDiscoveryOff
}

// frontDoorView is the front door's part of the read model; none in
// egress mode.
type frontDoorView struct{ g *gateway.Gateway }

func (f frontDoorView) Details(server string) map[string]any {
	if fd := f.g.FrontDoor; fd != nil {
		return fd.Details(server)
	}
	return nil
}

func (f frontDoorView) Extras(server string) (resources, templates, prompts []json.RawMessage) {
	if fd := f.g.FrontDoor; fd != nil {
		resources, templates, prompts, _ = fd.Extras(server)
	}
	return resources, templates, prompts
}

// discoveryView is discovery's part of the read model; nothing when
// discovery is off.
type discoveryView struct{ g *gateway.Gateway }

func (d discoveryView) Pending() []discovery.PendingEntry {
	if s := d.g.Discovery; s != nil {
		return s.Pending()
	}
	return nil
}

func (d discoveryView) Quarantined() []discovery.QuarantineEntry {
	if s := d.g.Discovery; s != nil {
		return s.Quarantined()
	}
	return nil
}
