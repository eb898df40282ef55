package gateway

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/frontdoor"
)

// hangar_find_tools: the tool over the front door's search
// (front_door.discovery: search; frontdoor's search.go has the index,
// the ranking and activation).

// chainOf is the tool chain of the MCP server serving ctx.
func (g *Gateway) chainOf(ctx context.Context) toolChain {
	if s := server.ServerFromContext(ctx); s != nil {
		if c, ok := g.chains.Load(s); ok {
			return c.(toolChain)
		}
	}
	return g.toolChain()
}

// reach is the front door's Reach: the caller's tool chain and the
// servers' policy.
func (g *Gateway) reach(ctx context.Context) func(callable, server string) bool {
	chain := g.chainOf(ctx)
	return func(callable, server string) bool {
		return chain.sees(ctx, mcp.Tool{Name: callable}) && g.refused(server) == nil && !g.policyHidden(ctx, callable)
	}
}

// searchTools is hangar_find_tools, in search mode only.
func (g *Gateway) searchTools() []server.ServerTool {
	if !g.FrontDoor.Searching() {
		return nil
	}
	return []server.ServerTool{{Tool: mcp.NewTool(frontdoor.FindToolName,
		mcp.WithDescription("Find tools of the MCP servers behind this gateway by describing the task."),
		mcp.WithString("query", mcp.Description("What you want to do, in plain words (required unless reset is true)")),
		mcp.WithNumber("limit", mcp.Description("Most matches to return (default 10, at most 50)"), mcp.Min(1), mcp.Max(frontdoor.FindMaxLimit)),
		mcp.WithArray("servers", mcp.Description("Search only these servers"), mcp.WithStringItems()),
		mcp.WithBoolean("activate", mcp.Description("Also add the matches to your tools/list")),
		mcp.WithBoolean("reset", mcp.Description("First remove every tool this session activated")),
		mcp.WithReadOnlyHintAnnotation(false),
	), Handler: g.findTools}}
}

func (g *Gateway) findTools(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	q := frontdoor.FindQuery{Query: strings.TrimSpace(req.GetString("query", "")), Reset: req.GetBool("reset", false),
		Activate: req.GetBool("activate", false), Limit: req.GetInt("limit", frontdoor.FindDefaultLimit)}
	if q.Limit < 1 || q.Limit > frontdoor.FindMaxLimit {
		return fail(fmt.Errorf("invalid_argument: limit must be between 1 and %d (got %d)", frontdoor.FindMaxLimit, q.Limit))
	}
	servers, err := stringsArg(req.GetArguments(), "servers")
	if err != nil {
		return fail(fmt.Errorf("invalid_argument: %w", err))
	}
	q.Servers = servers
	if q.Query == "" && !q.Reset {
		return fail(fmt.Errorf("invalid_argument: query is required unless reset is true"))
	}
	out, err := g.FrontDoor.Find(ctx, q)
	if err != nil {
		return nil, err
	}
	return ok(out)
}
