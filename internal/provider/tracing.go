package provider

import (
	"context"
	"net/url"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// peer is where a provider's requests go, as a CLIENT span names it.
type peer struct {
	address   string
	port      int
	transport string
}

// peerOf reads the peer from the spec: a remote server's URL; a
// container's HTTP port (its address is the engine's to choose); a pipe
// for stdio.
func peerOf(s *config.Server) peer {
	if s.Transport != config.TransportHTTP && s.Transport != config.TransportSSE {
		return peer{transport: telemetry.TransportPipe}
	}
	p := peer{transport: telemetry.TransportTCP, port: s.Port}
	if s.Endpoint == "" {
		return p
	}
	u, err := url.Parse(s.Endpoint)
	if err != nil {
		return p
	}
	p.address = u.Hostname()
	p.port = 80
	if u.Scheme == "https" {
		p.port = 443
	}
	if port, err := strconv.Atoi(u.Port()); err == nil {
		p.port = port
	}
	return p
}

// startClient starts the CLIENT span of a call to the provider; nil when
// telemetry is off.
func (p *Provider) startClient(ctx context.Context, tool string, cold bool) (context.Context, *telemetry.Op) {
	t := p.opts.Telemetry
	if t == nil {
		return ctx, nil
	}
	pe := peerOf(p.spec)
	return t.StartClient(ctx, telemetry.ClientRequest{Method: string(mcp.MethodToolsCall), Tool: tool, Server: p.id,
		Address: pe.address, Port: pe.port, Transport: pe.transport, ColdStart: cold})
}

// endClient ends it with the call's outcome as MCP's conventions name it
// (error.type): err is the connection's error before classify turned it
// into a kind, whose JSON-RPC code is the error type; a result with
// isError is tool_error.
func endClient(op *telemetry.Op, res *mcp.CallToolResult, err error) {
	if op == nil {
		return
	}
	switch {
	case err != nil:
		op.SetErrorType(telemetry.ClientErrorType(err))
	case res != nil && res.IsError:
		op.ToolError()
	}
	op.End()
}

// queueWaitFrom is when a call began waiting for a slot: zero unless
// the call is traced, which is when its wait is shown.
func (p *Provider) queueWaitFrom(ctx context.Context) time.Time {
	if p.opts.Telemetry == nil || !telemetry.Recording(ctx) {
		return time.Time{}
	}
	return time.Now()
}

// coldNow reports, for a traced call, whether the provider is not ready
// (the call will wait for a start).
func (p *Provider) coldNow() bool {
	if !p.opts.Telemetry.Tracing() {
		return false
	}
	return p.State() != Ready && p.State() != Degraded
}

// startTraced is start under a cold start span, the child of the span of
// the call that caused it; the image pull (Prepare gets prepCtx) is its
// child in turn.
func (p *Provider) startTraced(done chan struct{}, prepCtx context.Context, abandon context.CancelFunc, progress call.Progress) {
	prepCtx, end := telemetry.Step(prepCtx, telemetry.StepColdStart, telemetry.AttrServer.String(p.id))
	p.start(done, prepCtx, abandon, progress)
	p.mu.Lock()
	var err error
	if p.state != Ready {
		err = p.lastErr
	}
	p.mu.Unlock()
	end(err)
}

// withClient notes the provider in ctx for the CLIENT spans of its
// resource and prompt requests (mcpconn starts them).
func (p *Provider) withClient(ctx context.Context) context.Context {
	t := p.opts.Telemetry
	if t == nil {
		return ctx
	}
	pe := peerOf(p.spec)
	return t.WithClient(ctx, telemetry.ClientRequest{Server: p.id, Address: pe.address, Port: pe.port, Transport: pe.transport})
}
