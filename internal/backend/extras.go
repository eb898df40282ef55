package backend

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// mcpSide is the MCP session every backend speaks through; embedded, it
// serves the front door's resources, prompts, completions and
// subscriptions for each of them.
type mcpSide struct {
	conn *mcpconn.Conn
}

var (
	_ provider.Extras = (*containerBackend)(nil)
	_ provider.Extras = (*remoteBackend)(nil)
	_ provider.Extras = (*processBackend)(nil)
)

func (m mcpSide) ListAll(ctx context.Context, kind string) ([]json.RawMessage, error) {
	l, err := m.conn.ListAll(ctx, kind)
	return l, hideEndpoint(err)
}

func (m mcpSide) ReadResource(ctx context.Context, uri string) (json.RawMessage, error) {
	r, err := m.conn.ReadResource(ctx, uri)
	return r, hideEndpoint(err)
}

func (m mcpSide) GetPrompt(ctx context.Context, name string, args map[string]string) (json.RawMessage, error) {
	r, err := m.conn.GetPrompt(ctx, name, args)
	return r, hideEndpoint(err)
}

func (m mcpSide) Complete(ctx context.Context, ref any, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	r, err := m.conn.Complete(ctx, ref, arg, cc)
	return r, hideEndpoint(err)
}

func (m mcpSide) Subscribe(ctx context.Context, uri string, updated func(map[string]any)) error {
	return hideEndpoint(m.conn.Subscribe(ctx, uri, updated))
}

func (m mcpSide) Unsubscribe(ctx context.Context, uri string) error {
	return hideEndpoint(m.conn.Unsubscribe(ctx, uri))
}
