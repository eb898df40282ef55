package backend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

// exitWait is how long a failed handshake waits to learn whether the
// container exited, to report the exit instead of a bare EOF.
const exitWait = time.Second

// containerBackend is a provider container and its MCP session.
type containerBackend struct {
	c *dockerrt.Container
	mcpSide
}

// launchDockerStdio creates a container and speaks MCP over its attached
// stdin/stdout.
func launchDockerStdio(ctx context.Context, rt *dockerrt.Runtime, s *config.Server) (*containerBackend, error) {
	c, err := rt.Run(ctx, SpecFor(s, ""))
	if err != nil {
		return nil, err
	}
	return connectContainer(ctx, c, mcpconn.Stdio(c.Stdout, c.Stdin), s.Protocol, s)
}

// attachDockerStdio speaks MCP to a running container found by discovery.
func attachDockerStdio(ctx context.Context, rt *dockerrt.Runtime, s *config.Server) (*containerBackend, error) {
	c, err := rt.Attach(ctx, s.AttachContainer)
	if err != nil {
		return nil, err
	}
	// Not our container, not our hardening: no hints.
	return connectContainer(ctx, c, mcpconn.Stdio(c.Stdout, c.Stdin), s.Protocol, nil)
}

// launchDockerHTTP creates a container serving MCP over HTTP on a network
// the gateway can reach, waits for its port, then connects.
func launchDockerHTTP(ctx context.Context, rt *dockerrt.Runtime, network string, s *config.Server) (*containerBackend, error) {
	c, err := rt.Run(ctx, SpecFor(s, network))
	if err != nil {
		return nil, err
	}
	ip, err := rt.Address(ctx, c.ID, network)
	if err != nil {
		_ = c.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	addr := net.JoinHostPort(ip, strconv.Itoa(s.Port))
	if err := waitPort(ctx, c, addr, s); err != nil {
		_ = c.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	url := "http://" + addr + s.Path
	var tr transport.Interface
	if s.Transport == config.TransportSSE {
		tr, err = mcpconn.SSE(url, nil, connectClient())
	} else {
		tr, err = mcpconn.HTTP(url, nil, connectClient())
	}
	if err != nil {
		_ = c.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	return connectContainer(ctx, c, tr, s.Protocol, s)
}

// waitPort polls until addr accepts connections, the container exits, or
// ctx ends.
func waitPort(ctx context.Context, c *dockerrt.Container, addr string, s *config.Server) error {
	var d net.Dialer
	for {
		dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		conn, err := d.DialContext(dctx, "tcp", addr)
		cancel()
		if err == nil {
			_ = conn.Close()
			return nil
		}
		t := time.NewTimer(25 * time.Millisecond)
		select {
		case <-c.Done():
			t.Stop()
			return fmt.Errorf("container exited before its port %s answered (%s)%s", addr, c.Exit(), diagnosis(c, s))
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("port %s never answered: %w%s", addr, ctx.Err(), diagnosis(c, s))
		case <-t.C:
		}
	}
}

// connectContainer speaks MCP to c; hardened is the server whose hardening
// the gateway applied to c (nil for a container it did not create), used to
// explain a failure.
func connectContainer(ctx context.Context, c *dockerrt.Container, tr transport.Interface, protocol string, hardened *config.Server) (*containerBackend, error) {
	conn, err := mcpconn.Connect(ctx, tr, protocol)
	if err != nil {
		return nil, handshakeError(ctx, c, err, hardened)
	}
	return &containerBackend{c: c, mcpSide: mcpSide{conn}}, nil
}

// SpecFor maps a docker server's config onto a container spec. network is
// where an HTTP provider must be reachable; the config's own network wins.
func SpecFor(s *config.Server, network string) dockerrt.Spec {
	stdio := s.Transport == "" || s.Transport == config.TransportStdio
	if s.Network != "" {
		network = s.Network
	}
	return dockerrt.Spec{
		ServerID:    s.ID,
		Image:       s.Image,
		Args:        s.Args,
		Env:         s.Env,
		Volumes:     s.Volumes,
		MemoryBytes: s.Resources.MemoryBytes,
		NanoCPUs:    s.Resources.NanoCPUs,
		PidsLimit:   s.Resources.PidsLimit,
		Network:     network,
		ReadOnly:    s.ReadOnly,
		User:        s.User,
		Stdio:       stdio,

		AllowDockerSocket: s.AllowDockerSocket,
		// Only the config file's servers have no Origin; every other
		// source is held to install.allowed_* when the container is built.
		FromConfigFile: s.Origin == "",
	}
}

// handshakeError names the real cause of a failed handshake: the container
// exited (with its code and last stderr), or it never answered.
func handshakeError(ctx context.Context, c *dockerrt.Container, err error, s *config.Server) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// It never answered: no grace for a container that ignores us.
		c.Kill(context.WithoutCancel(ctx))
		return fmt.Errorf("no answer to the MCP handshake: %w%s", err, diagnosis(c, s))
	}
	t := time.NewTimer(exitWait)
	defer t.Stop()
	select {
	case <-c.Done():
		return fmt.Errorf("container exited during start (%s)%s", c.Exit(), diagnosis(c, s))
	case <-t.C:
	}
	_ = c.Stop(context.WithoutCancel(ctx))
	return fmt.Errorf("MCP handshake: %w%s", err, diagnosis(c, s))
}

// diagnosis is what a start error adds about c: its last stderr lines, and
// a hint naming the config key of s to change when the failure points at a
// hardening default. The whole kept stderr is searched, not just the lines
// shown: the telling line is often above a stack trace.
func diagnosis(c *dockerrt.Container, s *config.Server) string {
	out := ""
	if tail := c.Stderr.LastLines(5); tail != "" {
		out = "; stderr: " + tail
	}
	exit := ""
	select {
	case <-c.Done():
		exit = c.Exit() // only meaningful once the container has gone
	default:
	}
	return out + hardeningHint(s, exit, c.Stderr.String())
}

func (b *containerBackend) ListTools(ctx context.Context) ([]mcpconn.Tool, error) {
	return b.conn.ListTools(ctx)
}

func (b *containerBackend) CallTool(ctx context.Context, name string, args any, o *mcpconn.CallOptions) (*mcp.CallToolResult, error) {
	return b.conn.CallTool(ctx, name, args, o)
}

func (b *containerBackend) Done() <-chan struct{} { return b.c.Done() }
func (b *containerBackend) Exit() string          { return b.c.Exit() }
func (b *containerBackend) Stderr() string        { return b.c.Stderr.String() }
func (b *containerBackend) ContainerID() string   { return b.c.ID }

func (b *containerBackend) Stop(ctx context.Context) error {
	_ = b.conn.Close()
	return b.c.Stop(ctx)
}
