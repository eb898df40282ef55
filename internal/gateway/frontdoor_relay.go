package gateway

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

// clientRelay passes a provider's requests during a front-door call on to
// the client that made the call, if it declared it can answer them.
type clientRelay struct {
	ctx  context.Context // the calling client's request: its session
	srv  *server.MCPServer
	caps *mcp.ClientCapabilities // nil when the session does not say
}

var _ mcpconn.Relay = clientRelay{}

func newClientRelay(ctx context.Context) mcpconn.Relay {
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return nil
	}
	r := clientRelay{ctx: ctx, srv: srv}
	if s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		caps := s.GetClientCapabilities()
		r.caps = &caps
	}
	return r
}

func undeclared(what string) error {
	return fmt.Errorf("hangar: the calling client did not declare the %s capability", what)
}

func (r clientRelay) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if r.caps != nil && r.caps.Sampling == nil {
		return nil, undeclared("sampling")
	}
	return r.srv.RequestSampling(r.ctx, req)
}

func (r clientRelay) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if r.caps != nil && r.caps.Elicitation == nil {
		return nil, undeclared("elicitation")
	}
	return r.srv.RequestElicitation(r.ctx, req)
}

func (r clientRelay) ListRoots(_ context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	if r.caps != nil && r.caps.Roots == nil {
		return nil, undeclared("roots")
	}
	return r.srv.RequestRoots(r.ctx, req)
}
