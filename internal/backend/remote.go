package backend

import (
	"context"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/redact"
)

// remoteBackend is a session with an MCP server the gateway does not run.
// It has no process to die: it ends only when stopped, and health checks
// judge the rest.
type remoteBackend struct {
	mcpSide
	done chan struct{}
	once sync.Once
}

// launchRemote opens one session to the remote server s through client.
func launchRemote(ctx context.Context, s *config.Server, client *http.Client) (*remoteBackend, error) {
	var tr transport.Interface
	var err error
	if s.Transport == config.TransportSSE {
		tr, err = mcpconn.SSE(s.Endpoint, s.Headers, client)
	} else {
		tr, err = mcpconn.HTTP(s.Endpoint, s.Headers, client)
	}
	if err != nil {
		return nil, hideEndpoint(err)
	}
	conn, err := mcpconn.Connect(ctx, tr, s.Protocol)
	if err != nil {
		return nil, hideEndpoint(err)
	}
	return &remoteBackend{mcpSide: mcpSide{conn}, done: make(chan struct{})}, nil
}

func (b *remoteBackend) ListTools(ctx context.Context) ([]mcpconn.Tool, error) {
	tools, err := b.conn.ListTools(ctx)
	return tools, hideEndpoint(err)
}

func (b *remoteBackend) CallTool(ctx context.Context, name string, args any, o *mcpconn.CallOptions) (*mcp.CallToolResult, error) {
	res, err := b.conn.CallTool(ctx, name, args, o)
	return res, hideEndpoint(err)
}

// endpointError hides the credentials of an endpoint in an error's text
// (net/http quotes the URL it failed on, query and user-info included),
// keeping the error itself for errors.Is and errors.As.
type endpointError struct{ err error }

func (e endpointError) Error() string { return redact.Text(e.err.Error()) }
func (e endpointError) Unwrap() error { return e.err }

func hideEndpoint(err error) error {
	if err == nil {
		return nil
	}
	return endpointError{err}
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
