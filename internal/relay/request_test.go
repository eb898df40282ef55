package relay

import (
	"context"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/call"
)

// TestNewRequest: a tool handler's request names the caller the endpoint
// put in the context (local without one), the session, a relay, and a
// progress reporter that reaches the calling client only when it sent a
// progressToken.
func TestNewRequest(t *testing.T) {
	t.Parallel()
	got := make(chan *call.Request, 1)
	srv := server.NewMCPServer("t", "1")
	srv.AddTool(mcp.NewTool("probe"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		rq := NewRequest(auth.WithIdentity(ctx, auth.NewIdentity("agent", auth.KindToken, []string{auth.ScopeCall}, nil)), req)
		if rq.Progress.Wanted() {
			rq.Progress.Send(map[string]any{"progressToken": rq.Progress.Token, "progress": 1})
		}
		got <- rq
		return mcp.NewToolResultText("ok"), nil
	})
	c, err := mcpclient.NewInProcessClient(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	progress := make(chan mcp.JSONRPCNotification, 4)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationProgress) {
			progress <- n
		}
	})
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	callProbe := func(token mcp.ProgressToken) *call.Request {
		req := mcp.CallToolRequest{}
		req.Params.Name = "probe"
		if token != nil {
			req.Params.Meta = &mcp.Meta{ProgressToken: token}
		}
		if _, err := c.CallTool(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		return <-got
	}

	rq := callProbe(nil)
	if rq.Caller.Name != "agent" || rq.Session == "" || rq.Relay == nil {
		t.Errorf("request = caller %q, session %q, relay %v; want agent, a session, a relay", rq.Caller.Name, rq.Session, rq.Relay)
	}
	if rq.Progress.Wanted() {
		t.Error("progress wanted without a progressToken")
	}

	rq = callProbe("tok-1")
	if !rq.Progress.Wanted() || rq.Progress.Token != "tok-1" {
		t.Fatalf("progress = %+v, want the caller's token", rq.Progress)
	}
	select {
	case n := <-progress:
		if n.Params.AdditionalFields["progressToken"] != "tok-1" {
			t.Errorf("progress for %v, want tok-1", n.Params.AdditionalFields["progressToken"])
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the caller got no progress")
	}

	if id := NewRequest(context.Background(), mcp.CallToolRequest{}).Caller; id.Kind != auth.KindLocal {
		t.Errorf("caller without an identity = %+v, want local", id)
	}
}
