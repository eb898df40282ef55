package app

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/mcp-hangar/hangar/internal/dashboard"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/policy"
	"github.com/mcp-hangar/hangar/internal/readmodel"
	"github.com/mcp-hangar/hangar/internal/store"
)

// wireViews builds the one read model of servers and gives it to its
// three faces: hangar_details, mcp/server/details and the dashboard.
// The front door and discovery are read through the gateway at each view
// (they are built after the model, and a reload may replace them).
func (a *App) wireViews() {
	m := &readmodel.Model{
		Providers:   a.Providers,
		Groups:      a.Gateway.Groups,
		Catalog:     a.Gateway.Catalog,
		Stored:      a.Store,
		Installs:    a.Store,
		Images:      a.Images,
		Metrics:     a.Metrics,
		FrontDoor:   frontDoorView{a.Gateway},
		Bindings:    frontDoorBindings{a.Gateway},
		Extras:      frontDoorView{a.Gateway}.Extras,
		Callables:   frontDoorView{a.Gateway}.Callables,
		Discovery:   discoveryView{a.Gateway},
		Egress:      a.Gateway.EgressDetails,
		OwnTools:    sync.OnceValue(a.Gateway.OwnTools),
		Replication: readmodel.Replication{Instance: a.Instance},
		Containers:  a.Runtime,
		TrafficStep: a.trafficStep,
		// Callers' upstream credentials: each face shows a caller theirs.
		Credentials: a.UpstreamAuth,
		Policy: func() readmodel.Rules {
			p := a.Gateway.Config().Policy
			if p.Default == "" {
				p.Default = policy.Allow
			}
			return readmodel.Rules{Default: p.Default, Rules: p.Rules}
		},
		Log: a.Log.With("component", "readmodel"),
	}
	if a.member != nil {
		mb := a.member
		m.Replication.Self, m.Replication.TTL = mb.Self.Replica, mb.TTL()
		m.Replication.Members = func(ctx context.Context) ([]store.Member, error) { return mb.Store.Members(ctx, mb.Self.Instance) }
	}
	if a.Gateway.AuditStore != nil {
		m.Audit = a.Gateway.AuditStore
	}
	a.Gateway.Views = m
	a.Manage.Views = m
	a.Manage.Notifier.Follow = func(ctx context.Context, server string, send func(any) bool) {
		m.Follow(ctx, server, followEvery, func(l readmodel.LogLine) bool { return send(l) })
	}
	a.goOwned(func() { m.RunTraffic(a.ctx) })
	a.Dashboard = dashboard.New(m, a.MCP, a.Log.With("component", "dashboard"))
	a.Dashboard.Decisions = discoveryDecisions{a}
	a.Dashboard.Audit = a.Gateway.RecordAudit
}

// followEvery is how often a followed server's log is looked at.
const followEvery = time.Second

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

func (f frontDoorView) Callables(server string) (tools, prompts map[string]string) {
	if fd := f.g.FrontDoor; fd != nil {
		return fd.Callables(server)
	}
	return nil, nil
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
