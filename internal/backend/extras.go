package backend

import (
	"context"
	"encoding/json"

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
