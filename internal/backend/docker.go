package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

// exitWait is how long a failed handshake waits to learn whether the
// container exited, to report the exit instead of a bare EOF.
const exitWait = time.Second

// containerBackend is a stdio provider container and its MCP session.
type containerBackend struct {
	c    *dockerrt.Container
	conn *mcpconn.Conn
}

func launchDockerStdio(ctx context.Context, rt *dockerrt.Runtime, s *config.Server) (*containerBackend, error) {
	c, err := rt.Run(ctx, SpecFor(s))
	if err != nil {
		return nil, err
	}
	conn, err := mcpconn.Connect(ctx, mcpconn.Stdio(c.Stdout, c.Stdin), s.Protocol)
	if err != nil {
		return nil, handshakeError(ctx, c, err)
	}
	return &containerBackend{c: c, conn: conn}, nil
}

// SpecFor maps a docker server's config onto a container spec.
func SpecFor(s *config.Server) dockerrt.Spec {
	return dockerrt.Spec{
		ServerID:    s.ID,
		Image:       s.Image,
		Args:        s.Args,
		Env:         s.Env,
		Volumes:     s.Volumes,
		MemoryBytes: s.Resources.MemoryBytes,
		NanoCPUs:    s.Resources.NanoCPUs,
		PidsLimit:   s.Resources.PidsLimit,
		Network:     s.Network,
		ReadOnly:    s.ReadOnly,
		User:        s.User,
		Stdio:       s.Transport == "" || s.Transport == config.TransportStdio,
	}
}

// handshakeError names the real cause of a failed handshake: the container
// exited (with its code and last stderr), or it never answered.
func handshakeError(ctx context.Context, c *dockerrt.Container, err error) error {
	t := time.NewTimer(exitWait)
	defer t.Stop()
	select {
	case <-c.Done():
		return fmt.Errorf("container exited during start (%s)%s", c.Exit(), stderrSuffix(c))
	case <-t.C:
	}
	_ = c.Stop(context.WithoutCancel(ctx))
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer to the MCP handshake: %w%s", err, stderrSuffix(c))
	}
	return fmt.Errorf("MCP handshake: %w%s", err, stderrSuffix(c))
}

func stderrSuffix(c *dockerrt.Container) string {
	if s := c.Stderr.LastLines(5); s != "" {
		return "; stderr: " + s
	}
	return ""
}

func (b *containerBackend) ListTools(ctx context.Context) ([]mcpconn.Tool, error) {
	return b.conn.ListTools(ctx)
}

func (b *containerBackend) CallTool(ctx context.Context, name string, args any) (*mcp.CallToolResult, error) {
	return b.conn.CallTool(ctx, name, args)
}

func (b *containerBackend) Done() <-chan struct{} { return b.c.Done() }
func (b *containerBackend) Exit() string          { return b.c.Exit() }
func (b *containerBackend) Stderr() string        { return b.c.Stderr.String() }
func (b *containerBackend) ContainerID() string   { return b.c.ID }

func (b *containerBackend) Stop(ctx context.Context) error {
	_ = b.conn.Close()
	return b.c.Stop(ctx)
}
