package gateway

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/discovery"
)

// DiscoveryService is what the discovery tools need of discovery.Service.
type DiscoveryService interface {
	Scan(ctx context.Context) discovery.ScanResult
	Pending() []discovery.PendingEntry
	Quarantined() []discovery.QuarantineEntry
	Approve(ctx context.Context, name string) discovery.ApproveResult
	Sources() []discovery.SourceStatus
}

var _ DiscoveryService = (*discovery.Service)(nil)

// errDiscoveryOff is every discovery tool's answer when discovery is off:
// a normal result, as in the Python hangar, not a tool error.
const errDiscoveryOff = "Discovery not configured. Enable discovery in config.yaml"

// approveTimeout bounds hangar_approve, which may wait for a running scan.
const approveTimeout = 2 * time.Minute

func (g *Gateway) discoveryTools() []server.ServerTool {
	return []server.ServerTool{
		{Tool: mcp.NewTool("hangar_discover",
			mcp.WithDescription("Trigger a discovery scan across all enabled sources. Discovered MCP servers are added to the pending list for approval (unless auto_register is enabled)."),
		), Handler: g.discover},
		{Tool: mcp.NewTool("hangar_discovered",
			mcp.WithDescription("List MCP servers discovered but not yet registered (pending approval), and those refused their name (status refused, with the reason)."),
			mcp.WithReadOnlyHintAnnotation(true),
		), Handler: g.discovered},
		{Tool: mcp.NewTool("hangar_quarantine",
			mcp.WithDescription("List MCP servers that failed health checks during discovery and were quarantined."),
			mcp.WithReadOnlyHintAnnotation(true),
		), Handler: g.quarantine},
		{Tool: mcp.NewTool("hangar_approve",
			mcp.WithDescription("Approve a pending or quarantined MCP server for registration. Registers the MCP server in COLD state."),
			mcp.WithString("mcp_server", mcp.Required(),
				mcp.Description("MCP Server name from hangar_discovered or hangar_quarantine output")),
		), Handler: g.approve},
		{Tool: mcp.NewTool("hangar_sources",
			mcp.WithDescription("List the status of all configured discovery sources."),
			mcp.WithReadOnlyHintAnnotation(true),
		), Handler: g.sources},
	}
}

func discoveryOff() (*mcp.CallToolResult, error) {
	return ok(map[string]any{"error": errDiscoveryOff})
}

// rfc3339 renders discovery times; null when unset.
func rfc3339(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

func (g *Gateway) discover(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	d := g.Discovery
	if d == nil {
		return discoveryOff()
	}
	r := d.Scan(ctx)
	sources := r.SourceResults
	if sources == nil {
		sources = map[string]int{}
	}
	return ok(map[string]any{
		"discovered_count":   r.DiscoveredCount,
		"registered_count":   r.RegisteredCount,
		"updated_count":      r.UpdatedCount,
		"deregistered_count": r.DeregisteredCount,
		"quarantined_count":  r.QuarantinedCount,
		"error_count":        r.ErrorCount,
		"duration_ms":        float64(r.Duration.Microseconds()) / 1000,
		"source_results":     sources,
	})
}

func (g *Gateway) discovered(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	d := g.Discovery
	if d == nil {
		return discoveryOff()
	}
	mayReach := reachable(ctx)
	pending := []map[string]any{}
	for _, p := range d.Pending() {
		if !mayReach(p.Name) {
			continue
		}
		e := map[string]any{
			"name":          p.Name,
			"source":        p.Source,
			"mode":          p.Mode,
			"discovered_at": rfc3339(p.DiscoveredAt),
			"fingerprint":   p.Fingerprint,
			// Beyond seed 001: "refused" when the name is not served
			// (a group's or a config server's), with the reason.
			"status": p.Status,
		}
		if p.Reason != "" {
			e["reason"] = p.Reason
		}
		// Beyond seed 001: what is known of its catalog, which approving
		// it pins (a first start serving anything else is quarantined as
		// tools_changed_since_approval); empty when none was read.
		e["tools"] = g.shownTools(ctx, p.Name)
		pending = append(pending, e)
	}
	return ok(map[string]any{"pending": pending})
}

func (g *Gateway) quarantine(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	mayReach := reachable(ctx)
	d := g.Discovery
	if d == nil {
		// Providers are quarantined without discovery too (their tools
		// or image changed); only a gateway with nothing to show answers
		// that discovery is off.
		if list := g.pinQuarantined(mayReach); len(list) > 0 {
			return ok(map[string]any{"quarantined": list})
		}
		return discoveryOff()
	}
	list := []map[string]any{}
	for _, q := range d.Quarantined() {
		if !mayReach(q.Name) {
			continue
		}
		list = append(list, map[string]any{
			"name":            q.Name,
			"source":          q.Source,
			"reason":          q.Reason,
			"quarantine_time": rfc3339(q.QuarantineTime),
		})
	}
	list = append(list, g.pinQuarantined(mayReach)...)
	return ok(map[string]any{"quarantined": list})
}

func (g *Gateway) approve(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name, err := req.RequireString("mcp_server")
	if err != nil && g.Discovery != nil {
		return fail(err)
	}
	if res, handled := g.approvePins(ctx, name); handled {
		return res, nil
	}
	d := g.Discovery
	if d == nil {
		return discoveryOff()
	}
	ctx, cancel := context.WithTimeout(ctx, approveTimeout)
	defer cancel()
	// The catalog the operator was shown is pinned before the approval
	// is: a server that serves anything else at its first start is
	// quarantined (tools_changed_since_approval), on every replica.
	restore, err := g.pinApproved(ctx, name)
	if err != nil {
		return ok(map[string]any{"approved": false, "mcp_server": name, "error": err.Error()})
	}
	r := d.Approve(ctx, name)
	out := map[string]any{"approved": r.Approved, "mcp_server": r.Server}
	if r.Approved {
		out["status"] = r.Status
	} else {
		restore()
		out["error"] = r.Error
	}
	return ok(out)
}

func (g *Gateway) sources(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	d := g.Discovery
	if d == nil {
		return discoveryOff()
	}
	caller := auth.Caller(ctx)
	limited := len(caller.Servers) > 0
	list := []map[string]any{}
	for _, s := range d.Sources() {
		var msg any
		if s.ErrorMessage != "" && !limited {
			// A source's problems name the candidates they are about: a
			// caller limited to some servers is not told of the others.
			msg = s.ErrorMessage
		}
		if limited {
			s.ServersCount = 0
			for _, name := range s.Servers {
				if caller.MayReach(name) {
					s.ServersCount++
				}
			}
		}
		list = append(list, map[string]any{
			"source_type":       s.SourceType,
			"mode":              s.Mode,
			"is_healthy":        s.IsHealthy,
			"is_enabled":        s.IsEnabled,
			"last_discovery":    rfc3339(s.LastDiscovery),
			"mcp_servers_count": s.ServersCount,
			"error_message":     msg,
		})
	}
	return ok(map[string]any{"sources": list})
}
