package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// longToolName is 70 characters: longer than agents accept, so a gateway
// must shorten it.
const longToolName = "a_tool_name_seventy_characters_long_to_test_callable_name_shortening__"

// progressResult carries integers beyond float64's precision in both
// structuredContent and _meta, to catch a gateway that decodes and
// re-encodes results.
const progressStructured = `{"steps":%d,"big":12345678901234567890123}`

// registerFrontDoorTools adds the tools that exercise a gateway's pass-through:
// progress notifications, exact results, a tool name too long to keep.
func registerFrontDoorTools(s *server.MCPServer) {
	s.AddTool(mcp.NewTool("progress",
		mcp.WithDescription("Report progress steps to the caller's progressToken, then answer"),
		mcp.WithNumber("steps", mcp.Description("How many progress notifications (default 3)")),
		mcp.WithNumber("delay_ms", mcp.Description("Pause after each one (default 20)")),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		steps, err := wholeNumber("steps", req.GetFloat("steps", 3), 1000)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		delay, err := wholeNumber("delay_ms", req.GetFloat("delay_ms", 20), 60000)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		var token any
		if req.Params.Meta != nil {
			token = req.Params.Meta.ProgressToken
		}
		srv := server.ServerFromContext(ctx)
		for i := 1; i <= steps; i++ {
			if token != nil {
				_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
					"progressToken": token, "progress": i, "total": steps, "message": fmt.Sprintf("step %d of %d", i, steps),
				})
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(delay) * time.Millisecond):
			}
		}
		res := mcp.NewToolResultText(fmt.Sprintf("done %d steps, token given: %v", steps, token != nil))
		res.RawStructuredContent = json.RawMessage(fmt.Sprintf(progressStructured, steps))
		res.Meta = &mcp.Meta{AdditionalFields: map[string]any{"testkit/id": json.RawMessage(`98765432109876543210`)}}
		return res, nil
	})

	s.AddTool(mcp.NewTool("sample",
		mcp.WithDescription("Ask the client's model (sampling/createMessage) and answer what it said"),
		mcp.WithString("prompt", mcp.Required()),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		prompt, err := req.RequireString("prompt")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		sreq := mcp.CreateMessageRequest{}
		sreq.Messages = []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(prompt)}}
		sreq.MaxTokens = 100
		res, err := server.ServerFromContext(ctx).RequestSampling(ctx, sreq)
		if err != nil {
			return mcp.NewToolResultError("sampling failed: " + err.Error()), nil
		}
		text, _ := mcp.AsTextContent(res.Content)
		if text == nil {
			return mcp.NewToolResultError("sampling answered no text"), nil
		}
		return mcp.NewToolResultText("model " + res.Model + " said: " + text.Text), nil
	})

	s.AddTool(mcp.NewTool(longToolName,
		mcp.WithDescription("Answer \"long\"; its name is 70 characters"),
	), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("long"), nil
	})
}
