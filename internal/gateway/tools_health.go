package gateway

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/provider"
)

func (g *Gateway) healthTools() []server.ServerTool {
	return []server.ServerTool{
		{Tool: mcp.NewTool("hangar_health",
			mcp.WithDescription("System-wide health summary with MCP server state counts and security information."),
			mcp.WithReadOnlyHintAnnotation(true),
		), Handler: g.health},
	}
}

func (g *Gateway) health(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	byState := map[string]int{"cold": 0, "ready": 0, "degraded": 0, "dead": 0}
	total := 0
	for _, p := range g.Providers.List() {
		byState[string(p.State())]++
		total++
	}
	status := "healthy"
	if byState[string(provider.Degraded)] > 0 || byState[string(provider.Dead)] > 0 {
		status = "degraded"
	}
	docker := map[string]any{"available": nil}
	if g.Engine != nil {
		docker["available"] = g.Engine.Available()
		docker["error"] = nilIfEmpty(g.Engine.LastError())
		if !g.Engine.Available() {
			status = "degraded"
		}
	}
	cfg := g.Config()
	return ok(map[string]any{
		"status":      status,
		"mcp_servers": map[string]any{"total": total, "by_state": byState},
		"groups":      map[string]any{"total": 0, "by_state": map[string]int{}, "total_members": 0, "healthy_members": 0},
		"security": map[string]any{"rate_limiting": map[string]any{
			"enabled":        cfg.Auth.Enabled,
			"active_buckets": 0,
			"config":         map[string]any{"rps": cfg.Auth.RateLimit.RPS, "burst": cfg.Auth.RateLimit.Burst},
		}},
		"docker": docker,
	})
}
