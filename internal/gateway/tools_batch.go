package gateway

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/batch"
	"github.com/mcp-hangar/hangar/internal/relay"
)

// Continuation read defaults and bounds (seed 001).
const (
	defaultContinuationLimit = 500000
	maxContinuationLimit     = 2000000
)

func (g *Gateway) batchTools() []server.ServerTool {
	lim := g.Batch().Limits
	return []server.ServerTool{
		{Tool: mcp.NewTool("hangar_call",
			mcp.WithDescription("Invoke tools on MCP servers. Supports single calls and parallel batch execution with two-level concurrency control (per-batch and system-wide). May start cold MCP servers."),
			mcp.WithArray("calls", mcp.Required(), mcp.MinItems(1), mcp.MaxItems(lim.MaxCalls),
				mcp.Description("List of {mcp_server, tool, arguments, timeout?} objects"),
				mcp.Items(map[string]any{
					"type":     "object",
					"required": []string{"mcp_server", "tool"},
					"properties": map[string]any{
						"mcp_server": map[string]any{"type": "string", "description": "MCP server ID or group ID"},
						"tool":       map[string]any{"type": "string", "description": "Tool name"},
						"arguments":  map[string]any{"type": "object", "description": "Tool arguments"},
						"timeout":    map[string]any{"type": "number", "minimum": 1, "maximum": lim.MaxTimeout.Seconds(), "description": "Per-call timeout in seconds"},
					},
				})),
			mcp.WithNumber("max_concurrency", mcp.DefaultNumber(lim.DefaultConcurrency), mcp.Min(1), mcp.Max(lim.MaxConcurrency),
				mcp.Description("Parallel workers for this batch")),
			mcp.WithNumber("timeout", mcp.DefaultNumber(lim.DefaultTimeout.Seconds()), mcp.Min(1), mcp.Max(lim.MaxTimeout.Seconds()),
				mcp.Description("Batch timeout in seconds")),
			mcp.WithBoolean("fail_fast", mcp.DefaultBool(false), mcp.Description("Stop batch on first error")),
			mcp.WithNumber("max_attempts", mcp.DefaultNumber(1), mcp.Min(1), mcp.Max(10),
				mcp.Description("Total attempts per call including retries")),
		), Handler: g.call},
		{Tool: mcp.NewTool("hangar_fetch_continuation",
			mcp.WithDescription("Fetch full data for a truncated batch response."),
			mcp.WithString("continuation_id", mcp.Required(), mcp.Description(`Continuation ID from a truncated result (starts with "cont_")`)),
			mcp.WithNumber("offset", mcp.DefaultNumber(0), mcp.Min(0), mcp.Description("Byte offset to start reading from")),
			mcp.WithNumber("limit", mcp.DefaultNumber(defaultContinuationLimit), mcp.Min(1), mcp.Max(maxContinuationLimit),
				mcp.Description("Maximum bytes to return")),
			mcp.WithReadOnlyHintAnnotation(true),
		), Handler: g.fetchContinuation},
		{Tool: mcp.NewTool("hangar_delete_continuation",
			mcp.WithDescription("Delete cached continuation data to free memory."),
			mcp.WithString("continuation_id", mcp.Required(), mcp.Description("Continuation ID to delete")),
		), Handler: g.deleteContinuation},
	}
}

func (g *Gateway) call(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a, err := args(req)
	if err != nil {
		return fail(err)
	}
	ex := *g.Batch()
	ex.Log = g.logFrom(ctx) // batch log lines carry the call's correlation ID
	r, problems := batch.Parse(a, ex.Limits)
	if len(problems) > 0 {
		return ok(batch.Invalid(problems))
	}
	// The providers' sampling, elicitation and roots requests go to the
	// caller, as on the front door; its _meta is not forwarded.
	return ok(ex.Run(ctx, relay.NewRequest(ctx, req), r))
}

func (g *Gateway) fetchContinuation(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id := req.GetString("continuation_id", "")
	if id == "" {
		return fail(fmt.Errorf("continuation_id is required"))
	}
	if !strings.HasPrefix(id, batch.ContinuationPrefix) {
		return fail(fmt.Errorf("continuation_id must start with %q", batch.ContinuationPrefix))
	}
	offset := req.GetFloat("offset", 0)
	limit := req.GetFloat("limit", defaultContinuationLimit)
	if offset < 0 || offset != float64(int64(offset)) {
		return fail(fmt.Errorf("offset must be a whole number >= 0 (got %v)", offset))
	}
	if limit < 1 || limit > maxContinuationLimit || limit != float64(int64(limit)) {
		return fail(fmt.Errorf("limit must be a whole number 1..%d (got %v)", maxContinuationLimit, limit))
	}
	piece, off, total, found := g.Cache.Read(batch.OwnerOf(auth.Caller(ctx)), id, int(offset), int(limit))
	if !found {
		return ok(map[string]any{"found": false, "error": "Continuation not found (may have expired)"})
	}
	// Pieces start and end on character boundaries: JSON cannot carry half
	// a UTF-8 sequence, and the next offset is offset + len(data) in bytes.
	end := off + len(piece)
	return ok(map[string]any{
		"found":            true,
		"data":             piece,
		"total_size_bytes": total,
		"offset":           off,
		"has_more":         end < total,
		"complete":         end >= total,
	})
}

func (g *Gateway) deleteContinuation(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id := req.GetString("continuation_id", "")
	if id == "" {
		return fail(fmt.Errorf("continuation_id is required"))
	}
	return ok(map[string]any{"deleted": g.Cache.Delete(batch.OwnerOf(auth.Caller(ctx)), id), "continuation_id": id})
}
