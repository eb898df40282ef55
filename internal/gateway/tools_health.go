package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/group"
	"github.com/mcp-hangar/hangar/internal/metrics"
	"github.com/mcp-hangar/hangar/internal/provider"
)

func (g *Gateway) healthTools() []server.ServerTool {
	return []server.ServerTool{
		{Tool: mcp.NewTool("hangar_health",
			mcp.WithDescription("System-wide health summary with MCP server state counts and security information."),
			mcp.WithReadOnlyHintAnnotation(true),
		), Handler: g.health},
		{Tool: mcp.NewTool("hangar_metrics",
			mcp.WithDescription("MCP Server metrics in JSON or Prometheus exposition format."),
			mcp.WithString("format", mcp.DefaultString("json"), mcp.Enum("json", "prometheus"),
				mcp.Description(`Output format: "json" or "prometheus"`)),
			mcp.WithReadOnlyHintAnnotation(true),
		), Handler: g.metrics},
	}
}

func (g *Gateway) metrics(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	format := req.GetString("format", "json")
	if g.Metrics == nil {
		return fail(errors.New("metrics are not enabled"))
	}
	// A caller limited to some servers reads their series only.
	var keep func(string) bool
	if caller := auth.Caller(ctx); len(caller.Servers) > 0 {
		keep = caller.MayReach
	}
	switch format {
	case "prometheus":
		text, err := g.Metrics.TextFor(keep)
		if err != nil {
			return fail(err)
		}
		return ok(map[string]any{"metrics": text})
	case "json":
	default:
		return fail(fmt.Errorf("invalid format: %q (want json or prometheus)", format))
	}
	sum, err := g.Metrics.SummarizeFor(keep)
	if err != nil {
		return fail(err)
	}
	mayReach := reachable(ctx)
	// Group members are listed under mcp_servers too: calls through a group
	// land on them, and their counters are where those calls show.
	servers := map[string]any{}
	var calls, errs int64
	for _, p := range g.Providers.List() {
		if !mayReach(p.ID()) {
			continue
		}
		s := p.Snapshot()
		t := sum.Servers[s.ID]
		if t == nil {
			t = &metrics.ServerTotals{}
		}
		var avg float64
		if t.LatencyCount > 0 {
			avg = t.LatencySumMs / float64(t.LatencyCount)
		}
		servers[s.ID] = map[string]any{
			"state": s.State, "mode": s.Mode, "tools_count": s.ToolsCount,
			"invocations": t.Invocations, "errors": t.Errors, "avg_latency_ms": avg,
		}
		calls += t.Invocations
		errs += t.Errors
	}
	groups := map[string]any{}
	for _, grp := range g.Groups.List() {
		if !mayReach(grp.ID()) {
			continue
		}
		st := grp.Status()
		groups[st.ID] = map[string]any{
			"state": st.State, "strategy": st.Strategy,
			"total_members": st.TotalMembers, "healthy_members": st.HealthyCount,
		}
	}
	var avgCold float64
	if sum.ColdStarts > 0 {
		avgCold = sum.ColdStartSumMs / float64(sum.ColdStarts)
	}
	return ok(map[string]any{
		"mcp_servers": servers,
		"groups":      groups,
		"tool_calls":  sum.Tools,
		"discovery":   map[string]any{"scans": sum.DiscoveryScans, "total_scan_ms": sum.DiscoverySumMs},
		"errors":      sum.ErrorsByType,
		"performance": map[string]any{
			"cold_starts":           sum.ColdStarts,
			"cold_start_failures":   sum.ColdStartFails,
			"avg_cold_start_ms":     avgCold,
			"health_checks":         sum.HealthChecks,
			"goroutines":            sum.Goroutines,
			"resident_memory_bytes": sum.ResidentBytes,
			"heap_alloc_bytes":      sum.HeapBytes,
		},
		"summary": map[string]any{
			"total_mcp_servers": len(servers),
			"total_groups":      len(groups),
			"total_tool_calls":  calls,
			"total_errors":      errs,
		},
	})
}

func (g *Gateway) health(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	byState := map[string]int{"cold": 0, "ready": 0, "degraded": 0, "dead": 0}
	total := 0
	mayReach := reachable(ctx)
	for _, p := range g.topLevel() {
		if !mayReach(p.ID()) {
			continue
		}
		byState[string(p.State())]++
		total++
	}
	status := "healthy"
	if byState[string(provider.Degraded)] > 0 || byState[string(provider.Dead)] > 0 {
		status = "degraded"
	}
	groupsByState := map[string]int{string(group.Cold): 0, string(group.Healthy): 0, string(group.Degraded): 0, string(group.Unavailable): 0}
	groupTotal, members, healthyMembers := 0, 0, 0
	for _, grp := range g.Groups.List() {
		if !mayReach(grp.ID()) {
			continue
		}
		st := grp.Status()
		groupsByState[string(st.State)]++
		groupTotal++
		members += st.TotalMembers
		healthyMembers += st.HealthyCount
		if st.State == group.Degraded || st.State == group.Unavailable {
			status = "degraded"
		}
	}
	docker := map[string]any{"available": nil}
	if g.Engine != nil {
		docker["available"] = g.Engine.Available()
		docker["error"] = nilIfEmpty(g.Engine.LastError())
		if !g.Engine.Available() {
			status = "degraded"
		}
	}
	store := storeHealth(g.Store)
	if store != nil && !store["ok"].(bool) {
		status = "degraded"
	}
	cfg := g.Config()
	var a healthAnswer
	a.Docker, a.Status, a.Store = docker, status, store
	a.Groups.ByState, a.Groups.HealthyMembers, a.Groups.Total, a.Groups.TotalMembers = groupsByState, healthyMembers, groupTotal, members
	a.MCPServers.ByState, a.MCPServers.Total = byState, total
	rl := &a.Security.RateLimiting
	rl.ActiveBuckets, rl.Enabled = g.activeBuckets(), cfg.Auth.Enabled
	rl.Config.Burst, rl.Config.RPS = cfg.Auth.RateLimit.Burst, cfg.Auth.RateLimit.RPS
	return ok(a)
}

// healthAnswer is hangar_health's answer. Structs encode without the
// sorting and reflection over maps that the answer of every health check
// paid; their fields are in the order encoding/json sorts map keys, so
// the JSON is the same as the maps gave.
type healthAnswer struct {
	Docker map[string]any `json:"docker"`
	Groups struct {
		ByState        map[string]int `json:"by_state"`
		HealthyMembers int            `json:"healthy_members"`
		Total          int            `json:"total"`
		TotalMembers   int            `json:"total_members"`
	} `json:"groups"`
	MCPServers struct {
		ByState map[string]int `json:"by_state"`
		Total   int            `json:"total"`
	} `json:"mcp_servers"`
	Security struct {
		RateLimiting struct {
			ActiveBuckets int `json:"active_buckets"`
			Config        struct {
				Burst int     `json:"burst"`
				RPS   float64 `json:"rps"`
			} `json:"config"`
			Enabled bool `json:"enabled"`
		} `json:"rate_limiting"`
	} `json:"security"`
	Status string         `json:"status"`
	Store  map[string]any `json:"store"`
}

func (g *Gateway) activeBuckets() int {
	if g.RateLimiter == nil {
		return 0
	}
	return g.RateLimiter.Active()
}

// StoreStatus is what hangar_health shows of the durable store.
type StoreStatus interface {
	Path() string
	LastWriteError() error
}

// storeHealth is hangar_health's store section, nil without a store. A
// write error names the operation and the key, never a value.
func storeHealth(st StoreStatus) map[string]any {
	if st == nil {
		return nil
	}
	werr := st.LastWriteError()
	out := map[string]any{"path": st.Path(), "ok": werr == nil, "last_write_error": nil}
	if werr != nil {
		out["last_write_error"] = werr.Error()
	}
	// A store that can go away (PostgreSQL) also says whether it is
	// reachable now, before any write has failed.
	if r, ok := st.(interface{ Unreachable() error }); ok {
		out["reachable"], out["unreachable_error"] = true, nil
		if uerr := r.Unreachable(); uerr != nil {
			out["reachable"], out["unreachable_error"], out["ok"] = false, uerr.Error(), false
		}
	}
	return out
}
