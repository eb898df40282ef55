package mcpconn

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// The tap sits between the mcp-go client and its transport. It exists for
// two things the client does not expose: the raw tools/list result (the
// client's decoding drops anyOf, oneOf and $schema from input schemas) and
// whether initialize was answered with a JSON-RPC error (a server that only
// speaks the 2026-07-28 protocol) rather than failing in transport.

type rawSinkKey struct{}

// withRawSink asks the tap to store the raw result of the request made
// with the returned context.
func withRawSink(ctx context.Context, sink *json.RawMessage) context.Context {
	return context.WithValue(ctx, rawSinkKey{}, sink)
}

type tapState struct {
	initRejected atomic.Bool
}

func (s *tapState) observe(ctx context.Context, req transport.JSONRPCRequest, resp *transport.JSONRPCResponse, err error) {
	if err != nil || resp == nil {
		return
	}
	if req.Method == "initialize" && resp.Error != nil {
		s.initRejected.Store(true)
	}
	if sink, ok := ctx.Value(rawSinkKey{}).(*json.RawMessage); ok && resp.Error == nil {
		*sink = append((*sink)[:0], resp.Result...)
	}
}

// One wrapper per concrete transport, so that the optional interfaces the
// client looks for (bidirectional requests, HTTP protocol headers) stay
// visible through embedding.

type stdioTap struct {
	*transport.Stdio
	tapState
	calls pendingCalls // for the lineReader in front of Stdio
}

func (t *stdioTap) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if req.Method != string(mcp.MethodToolsCall) {
		resp, err := t.Stdio.SendRequest(ctx, req)
		t.observe(ctx, req, resp, err)
		return resp, err
	}
	id := req.ID.String()
	t.calls.begin(id)
	resp, err := t.Stdio.SendRequest(ctx, req)
	spilled := t.calls.end(id)
	if sink, ok := ctx.Value(spillSinkKey{}).(*[]string); ok {
		*sink = spilled
	}
	t.observe(ctx, req, resp, err)
	return resp, err
}

type httpTap struct {
	*transport.StreamableHTTP
	tapState
}

func (t *httpTap) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.StreamableHTTP.SendRequest(ctx, req)
	t.observe(ctx, req, resp, err)
	return resp, err
}

type sseTap struct {
	*transport.SSE
	tapState
}

func (t *sseTap) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.SSE.SendRequest(ctx, req)
	t.observe(ctx, req, resp, err)
	return resp, err
}

type tapped interface {
	transport.Interface
	state() *tapState
}

func (t *stdioTap) state() *tapState { return &t.tapState }
func (t *httpTap) state() *tapState  { return &t.tapState }
func (t *sseTap) state() *tapState   { return &t.tapState }
