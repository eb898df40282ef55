package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/pin"
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

// shownTools are the names and descriptions of the catalog the views
// show of server while nothing runs it (hangar_discovered's "tools").
func (g *Gateway) shownTools(ctx context.Context, server string) []map[string]any {
	out := []map[string]any{}
	if g.Views == nil {
		return out
	}
	for _, t := range g.Views.ShownCatalog(ctx, server) {
		out = append(out, map[string]any{"name": t.Name, "description": t.Description})
	}
	return out
}

// pinApproved pins, for a discovered server about to be approved, the
// catalog the views showed of it (readmodel's ShownCatalog: what the
// operator saw; none is an empty catalog). restore puts back the pins it
// replaced, for an approval that then failed. A server something serves
// already keeps its pins (its approval fails: the name is taken).
func (g *Gateway) pinApproved(ctx context.Context, server string) (restore func(), err error) {
	restore = func() {}
	if g.Pins == nil || server == "" {
		return restore, nil
	}
	if g.Providers != nil {
		if _, served := g.Providers.Get(server); served {
			return restore, nil
		}
	}
	var shown []mcpconn.Tool
	if g.Views != nil {
		shown = g.Views.ShownCatalog(ctx, server)
	}
	prev, err := g.Pins.ToolPins(ctx, server)
	if err != nil {
		return restore, fmt.Errorf("approval not saved, nothing changed: read the tool pins: %w", err)
	}
	if err := g.Pins.ReplaceToolPins(ctx, server, pin.Approved(server, shown, time.Now().UTC())); err != nil {
		return restore, fmt.Errorf("approval not saved, nothing changed: pin the approved catalog: %w", err)
	}
	g.logFrom(ctx).Info("catalog shown pinned for approval", telemetry.FieldServer, server, "tools", len(shown))
	return func() {
		if err := g.Pins.ReplaceToolPins(context.WithoutCancel(ctx), server, prev); err != nil {
			g.logFrom(ctx).Warn("tool pins of a failed approval not restored", telemetry.FieldServer, server, telemetry.FieldError, err)
		}
	}, nil
}

// inQuarantine reports whether server is a quarantined provider: the
// front door withholds its tools.
func (g *Gateway) inQuarantine(server string) bool {
	p, ok := g.Providers.Get(server)
	return ok && p.InQuarantine()
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
