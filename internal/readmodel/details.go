package readmodel

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcp-hangar/hangar/internal/backend"
	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/group"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/store"
)

// Details is everything known of one server or group: the view behind
// hangar_details, mcp/server/details and the dashboard's server page.
type Details struct {
	ID string
	// Source is the catalog source the ID is served from ("" if none).
	Source string
	// Group is set for a group; the provider facts below are then empty.
	Group *group.Status
	// Provider is false when no provider or group serves the ID.
	Provider bool
	Snapshot provider.Snapshot
	Spec     *config.Server
	// Tools are the provider's tools now, after its tool policy; empty
	// when it never listed them.
	Tools []mcpconn.Tool
	// StoredTools are the tools of the catalog kept from an earlier run,
	// read only when Tools is empty.
	StoredTools   []mcpconn.Tool
	Policy        ToolsPolicy
	Quarantine    *provider.Quarantine
	Image         backend.ImageStatus
	ShadowedClaim []Claim
	// Audit holds the server's newest entries; AuditKnown is false when
	// there is no audit trail or it could not be read.
	Audit      []store.AuditEntry
	AuditKnown bool
	// FrontDoor is the front door's view of the server; nil without one.
	FrontDoor map[string]any
	Bindings  []Binding
	// ToolNames and PromptNames are the front door's callable names of
	// the server's tools and prompts, by their names on the server; nil
	// without a front door (hangar_call reaches the tools then).
	ToolNames, PromptNames map[string]string
	// Resources, ResourceTemplates and Prompts are raw MCP JSON.
	Resources         []json.RawMessage
	ResourceTemplates []json.RawMessage
	Prompts           []json.RawMessage
	// Egress is the egress control's view; nil without one.
	Egress any
	// Rules is the server's own policy over calls; nil without one (the
	// gateway's applies alone: Model.Policy).
	Rules *Rules
}

// ToolsPolicy summarises a provider's tool allow/deny lists.
type ToolsPolicy struct {
	Type          string
	HasAllowList  bool
	HasDenyList   bool
	FilteredCount int
}

// Claim is a claim on an ID that the catalog does not serve, and why.
type Claim struct {
	Source string
	Reason string
}

// Served reports whether a provider or group serves the ID.
func (d *Details) Served() bool { return d.Provider || d.Group != nil }

// Approvable reports whether an approval (hangar_approve) would act on the
// server: a provider quarantined because its tools or image changed.
func (d *Details) Approvable() bool { return d.Quarantine != nil }

// Rejectable reports whether a rejection (discovery's Reject) would act on
// the server: one served from discovery, whose approval it revokes.
func (d *Details) Rejectable() bool { return d.Source == string(catalog.SourceDiscovery) }

// Health is how the provider is doing (HealthOf); a group's pill is its
// state, which the page shows itself.
func (d *Details) Health() string {
	return HealthOf(d.Snapshot.State, d.Snapshot.Health.ConsecutiveFailures)
}

// CatalogTools are the tools to show: the live ones, else the stored ones.
func (d *Details) CatalogTools() []mcpconn.Tool {
	if len(d.Tools) > 0 {
		return d.Tools
	}
	return d.StoredTools
}

// Details builds the view of id; history bounds the audit entries and
// bindings it holds (none are read when it is 0). A server that nothing serves has only the facts of
// the store (its audit, its stored catalog).
func (m *Model) Details(ctx context.Context, id string, history int) *Details {
	d := &Details{ID: id}
	if m.Catalog != nil {
		if e, ok := m.Catalog.Get(id); ok {
			d.Source = string(e.Source)
			if e.Spec != nil {
				d.Rules = ownRules(e.Spec.Policy, d.Source)
			}
		}
		d.ShadowedClaim = []Claim{}
		for _, r := range m.Catalog.Refused() {
			if r.ID == id {
				d.ShadowedClaim = append(d.ShadowedClaim, Claim{Source: string(r.Source), Reason: r.Err.Error()})
			}
		}
	}
	if g, ok := m.group(id); ok {
		st := g.Status()
		d.Group = &st
	} else if p, ok := m.provider(id); ok {
		d.Provider = true
		d.Snapshot = p.Snapshot()
		d.Spec = p.Spec()
		d.Tools = p.Tools()
		pol := p.Policy()
		d.Policy = ToolsPolicy{Type: pol.Type(), HasAllowList: pol.HasAllowList(), HasDenyList: pol.HasDenyList(), FilteredCount: p.FilteredCount()}
		if q, ok := p.Quarantined(); ok {
			d.Quarantine = &q
		}
		if m.Images != nil && d.Spec.Image != "" {
			d.Image = m.Images.Status(id)
		}
	}
	if len(d.Tools) == 0 {
		d.StoredTools = m.ShownCatalog(ctx, id)
	}
	if m.Audit != nil && history > 0 {
		es, err := m.Audit.RecentAudit(ctx, id, history)
		if err == nil {
			d.Audit, d.AuditKnown = es, true
		} else {
			m.log().Warn("audit not read", "mcp_server", id, "error", err)
		}
	}
	if m.FrontDoor != nil {
		d.FrontDoor = m.FrontDoor.Details(id)
	}
	if m.Bindings != nil && history > 0 {
		d.Bindings = m.Bindings.RecentBindings(id, history)
	}
	if m.Callables != nil {
		d.ToolNames, d.PromptNames = m.Callables(id)
	}
	if m.Extras != nil {
		d.Resources, d.ResourceTemplates, d.Prompts = m.Extras(id)
	}
	if m.Egress != nil {
		d.Egress = m.Egress(id)
	}
	return d
}

// ShownCatalog are the tools the views show of id while nothing runs it
// (Details' StoredTools): the catalog kept from its last run or read by
// discovery's check of a candidate; nil when none. What an operator saw
// of a pending server is this, and approving it pins this (pin.Approved).
func (m *Model) ShownCatalog(ctx context.Context, id string) []mcpconn.Tool {
	if m.Stored == nil {
		return nil
	}
	c, err := m.Stored.Catalog(ctx, id)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			m.log().Debug("stored catalog not read", "mcp_server", id, "error", err)
		}
		return nil
	}
	var cc struct {
		Tools []mcpconn.Tool `json:"tools"`
	}
	if json.Unmarshal(c.Catalog, &cc) != nil {
		return nil
	}
	return cc.Tools
}

func (m *Model) group(id string) (*group.Group, bool) {
	if m.Groups == nil {
		return nil, false
	}
	return m.Groups.Get(id)
}

func (m *Model) provider(id string) (*provider.Provider, bool) {
	if m.Providers == nil {
		return nil, false
	}
	return m.Providers.Get(id)
}
