package gateway

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// The gateway's side of tool pinning (package pin, provider/pinning.go):
// hangar_details shows why a provider's tools are withheld, hangar_quarantine
// lists it, and hangar_approve accepts its new tools.

// quarantineSource is the "source" of a pin quarantine in hangar_quarantine;
// imageQuarantineSource that of an image the image gate refused.
const (
	quarantineSource      = "tool_pins"
	imageQuarantineSource = "image_gate"
)

func quarantineSourceOf(reason string) string {
	if reason == provider.ReasonImageChanged || reason == provider.ReasonSignatureInvalid {
		return imageQuarantineSource
	}
	return quarantineSource
}

// quarantineOf is hangar_details' "quarantine" field: null (q nil) when
// the provider serves its pinned tools.
func quarantineOf(q *provider.Quarantine) any {
	if q == nil {
		return nil
	}
	changes := q.Changes
	if changes == nil {
		changes = []provider.ToolChange{}
	}
	return map[string]any{
		"reason":          q.Reason,
		"detail":          q.Detail,
		"changes":         changes,
		"quarantine_time": timeOrNil(q.Since),
		"approve_with":    "hangar_approve",
	}
}

// pinQuarantined lists the providers whose tools are withheld, in
// hangar_quarantine's shape.
func (g *Gateway) pinQuarantined(mayReach func(id string) bool) []map[string]any {
	var out []map[string]any
	if g.Providers == nil {
		return nil
	}
	for _, p := range g.Providers.List() {
		if !mayReach(p.ID()) {
			continue
		}
		q, ok := p.Quarantined()
		if !ok {
			continue
		}
		out = append(out, map[string]any{
			"name":            p.ID(),
			"source":          quarantineSourceOf(q.Reason),
			"reason":          q.Reason,
			"quarantine_time": timeOrNil(q.Since),
			"detail":          q.Detail,
		})
	}
	return out
}

// approvePins is hangar_approve for a quarantined provider, whatever the
// reason: it re-pins the tools it now serves (tool_schema_changed) or
// records its image's new digest (image_changed). handled is false when
// name is not such a provider, so discovery gets to decide.
func (g *Gateway) approvePins(ctx context.Context, name string) (res *mcp.CallToolResult, handled bool) {
	if g.Providers == nil {
		return nil, false
	}
	p, found := g.Providers.Get(name)
	if !found {
		return nil, false
	}
	if _, q := p.Quarantined(); !q {
		return nil, false
	}
	a, err := p.Approve(ctx)
	if errors.Is(err, provider.ErrNotQuarantined) {
		// Approved by someone else meanwhile: the outcome asked for.
		err = nil
	}
	if err != nil {
		res, _ = ok(map[string]any{"approved": false, "mcp_server": name, "error": err.Error()})
		return res, true
	}
	out := map[string]any{"approved": true, "mcp_server": name, "status": "registered", "reason": a.Reason}
	switch quarantineSourceOf(a.Reason) {
	case imageQuarantineSource:
		g.logFrom(ctx).Info("image approved", telemetry.FieldServer, name, audit.FieldReason, a.Reason)
	default:
		g.logFrom(ctx).Info("tools re-pinned by approval", telemetry.FieldServer, name, "tools", a.Tools)
		out["tools_pinned"] = a.Tools
	}
	res, _ = ok(out)
	return res, true
}

// forgetPins drops a server's pins when an operator approves it afresh
// (a discovered container): its next start pins what it serves then.
func (g *Gateway) forgetPins(ctx context.Context, server string) {
	if g.Pins == nil || server == "" {
		return
	}
	if err := g.Pins.ReplaceToolPins(ctx, server, nil); err != nil {
		g.logFrom(ctx).Warn("tool pins not cleared on approval", telemetry.FieldServer, server, telemetry.FieldError, err)
	}
}

// withheld reports whether nothing of server is served to agents now: a
// quarantined provider (its tools, resources, templates, prompts,
// completions and resource updates) or one the management policy
// disabled. The front door asks it per request.
func (g *Gateway) withheld(server string) bool {
	if p, ok := g.Providers.Get(server); ok {
		if _, q := p.Quarantined(); q {
			return true
		}
	}
	return g.refused(server) != nil
}
