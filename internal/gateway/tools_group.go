package gateway

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/group"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/relay"
)

func (g *Gateway) groupTools() []server.ServerTool {
	return []server.ServerTool{
		{Tool: mcp.NewTool("hangar_group_list",
			mcp.WithDescription("List all MCP server groups with member details, health state, and load balancing configuration."),
			mcp.WithReadOnlyHintAnnotation(true),
		), Handler: g.groupList},
		{Tool: mcp.NewTool("hangar_group_rebalance",
			mcp.WithDescription("Rebalance a group by re-checking all members. Recovered members rejoin rotation, failed members are removed. Resets the circuit breaker."),
			mcp.WithString("group", mcp.Required(), mcp.Description("Group ID")),
		), Handler: g.groupRebalance},
	}
}

func (g *Gateway) groupList(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	mayReach := reachable(ctx)
	groups := []map[string]any{}
	for _, grp := range g.Groups.List() {
		if !mayReach(grp.ID()) {
			continue
		}
		groups = append(groups, groupDetails(grp.Status()))
	}
	return ok(map[string]any{"groups": groups})
}

func (g *Gateway) groupRebalance(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, err := req.RequireString("group")
	if err != nil {
		return fail(err)
	}
	grp, found := g.Groups.Get(id)
	if !found {
		return fail(&provider.Error{Kind: provider.KindUnknownGroup, ID: id})
	}
	st, err := grp.Rebalance(ctx, relay.ProgressTo(ctx, req))
	if err != nil {
		return fail(err)
	}
	return ok(map[string]any{
		"group_id":            st.ID,
		"state":               st.State,
		"healthy_count":       st.HealthyCount,
		"total_members":       st.TotalMembers,
		"members_in_rotation": st.InRotation,
	})
}

// groupDetails is a group as hangar_details and hangar_group_list show it.
func groupDetails(st group.Status) map[string]any {
	members := make([]map[string]any, len(st.Members))
	for i, m := range st.Members {
		members[i] = map[string]any{
			"id":                   m.ID,
			"state":                m.State,
			"in_rotation":          m.InRotation,
			"weight":               m.Weight,
			"priority":             m.Priority,
			"consecutive_failures": m.ConsecutiveFailures,
		}
	}
	return map[string]any{
		"group_id":      st.ID,
		"description":   nilIfEmpty(st.Description),
		"state":         st.State,
		"strategy":      st.Strategy,
		"min_healthy":   st.MinHealthy,
		"healthy_count": st.HealthyCount,
		"total_members": st.TotalMembers,
		"is_available":  st.Available,
		"circuit_open":  st.CircuitOpen,
		"members":       members,
	}
}

// topLevel lists the providers that are not group members: the MCP
// servers hangar_list, hangar_status, hangar_health and hangar_warm show.
// Members are shown through their groups (and by hangar_details of their
// own ID). The catalog says which IDs exist; the manager holds their
// providers.
func (g *Gateway) topLevel() []*provider.Provider {
	entries := g.Catalog.List()
	out := make([]*provider.Provider, 0, len(entries))
	for _, e := range entries {
		if e.Group != "" || e.IsGroup() {
			continue
		}
		if p, ok := g.Providers.Get(e.ID); ok {
			out = append(out, p)
		}
	}
	return out
}

// sourceOf is the catalog source an ID is served from ("" if none).
func (g *Gateway) sourceOf(id string) string {
	e, _ := g.Catalog.Get(id)
	return string(e.Source)
}
