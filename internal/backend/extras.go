package backend

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/provider"
)

// Every backend speaks MCP through an mcpconn.Conn, so each serves the
// front door's resources and prompts.

var (
	_ provider.Extras = (*containerBackend)(nil)
	_ provider.Extras = (*remoteBackend)(nil)
	_ provider.Extras = (*processBackend)(nil)
)

func (b *containerBackend) ListAll(ctx context.Context, kind string) ([]json.RawMessage, error) {
	return b.conn.ListAll(ctx, kind)
}
func (b *containerBackend) ReadResource(ctx context.Context, uri string) (json.RawMessage, error) {
	return b.conn.ReadResource(ctx, uri)
}
func (b *containerBackend) GetPrompt(ctx context.Context, name string, args map[string]string) (json.RawMessage, error) {
	return b.conn.GetPrompt(ctx, name, args)
}

func (b *remoteBackend) ListAll(ctx context.Context, kind string) ([]json.RawMessage, error) {
	return b.conn.ListAll(ctx, kind)
}
func (b *remoteBackend) ReadResource(ctx context.Context, uri string) (json.RawMessage, error) {
	return b.conn.ReadResource(ctx, uri)
}
func (b *remoteBackend) GetPrompt(ctx context.Context, name string, args map[string]string) (json.RawMessage, error) {
	return b.conn.GetPrompt(ctx, name, args)
}

func (b *processBackend) ListAll(ctx context.Context, kind string) ([]json.RawMessage, error) {
	return b.conn.ListAll(ctx, kind)
}
func (b *processBackend) ReadResource(ctx context.Context, uri string) (json.RawMessage, error) {
	return b.conn.ReadResource(ctx, uri)
}
func (b *processBackend) GetPrompt(ctx context.Context, name string, args map[string]string) (json.RawMessage, error) {
	return b.conn.GetPrompt(ctx, name, args)
}

func (b *containerBackend) Complete(ctx context.Context, ref any, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	return b.conn.Complete(ctx, ref, arg, cc)
}
func (b *containerBackend) Subscribe(ctx context.Context, uri string, updated func(map[string]any)) error {
	return b.conn.Subscribe(ctx, uri, updated)
}
func (b *containerBackend) Unsubscribe(ctx context.Context, uri string) error {
	return b.conn.Unsubscribe(ctx, uri)
}

func (b *remoteBackend) Complete(ctx context.Context, ref any, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	return b.conn.Complete(ctx, ref, arg, cc)
}
func (b *remoteBackend) Subscribe(ctx context.Context, uri string, updated func(map[string]any)) error {
	return b.conn.Subscribe(ctx, uri, updated)
}
func (b *remoteBackend) Unsubscribe(ctx context.Context, uri string) error {
	return b.conn.Unsubscribe(ctx, uri)
}

func (b *processBackend) Complete(ctx context.Context, ref any, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	return b.conn.Complete(ctx, ref, arg, cc)
}
func (b *processBackend) Subscribe(ctx context.Context, uri string, updated func(map[string]any)) error {
	return b.conn.Subscribe(ctx, uri, updated)
}
func (b *processBackend) Unsubscribe(ctx context.Context, uri string) error {
	return b.conn.Unsubscribe(ctx, uri)
}
