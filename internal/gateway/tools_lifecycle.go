package gateway

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/group"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/relay"
)

func (g *Gateway) lifecycleTools() []server.ServerTool {
	return []server.ServerTool{
		{Tool: mcp.NewTool("hangar_list",
			mcp.WithDescription("List all MCP servers and groups with state and tool counts."),
			mcp.WithString("state_filter", mcp.Description(`Filter by state: "cold", "ready", "degraded", "dead"`),
				mcp.Enum("cold", "initializing", "ready", "degraded", "dead")),
			mcp.WithReadOnlyHintAnnotation(true),
		), Handler: g.list},
		{Tool: mcp.NewTool("hangar_start",
			mcp.WithDescription("Start a MCP server or group. Transitions the MCP server from COLD to READY."),
			mcp.WithString("mcp_server", mcp.Required(), mcp.Description("MCP Server ID or Group ID")),
		), Handler: g.start},
		{Tool: mcp.NewTool("hangar_stop",
			mcp.WithDescription("Stop a running MCP server or group. State transitions to COLD."),
			mcp.WithString("mcp_server", mcp.Required(), mcp.Description("MCP Server ID or Group ID")),
		), Handler: g.stop},
		{Tool: mcp.NewTool("hangar_status",
			mcp.WithDescription("Human-readable health dashboard with state indicators for all MCP servers and groups."),
			mcp.WithReadOnlyHintAnnotation(true),
		), Handler: g.status},
		{Tool: mcp.NewTool("hangar_reload_config",
			mcp.WithDescription("Reload configuration from disk, applying MCP server additions, removals, and updates."),
			mcp.WithBoolean("graceful", mcp.DefaultBool(true), mcp.Description("Wait for idle before stopping modified/removed MCP servers")),
		), Handler: g.reload},
	}
}

func (g *Gateway) reload(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	r := g.Reload(ctx, req.GetBool("graceful", true))
	if r.Status != "success" {
		return ok(map[string]any{"status": r.Status, "message": r.Message, "error_type": r.ErrorType, "duration_ms": r.DurationMs})
	}
	return ok(r)
}

// healthStatus condenses state and failures into one word.
func healthStatus(s provider.Snapshot) string {
	switch {
	case s.State == provider.Dead:
		return "unhealthy"
	case s.State == provider.Degraded || s.Health.ConsecutiveFailures > 0:
		return "degraded"
	case s.State == provider.Ready:
		return "healthy"
	}
	return "unknown"
}

// listedServer and listedGroup are hangar_list's entries (seed 001). Their
// fields are in the order of their JSON names, as a map would write them:
// a struct is written without sorting keys or boxing values.
type listedServer struct {
	Alive           bool           `json:"alive"`
	Description     string         `json:"description"`
	HealthStatus    string         `json:"health_status"`
	MCPServer       string         `json:"mcp_server"`
	Mode            string         `json:"mode"`
	Source          string         `json:"source"`
	State           provider.State `json:"state"`
	ToolsCount      int            `json:"tools_count"`
	ToolsPredefined bool           `json:"tools_predefined"`
}

type listedGroup struct {
	GroupID      string      `json:"group_id"`
	HealthyCount int         `json:"healthy_count"`
	State        group.State `json:"state"`
	Strategy     string      `json:"strategy"`
	TotalMembers int         `json:"total_members"`
}

func (g *Gateway) list(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	mayReach := reachable(ctx)
	filter := req.GetString("state_filter", "")
	switch filter {
	case "", "cold", "initializing", "ready", "degraded", "dead":
	default:
		return fail(fmt.Errorf("invalid state_filter: %q (want cold, ready, degraded or dead)", filter))
	}
	servers := []listedServer{}
	for _, p := range g.topLevel() {
		source := g.sourceOf(p.ID())
		if source == string(catalog.SourceHotload) {
			continue // in runtime_mcp_servers
		}
		s := p.Snapshot()
		if filter != "" && string(s.State) != filter || !mayReach(s.ID) {
			continue
		}
		servers = append(servers, listedServer{
			MCPServer:       s.ID,
			State:           s.State,
			Mode:            s.Mode,
			Alive:           s.Alive,
			ToolsCount:      s.ToolsCount,
			HealthStatus:    healthStatus(s),
			ToolsPredefined: p.Predefined(),
			Description:     p.Spec().Description,
			Source:          source,
		})
	}
	// The filter applies to groups too; only cold and degraded are also
	// group states.
	groups := []listedGroup{}
	for _, grp := range g.Groups.List() {
		st := grp.Status()
		if filter != "" && string(st.State) != filter || !mayReach(st.ID) {
			continue
		}
		groups = append(groups, listedGroup{
			GroupID:      st.ID,
			State:        st.State,
			Strategy:     st.Strategy,
			HealthyCount: st.HealthyCount,
			TotalMembers: st.TotalMembers,
		})
	}
	return ok(map[string]any{
		"mcp_servers":         servers,
		"groups":              groups,
		"runtime_mcp_servers": runtimeList(g.hotLoadFor(ctx), filter),
	})
}

func (g *Gateway) start(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, err := req.RequireString("mcp_server")
	if err != nil {
		return fail(err)
	}
	if err := g.refused(id); err != nil {
		return fail(err)
	}
	if grp, found := g.Groups.Get(id); found {
		return g.startGroup(ctx, grp, relay.ProgressTo(ctx, req))
	}
	p, found := g.Providers.Get(id)
	if !found {
		return unknownServer(id)
	}
	ctx, cancel := context.WithTimeout(ctx, p.StartWait())
	defer cancel()
	tools, err := p.Start(ctx, relay.ProgressTo(ctx, req))
	if err != nil {
		return fail(err)
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return ok(map[string]any{"mcp_server": id, "state": p.State(), "tools": names})
}

// startGroup starts every member of a group in parallel, a few at a time,
// each within its own start timeout. It fails only when no member starts;
// members_started counts the members running afterwards.
func (g *Gateway) startGroup(ctx context.Context, grp *group.Group, progress call.Progress) (*mcp.CallToolResult, error) {
	started, err := grp.Start(ctx, progress)
	if err != nil {
		return fail(err)
	}
	st := grp.Status()
	return ok(map[string]any{
		"group":           st.ID,
		"state":           st.State,
		"members_started": started,
		"healthy_count":   st.HealthyCount,
		"total_members":   st.TotalMembers,
	})
}

// ReasonManual is the stop reason of hangar_stop.
const ReasonManual = "manual_stop"

func (g *Gateway) stop(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, err := req.RequireString("mcp_server")
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if grp, found := g.Groups.Get(id); found {
		if err := grp.Stop(ctx, ReasonManual); err != nil {
			return fail(err)
		}
		return ok(map[string]any{"group": id, "state": grp.State(), "stopped": true})
	}
	p, found := g.Providers.Get(id)
	if !found {
		return unknownServer(id)
	}
	if err := p.Stop(ctx, ReasonManual, false); err != nil {
		return fail(fmt.Errorf("stop %s: %w", id, err))
	}
	return ok(map[string]any{"stopped": id, "reason": ReasonManual})
}

func (g *Gateway) status(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	mayReach := reachable(ctx)
	up := time.Since(g.Started)
	servers := []map[string]any{}
	healthy := 0
	var lines []string
	for _, p := range g.topLevel() {
		source := g.sourceOf(p.ID())
		if source == string(catalog.SourceHotload) {
			continue // in runtime_mcp_servers
		}
		s := p.Snapshot()
		if !mayReach(s.ID) {
			continue
		}
		if s.State == provider.Ready {
			healthy++
		}
		img := g.imageStatus(s.ID)
		servers = append(servers, map[string]any{
			"id":        s.ID,
			"indicator": s.State.Indicator(),
			"state":     s.State,
			"mode":      s.Mode,
			"last_used": timeOrNil(s.LastUsed),
			"pulling":   pullingField(img),
		})
		detail := s.Mode + pullingNote(img)
		if s.ToolsCount > 0 {
			detail += fmt.Sprintf(", %d tools", s.ToolsCount)
		}
		if s.State == provider.Dead && s.LastError != "" {
			detail += ", " + s.LastError
		}
		lines = append(lines, fmt.Sprintf("%s %s (%s)", s.State.Indicator(), s.ID, detail))
	}
	groups := []map[string]any{}
	for _, grp := range g.Groups.List() {
		st := grp.Status()
		if !mayReach(st.ID) {
			continue
		}
		groups = append(groups, map[string]any{
			"id":              st.ID,
			"indicator":       st.State.Indicator(),
			"state":           st.State,
			"healthy_members": st.HealthyCount,
			"total_members":   st.TotalMembers,
		})
		detail := fmt.Sprintf("group, %s, %d/%d members healthy", st.Strategy, st.HealthyCount, st.TotalMembers)
		if st.CircuitOpen {
			detail += ", circuit open"
		}
		lines = append(lines, fmt.Sprintf("%s %s (%s)", st.State.Indicator(), st.ID, detail))
	}
	runtime, runtimeHealthy, runtimeLines := runtimeStatus(g.hotLoadFor(ctx))
	lines = append(lines, runtimeLines...)
	total := len(servers)
	header := fmt.Sprintf("hangar: %d/%d MCP servers ready, up %s", healthy, total, humanDuration(up))
	if len(groups) > 0 {
		header = fmt.Sprintf("hangar: %d/%d MCP servers ready, %d group(s), up %s", healthy, total, len(groups), humanDuration(up))
	}
	if len(lines) == 0 {
		lines = []string{"(no MCP servers configured)"}
	}
	return ok(map[string]any{
		"mcp_servers":         servers,
		"groups":              groups,
		"runtime_mcp_servers": runtime,
		"summary": map[string]any{
			"healthy_mcp_servers": healthy,
			"total_mcp_servers":   total,
			"runtime_mcp_servers": len(runtime),
			"runtime_healthy":     runtimeHealthy,
			"uptime":              humanDuration(up),
			"uptime_seconds":      up.Seconds(),
		},
		"formatted": header + "\n" + strings.Join(lines, "\n"),
	})
}

// humanDuration renders "2h 15m", "3m 4s" or "12s".
func humanDuration(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh %dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm %ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}
