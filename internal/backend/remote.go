package backend

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

// remoteBackend is a session with an MCP server the gateway does not run.
// It has no process to die: it ends only when stopped, and health checks
// judge the rest.
type remoteBackend struct {
	mcpSide
	done chan struct{}
	once sync.Once
}

func launchRemote(ctx context.Context, s *config.Server) (*remoteBackend, error) {
	var tr transport.Interface
	var err error
	if s.Transport == config.TransportSSE {
		tr, err = mcpconn.SSE(s.Endpoint, s.Headers, connectClient())
	} else {
		tr, err = mcpconn.HTTP(s.Endpoint, s.Headers, connectClient())
	}
	if err != nil {
		return nil, err
	}
	conn, err := mcpconn.Connect(ctx, tr, s.Protocol)
	if err != nil {
		return nil, err
	}
	return &remoteBackend{mcpSide: mcpSide{conn}, done: make(chan struct{})}, nil
}

func (b *remoteBackend) ListTools(ctx context.Context) ([]mcpconn.Tool, error) {
	return b.conn.ListTools(ctx)
}

func (b *remoteBackend) CallTool(ctx context.Context, name string, args any) (*mcp.CallToolResult, error) {
	return b.conn.CallTool(ctx, name, args)
}

func (b *remoteBackend) Done() <-chan struct{} { return b.done }
func (b *remoteBackend) Exit() string          { return "session closed" }
func (b *remoteBackend) Stderr() string        { return "" }
func (b *remoteBackend) ContainerID() string   { return "" }

func (b *remoteBackend) Stop(context.Context) error {
	b.once.Do(func() {
		_ = b.conn.Close()
		close(b.done)
	})
	return nil
}
