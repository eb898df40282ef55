package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/registry"
	"github.com/mcp-hangar/hangar/internal/relay"
)

// HotLoader is what the hot-loading tools need; *registry.Loader is one.
type HotLoader interface {
	Load(ctx context.Context, progress call.Progress, name string, forceUnverified bool, allow, deny []string) LoadResult
	Unload(ctx context.Context, id string) UnloadResult
	Runtime() []RuntimeServer
}

// Results of the hot-loading tools (seed 001); their JSON carries the
// seed's field names.
type (
	// LoadResult is hangar_load's answer: status, mcp_server, tools,
	// matches, missing, instructions, message (and name, warnings).
	LoadResult = registry.LoadResult
	// UnloadResult is hangar_unload's answer: status, mcp_server, message,
	// lifetime_seconds.
	UnloadResult = registry.UnloadResult
	// RuntimeServer is one hot-loaded server (runtime_mcp_servers).
	RuntimeServer = registry.RuntimeServer
)

var _ HotLoader = (*registry.Loader)(nil)

// ServerAwaiter is a HotLoader shared by replicas: a server another
// replica hot-loaded may not be applied here yet when a call names it.
// AwaitServer applies what is stored and reports whether id is served
// then.
type ServerAwaiter interface {
	AwaitServer(ctx context.Context, id string) bool
}

// awaitServer is for a call naming id, which nothing here serves: it waits
// for a hot-load another replica made of it to be applied here (see
// ServerAwaiter) and reports whether id is served then, so that a call
// right after a hangar_load answered by the other replica finds the server.
func (g *Gateway) awaitServer(ctx context.Context, id string) bool {
	a, ok := g.HotLoad.(ServerAwaiter)
	return ok && a.AwaitServer(ctx, id)
}

// errHotLoadOff is both tools' message when hot-loading is off: a normal
// answer with status failed, not a tool error.
const errHotLoadOff = "hot-loading is not configured (set registry.url or registry.catalog_file)"

// hotloadTools returns hangar_load and hangar_unload over the loader that
// loader returns at call time (nil when hot-loading is off).
func hotloadTools(loader func() HotLoader) []server.ServerTool {
	return []server.ServerTool{
		{Tool: mcp.NewTool("hangar_load",
			mcp.WithDescription("Load a MCP server from the MCP registry at runtime and start it. "+
				"Hot-loaded MCP servers are ephemeral and lost on server restart."),
			mcp.WithString("name", mcp.Required(), mcp.Description("Registry name of the MCP server (full name, or its last segment)")),
			mcp.WithBoolean("force_unverified", mcp.DefaultBool(false),
				mcp.Description("Load unverified MCP servers without confirmation")),
			mcp.WithArray("allow_tools", mcp.WithStringItems(), mcp.Description("Fnmatch patterns for allowed tools")),
			mcp.WithArray("deny_tools", mcp.WithStringItems(), mcp.Description("Fnmatch patterns for denied tools")),
		), Handler: loadHandler(loader)},
		{Tool: mcp.NewTool("hangar_unload",
			mcp.WithDescription("Unload a hot-loaded MCP server. Only works for MCP servers loaded via hangar_load."),
			mcp.WithString("mcp_server", mcp.Required(), mcp.Description("MCP Server ID (from hangar_load result)")),
		), Handler: unloadHandler(loader)},
	}
}

func loadHandler(loader func() HotLoader) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		h := loader()
		if h == nil {
			return ok(LoadResult{Status: registry.StatusFailed, Message: errHotLoadOff})
		}
		name, err := req.RequireString("name")
		if err != nil {
			return fail(err)
		}
		a, err := args(req)
		if err != nil {
			return fail(err)
		}
		force := false
		if v, present := a["force_unverified"]; present && v != nil {
			if force, err = req.RequireBool("force_unverified"); err != nil {
				return fail(err)
			}
		}
		allow, err := stringsArg(a, "allow_tools")
		if err != nil {
			return fail(err)
		}
		deny, err := stringsArg(a, "deny_tools")
		if err != nil {
			return fail(err)
		}
		return ok(h.Load(ctx, relay.ProgressTo(ctx, req), name, force, allow, deny))
	}
}

func unloadHandler(loader func() HotLoader) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		h := loader()
		if h == nil {
			id := req.GetString("mcp_server", "")
			return ok(UnloadResult{Status: registry.StatusFailed, MCPServer: id, Message: errHotLoadOff})
		}
		id, err := req.RequireString("mcp_server")
		if err != nil {
			return fail(err)
		}
		return ok(h.Unload(ctx, id))
	}
}

// stringsArg reads an optional list of strings; absent or null is nil.
func stringsArg(a map[string]any, key string) ([]string, error) {
	switch v := a[key].(type) {
	case nil:
		return nil, nil
	case []string:
		return v, nil
	case []any:
		out := make([]string, 0, len(v))
		for i, x := range v {
			s, isStr := x.(string)
			if !isStr {
				return nil, fmt.Errorf("%s[%d] must be a string", key, i)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s must be a list of strings", key)
}

// runtimeList is hangar_list's runtime_mcp_servers: the hot-loaded
// servers whose state passes filter ("" passes all). Never nil.
func runtimeList(h HotLoader, filter string) []map[string]any {
	out := []map[string]any{}
	if h == nil {
		return out
	}
	for _, r := range h.Runtime() {
		if filter != "" && r.State != filter {
			continue
		}
		out = append(out, map[string]any{
			"mcp_server":       r.ID,
			"state":            r.State,
			"source":           r.Source,
			"verified":         r.Verified,
			"ephemeral":        r.Ephemeral,
			"loaded_at":        r.LoadedAt.UTC().Format(time.RFC3339Nano),
			"lifetime_seconds": r.LifetimeSeconds,
		})
	}
	return out
}

// runtimeStatus is hangar_status's runtime_mcp_servers, how many of them
// are ready (summary.runtime_healthy) and their dashboard lines.
func runtimeStatus(h HotLoader) (list []map[string]any, healthy int, lines []string) {
	list = []map[string]any{}
	if h == nil {
		return list, 0, nil
	}
	for _, r := range h.Runtime() {
		st := provider.State(r.State)
		if st == provider.Ready {
			healthy++
		}
		list = append(list, map[string]any{
			"id":        r.ID,
			"indicator": st.Indicator(),
			"state":     r.State,
			"source":    r.Source,
			"verified":  r.Verified,
		})
		verified := "unverified"
		if r.Verified {
			verified = "verified"
		}
		lines = append(lines, fmt.Sprintf("%s %s (hot-loaded, %s, %s)", st.Indicator(), r.ID, r.Source, verified))
	}
	return list, healthy, lines
}
