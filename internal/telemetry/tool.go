package telemetry

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// codeInternal is what mcp-go answers a tool handler's error with.
const codeInternal = mcp.INTERNAL_ERROR

// ToolMiddleware records each tools/call's outcome on its SERVER span:
// error.type -32603 for a handler error, tool_error for a result with
// isError. A call with no SERVER span yet (the stdio endpoint, which has
// no HTTP pipeline) gets one here, over a pipe. identity names the caller.
func (t *Telemetry) ToolMiddleware(identity func(context.Context) string) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			op := ServerOp(ctx)
			if op == nil {
				var meta map[string]any
				if req.Params.Meta != nil {
					meta = req.Params.Meta.AdditionalFields
				}
				ctx, op = t.StartServer(ctx, ServerRequest{Method: string(mcp.MethodToolsCall), Target: req.Params.Name,
					Meta: meta, Transport: TransportPipe, Identity: identity(ctx)})
				defer op.End()
			}
			res, err := next(ctx, req)
			switch {
			case err != nil:
				op.Fail(codeInternal)
			case res != nil && res.IsError:
				op.ToolError()
			}
			return res, err
		}
	}
}
