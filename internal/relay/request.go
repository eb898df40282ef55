package relay

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/call"
)

// NewRequest is the call.Request of the tool call mcp-go hands a handler
// with ctx: it is where the per-call data leaves the context. The caller
// is the identity the endpoint's auth stage put in the HTTP request's
// context (mcp-go passes that context, and nothing else, to handlers);
// the session and the server are mcp-go's; the relay is the call's
// (RelayOf); progress goes to the caller when req carries a progressToken,
// counted for the call's response stream (CountProgress).
func NewRequest(ctx context.Context, req mcp.CallToolRequest) *call.Request {
	rq := &call.Request{Caller: auth.Caller(ctx), Relay: RelayOf(ctx)}
	if s := server.ClientSessionFromContext(ctx); s != nil {
		rq.Session = s.SessionID()
	}
	rq.Progress = ProgressTo(ctx, req)
	return rq
}

// ProgressTo is where the progress of the tool call mcp-go hands a handler
// with ctx goes: to the caller, when req carries a progressToken and the
// call has an MCP session to send on; else nowhere.
func ProgressTo(ctx context.Context, req mcp.CallToolRequest) call.Progress {
	m := req.Params.Meta
	if m == nil || m.ProgressToken == nil {
		return call.Progress{}
	}
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return call.Progress{}
	}
	return call.Progress{Token: m.ProgressToken, Send: func(params map[string]any) {
		// A 2026-07-28 call's rounds are separate requests: the progress
		// goes to the one waiting now, if any.
		if client := ClientOf(ctx); client != nil {
			if srv.SendNotificationToClient(client, string(mcp.MethodNotificationProgress), params) == nil {
				ProgressQueued(client)
			}
		}
	}}
}
