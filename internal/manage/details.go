package manage

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/mcp-hangar/hangar/internal/upstreamauth"
	"time"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/readmodel"
)

// ---------------------------------------------------------------------------
// mcp/server/details

// DetailsParams are mcp/server/details's.
type DetailsParams struct {
	Scope
	ServerID string `json:"server_id"`
	Name     string `json:"name,omitempty"` // accepted as an alias of server_id
}

// DetailsResult is mcp/server/details's answer.
type DetailsResult struct {
	SnapshotVersion uint64      `json:"snapshot_version"`
	Server          Item        `json:"server"`
	Catalog         CatalogView `json:"catalog"`
	Health          HealthView  `json:"health"`
	Audit           []AuditView `json:"audit"`
	RecentBindings  []Binding   `json:"recent_bindings"`
	// UpstreamAuth is the calling identity's upstream credential for the
	// server (upstream_auth); absent when it has none. Beyond seed 003.
	UpstreamAuth *upstreamauth.Status `json:"upstream_auth,omitempty"`
}

// CatalogView is a server's catalog.
type CatalogView struct {
	CatalogVersion    string     `json:"catalog_version"`
	Tools             []ToolView `json:"tools"`
	Resources         []any      `json:"resources"`
	ResourceTemplates []any      `json:"resource_templates"`
	Prompts           []any      `json:"prompts"`
}

// ToolView is one tool of a catalog.
type ToolView struct {
	Name               string          `json:"name"`
	Title              string          `json:"title,omitempty"`
	Description        string          `json:"description,omitempty"`
	InputSchemaSummary map[string]any  `json:"input_schema_summary"`
	Annotations        json.RawMessage `json:"annotations,omitempty"`
}

// HealthView is a server's health: seed 003's six facts, every one
// present, null when it is not known (a server that never ran has no
// stderr, one without a restart backoff no next retry).
type HealthView struct {
	State          *string `json:"state"`
	StatusReason   *string `json:"status_reason"`
	LastError      *string `json:"last_error"`
	RetryAttempt   *int    `json:"retry_attempt"`
	NextRetryAt    *string `json:"next_retry_at"` // RFC 3339
	CatalogVersion *string `json:"catalog_version"`
	StderrTail     *string `json:"stderr_tail"`
}

// known is s, or nil (null) when s is empty.
func known(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// AuditView is one audit entry.
type AuditView struct {
	At         string  `json:"at"`
	Identity   string  `json:"identity"`
	Action     string  `json:"action"`
	Tool       string  `json:"tool,omitempty"`
	Allowed    bool    `json:"allowed"`
	Reason     string  `json:"reason,omitempty"`
	Outcome    string  `json:"outcome,omitempty"`
	DurationMs float64 `json:"duration_ms,omitempty"`
	// Rule is the policy rule that decided (internal/policy).
	Rule string `json:"rule,omitempty"`
}

// historyLimit is how many audit entries and bindings details shows.
const historyLimit = 50

// Details serves mcp/server/details.
func (s *Service) Details(ctx context.Context, p DetailsParams) (*DetailsResult, error) {
	who, err := need(ctx, auth.ScopeRead)
	if err != nil {
		return nil, err
	}
	if err := s.checkScope(p.Scope); err != nil {
		return nil, err
	}
	id := p.ServerID
	if id == "" {
		id = p.Name
	}
	if id == "" {
		return nil, invalid("server_id is required")
	}
	if err := mayReach(who, id); err != nil {
		return nil, err
	}
	it, err := s.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	v, err := s.Store.SnapshotVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("snapshot version: %w", err)
	}
	d := s.views().Details(ctx, id, historyLimit)
	tools := d.CatalogTools()
	res := &DetailsResult{SnapshotVersion: v, Server: it, Audit: []AuditView{}, RecentBindings: []Binding{},
		UpstreamAuth: s.views().UpstreamAuth(ctx, id, who)}
	res.Catalog = CatalogView{CatalogVersion: mcpconn.CatalogVersion(tools), Tools: []ToolView{},
		Resources: rawList(d.Resources), ResourceTemplates: rawList(d.ResourceTemplates), Prompts: rawList(d.Prompts)}
	for _, t := range tools {
		res.Catalog.Tools = append(res.Catalog.Tools, ToolView{Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchemaSummary: schemaSummary(t.InputSchema), Annotations: t.Annotations})
	}
	res.Health = HealthView{State: known(it.Runtime.State), StatusReason: known(it.StatusReason), LastError: known(it.Runtime.LastError)}
	if q := d.Quarantine; q != nil {
		// Why its tools are withheld, and what changed: what hangar_details
		// shows as its quarantine.
		res.Health.StatusReason = known("quarantined (" + q.Reason + "): " + q.Detail)
	}
	if len(tools) > 0 {
		res.Health.CatalogVersion = &res.Catalog.CatalogVersion
	}
	if d.Served() {
		// A group has no restart backoff of its own: attempt 0.
		attempt := d.Snapshot.Health.ConsecutiveFailures
		res.Health.RetryAttempt = &attempt
		if t := d.Snapshot.RetryAt; !t.IsZero() {
			res.Health.NextRetryAt = known(t.UTC().Format(time.RFC3339))
		}
		res.Health.StderrTail = known(Scrub(d.Snapshot.Stderr, s.secretsOf(ctx, id)))
	}
	for _, e := range d.Audit {
		res.Audit = append(res.Audit, AuditView{At: e.At.UTC().Format(time.RFC3339Nano), Identity: e.Identity, Action: e.Action,
			Tool: e.Tool, Allowed: e.Allowed, Reason: e.Reason, Outcome: e.Outcome, DurationMs: e.DurationMs, Rule: e.Rule})
	}
	if d.Bindings != nil {
		res.RecentBindings = d.Bindings
	}
	return res, nil
}

// views is the read model details answer from: the app's shared one, or
// one over this service's own parts (tests, embedding).
func (s *Service) views() *readmodel.Model {
	if s.Views != nil {
		return s.Views
	}
	m := &readmodel.Model{Audit: s.Store, Stored: s.Store, Installs: s.Store, Log: s.Log}
	if pc, ok := s.Catalog.(*ProviderCatalog); ok {
		if pc.Catalog != nil {
			m.Catalog = pc.Catalog
		}
		if pc.Providers != nil {
			m.Providers = pc.Providers
		}
		if pc.Groups != nil {
			m.Groups = pc.Groups
		}
	}
	if s.Bindings != nil {
		m.Bindings = s.Bindings
	}
	if s.Extras != nil {
		m.Extras = s.Extras
	}
	return m
}

// schemaSummary condenses an input schema to its property names, types
// and required list.
func schemaSummary(raw json.RawMessage) map[string]any {
	var sch struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	out := map[string]any{"type": "object", "properties": map[string]string{}, "required": []string{}}
	if len(raw) == 0 || json.Unmarshal(raw, &sch) != nil {
		return out
	}
	if sch.Type != "" {
		out["type"] = sch.Type
	}
	props := map[string]string{}
	for k, v := range sch.Properties {
		var p struct {
			Type any `json:"type"`
		}
		_ = json.Unmarshal(v, &p)
		props[k] = fmt.Sprint(p.Type)
		if p.Type == nil {
			props[k] = "any"
		}
	}
	out["properties"] = props
	if sch.Required != nil {
		out["required"] = sch.Required
	}
	return out
}

// rawList is items as JSON values, never nil.
func rawList(items []json.RawMessage) []any {
	out := make([]any, len(items))
	for i, x := range items {
		out[i] = x
	}
	return out
}
