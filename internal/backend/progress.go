package backend

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/dockerrt"
)

type progressTokenKey struct{}

// WithProgressToken marks ctx as the context of a call whose client asked
// for progress (request.Params.Meta.ProgressToken); a cold start made for
// that call then reports its image download to the client. A nil token
// leaves ctx as it is.
func WithProgressToken(ctx context.Context, token mcp.ProgressToken) context.Context {
	if token == nil {
		return ctx
	}
	return context.WithValue(ctx, progressTokenKey{}, token)
}

// ProgressTokenMiddleware puts every tool call's progress token in its
// context (server.WithToolHandlerMiddleware).
func ProgressTokenMiddleware(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.Meta != nil {
			ctx = WithProgressToken(ctx, req.Params.Meta.ProgressToken)
		}
		return next(ctx, req)
	}
}

// ProgressNotifier returns where pull progress for the call in ctx goes:
// notifications/progress to its client, or nil when the call carries no
// progress token or no MCP session.
func ProgressNotifier(ctx context.Context) func(dockerrt.Progress) {
	token := ctx.Value(progressTokenKey{})
	srv := server.ServerFromContext(ctx)
	if token == nil || srv == nil {
		return nil
	}
	// The session lives in ctx; sends happen on the puller's goroutine
	// and must not be cut short by the call's deadline, only by the
	// session going away (which SendNotificationToClient reports).
	sctx := context.WithoutCancel(ctx)
	return func(p dockerrt.Progress) {
		_ = srv.SendNotificationToClient(sctx, "notifications/progress", PullProgressParams(token, p))
	}
}

// PullProgressParams is the notifications/progress payload for a pull:
// progress and total in bytes when the size is known, and a message a
// person can read.
func PullProgressParams(token mcp.ProgressToken, p dockerrt.Progress) map[string]any {
	params := map[string]any{"progressToken": token, "progress": p.Current}
	msg := "pulling image " + p.Ref
	if pct := p.Percent(); pct >= 0 {
		params["total"] = p.Total
		msg += fmt.Sprintf(": %.0f%% of %s", pct, humanBytes(p.Total))
	}
	if p.Done {
		msg = "pulled image " + p.Ref
	}
	params["message"] = msg
	return params
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
