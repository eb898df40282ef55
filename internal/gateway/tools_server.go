package gateway

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/sync/errgroup"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/frontdoor"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/readmodel"
	"github.com/mcp-hangar/hangar/internal/redact"
	"github.com/mcp-hangar/hangar/internal/relay"
)

// warmParallelism bounds concurrent starts by hangar_warm.
const warmParallelism = 4

func (g *Gateway) serverTools() []server.ServerTool {
	return []server.ServerTool{
		{Tool: mcp.NewTool("hangar_tools",
			mcp.WithDescription("List the tools available on a MCP server or group. Tool access filtering (allow_list/deny_list) is applied. May start a cold MCP server to discover its tools."),
			mcp.WithString("mcp_server", mcp.Required(), mcp.Description("MCP Server ID or Group ID")),
		), Handler: g.toolsOf},
		{Tool: mcp.NewTool("hangar_details",
			mcp.WithDescription("Detailed information about a MCP server or group, including health tracking, idle time, and tool access policy."),
			mcp.WithString("mcp_server", mcp.Required(), mcp.Description("MCP Server ID or Group ID")),
			mcp.WithReadOnlyHintAnnotation(true),
		), Handler: g.details},
		{Tool: mcp.NewTool("hangar_warm",
			mcp.WithDescription("Pre-start one or more MCP servers so the first tool call does not incur cold-start latency. Groups are skipped."),
			mcp.WithString("mcp_servers", mcp.Description("Comma-separated MCP server IDs. Omit to warm all MCP servers.")),
		), Handler: g.warm},
	}
}

func toolObjects(tools []mcpconn.Tool) []map[string]any {
	out := make([]map[string]any, len(tools))
	for i, t := range tools {
		m := map[string]any{"name": t.Name, "description": t.Description}
		if len(t.InputSchema) > 0 {
			m["inputSchema"] = t.InputSchema
		} else {
			m["inputSchema"] = map[string]any{"type": "object"}
		}
		out[i] = m
	}
	return out
}

func (g *Gateway) toolsOf(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, err := req.RequireString("mcp_server")
	if err != nil {
		return fail(err)
	}
	if grp, found := g.Groups.Get(id); found {
		tools, err := grp.Tools(ctx, relay.ProgressTo(ctx, req))
		if err != nil {
			return fail(err)
		}
		return ok(map[string]any{
			"mcp_server": id,
			"state":      grp.State(),
			"group":      true,
			"tools":      toolObjects(g.visibleTools(ctx, id, tools)),
		})
	}
	p, found := g.Providers.Get(id)
	if !found {
		return unknownServer(id)
	}
	ctx, cancel := context.WithTimeout(ctx, p.StartWait())
	defer cancel()
	tools, err := p.ToolsOrStart(ctx, relay.ProgressTo(ctx, req))
	if err != nil {
		return fail(err)
	}
	return ok(map[string]any{
		"mcp_server": id,
		"state":      p.State(),
		"predefined": p.Predefined(),
		"tools":      toolObjects(g.visibleTools(ctx, id, tools)),
	})
}

// details answers from the read model: the view mcp/server/details and
// the dashboard show too, encoded in seed 001's shape.
func (g *Gateway) details(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, err := req.RequireString("mcp_server")
	if err != nil {
		return fail(err)
	}
	views := g.Views
	if views == nil {
		// Not wired by the app (tests, embedding): a model over the
		// gateway's own parts.
		views = &readmodel.Model{Providers: g.Providers, Groups: g.Groups, Catalog: g.Catalog, Egress: g.EgressDetails, Log: g.Log}
		if g.AuditStore != nil {
			views.Audit = g.AuditStore
		}
		if g.Images != nil {
			views.Images = g.Images
		}
		if g.FrontDoor != nil {
			views.FrontDoor = g.FrontDoor
		}
	}
	d := views.Details(ctx, id, recentAuditLimit)
	if bs, ok := d.FrontDoor["tools"].([]frontdoor.Binding); ok && g.FrontDoor != nil {
		// What the policy hides from the caller is not shown either.
		d.FrontDoor["tools"] = g.visibleBindings(ctx, bs)
	}
	if d.Group != nil {
		out := groupDetails(*d.Group)
		if d.FrontDoor != nil {
			out["front_door"] = d.FrontDoor
		}
		return ok(out)
	}
	if !d.Provider {
		return unknownServer(id)
	}
	s, spec := d.Snapshot, d.Spec
	var idle any
	if !s.LastUsed.IsZero() {
		idle = time.Since(s.LastUsed).Seconds()
	}
	shadowed := make([]map[string]any, 0, len(d.ShadowedClaim))
	for _, c := range d.ShadowedClaim {
		shadowed = append(shadowed, map[string]any{"source": c.Source, "reason": c.Reason})
	}
	meta := map[string]any{
		"description":  spec.Description,
		"transport":    transportOf(spec.Transport),
		"image":        spec.Image,
		"endpoint":     redact.URL(spec.Endpoint),
		"container_id": s.ContainerID,
		"started_at":   timeOrNil(s.StartedAt),
		"in_flight":    s.Inflight,
		"last_error":   nilIfEmpty(s.LastError),
		"stderr_tail":  s.Stderr,
		"idle_ttl_s":   spec.IdleTTL.Seconds(),
		"source":       d.Source,
		// Beyond seed 001: claims on this ID from sources of lower
		// precedence, which are not served.
		"shadowed_claims": shadowed,
	}
	if spec.Image != "" {
		meta["pulling"] = pullingField(d.Image)
		meta["image_digest"] = nilIfEmpty(d.Image.Digest)
		meta["image_id"] = nilIfEmpty(d.Image.ID)
	}
	// Beyond seed 001: the newest audit entries of this server (null
	// without an audit trail). Entries hold names, verdicts and kinds only
	// (see RecordAudit), never arguments or results.
	var audit any
	if d.AuditKnown {
		entries := make([]map[string]any, 0, len(d.Audit))
		for _, e := range d.Audit {
			entries = append(entries, map[string]any{
				"at":          e.At.UTC().Format(time.RFC3339Nano),
				"identity":    e.Identity,
				"action":      e.Action,
				"tool":        e.Tool,
				"allowed":     e.Allowed,
				"reason":      e.Reason,
				"outcome":     e.Outcome,
				"duration_ms": e.DurationMs,
				// Beyond seed 001: the policy rule that decided ("" when none did).
				"rule": e.Rule,
			})
		}
		audit = entries
	}
	out := map[string]any{
		"mcp_server": id,
		"state":      s.State,
		"mode":       s.Mode,
		"alive":      s.Alive,
		"tools":      toolObjects(g.visibleTools(ctx, id, d.Tools)),
		"health": map[string]any{
			"consecutive_failures": s.Health.ConsecutiveFailures,
			"last_check":           timeOrNil(s.Health.LastCheck),
			"last_success_at":      timeOrNil(s.Health.LastSuccessAt),
			"last_failure_at":      timeOrNil(s.Health.LastFailureAt),
			"total_invocations":    s.Health.TotalInvocations,
			"total_failures":       s.Health.TotalFailures,
		},
		"idle_time":    idle,
		"meta":         meta,
		"quarantine":   quarantineOf(d.Quarantine),
		"recent_audit": audit,
		"tools_policy": map[string]any{
			"type":           d.Policy.Type,
			"has_allow_list": d.Policy.HasAllowList,
			"has_deny_list":  d.Policy.HasDenyList,
			"filtered_count": d.Policy.FilteredCount,
		},
	}
	if d.FrontDoor != nil {
		out["front_door"] = d.FrontDoor
	}
	if d.Egress != nil {
		out["egress"] = d.Egress
	}
	// Beyond seed 001: the calling identity's upstream credential
	// (upstream_auth), and the method that drops it.
	if st := views.UpstreamAuth(ctx, id, auth.Caller(ctx)); st != nil {
		ua := map[string]any{"type": st.Type, "per_identity": st.PerIdentity, "connected": st.Connected,
			"connected_at": timePtrOrNil(st.Since), "expires_at": timePtrOrNil(st.Expires)}
		if st.Type == config.UpstreamOAuth {
			ua["disconnect"] = map[string]any{"method": "mcp/server/disconnect", "params": map[string]any{"name": id}}
		}
		out["upstream_auth"] = ua
	}
	return ok(out)
}

func timePtrOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return timeOrNil(*t)
}

func transportOf(t string) string {
	if t == "" {
		return "stdio"
	}
	return t
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// warm starts MCP servers. Groups are skipped: warming all leaves groups
// and their members alone, and a group named explicitly is reported in
// failed with a group_skipped error (hangar_start starts a group). A member
// named explicitly is warmed like any server.
func (g *Gateway) warm(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	caller := auth.Caller(ctx)
	progress := relay.ProgressTo(ctx, req)
	var ids []string
	for _, p := range g.topLevel() {
		if caller.MayReach(p.ID()) {
			ids = append(ids, p.ID())
		}
	}
	if list := strings.TrimSpace(req.GetString("mcp_servers", "")); list != "" {
		ids = nil
		for _, id := range strings.Split(list, ",") {
			if id = strings.TrimSpace(id); id != "" {
				ids = append(ids, id)
			}
		}
	}
	var mu sync.Mutex
	warmed, already, failed := []string{}, []string{}, []map[string]any{}
	var eg errgroup.Group
	eg.SetLimit(warmParallelism)
	for _, id := range ids {
		if e := caller.Check("", id); e != nil {
			failed = append(failed, map[string]any{"id": id, "error": e.Message})
			continue
		}
		if _, isGroup := g.Groups.Get(id); isGroup {
			mu.Lock()
			failed = append(failed, map[string]any{"id": id, "error": groupSkipped(id)})
			mu.Unlock()
			continue
		}
		p, found := g.Providers.Get(id)
		if !found || p.State() == provider.Ready {
			mu.Lock()
			if !found {
				failed = append(failed, map[string]any{"id": id, "error": (&provider.Error{Kind: provider.KindUnknownServer, ID: id}).Error()})
			} else {
				already = append(already, id)
			}
			mu.Unlock()
			continue
		}
		eg.Go(func() error {
			sctx, cancel := context.WithTimeout(ctx, p.StartWait())
			defer cancel()
			_, err := p.Start(sctx, progress)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, map[string]any{"id": id, "error": err.Error()})
			} else {
				warmed = append(warmed, id)
			}
			return nil
		})
	}
	_ = eg.Wait()
	sort.Strings(warmed)
	sort.Slice(failed, func(i, j int) bool { return failed[i]["id"].(string) < failed[j]["id"].(string) })
	return ok(map[string]any{
		"warmed":       warmed,
		"already_warm": already,
		"failed":       failed,
		"summary":      fmt.Sprintf("%d warmed, %d already warm, %d failed", len(warmed), len(already), len(failed)),
	})
}

// groupSkipped is hangar_warm's error for a group named explicitly.
func groupSkipped(id string) string {
	return "group_skipped: " + id + " (hangar_warm skips groups; hangar_start starts all members of a group)"
}
