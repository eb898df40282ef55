package mcpconn

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// The tap sits between the mcp-go client and its transport. It exists for
// two things the client does not expose: the raw tools/list result (the
// client's decoding drops anyOf, oneOf and $schema from input schemas) and
// whether initialize was answered with a JSON-RPC error (a server that only
// speaks the 2026-07-28 protocol) rather than failing in transport.

// rawSinkKey carries, from CallTool and the raw tools/list to the tap, where
// the raw result of one request goes. A context value because mcp-go's
// client is between them and passes the request's context, and nothing
// else, to its transport.
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
	s.observeCall(ctx, req, resp, err, true)
}

// observeCall is observe; mayStandIn is false when the client's decoded
// result is the one forwarded (big texts read aside, lines.go).
func (s *tapState) observeCall(ctx context.Context, req transport.JSONRPCRequest, resp *transport.JSONRPCResponse, err error, mayStandIn bool) {
	if err != nil || resp == nil {
		return
	}
	if req.Method == "initialize" && resp.Error != nil {
		s.initRejected.Store(true)
	}
	sink, ok := ctx.Value(rawSinkKey{}).(*json.RawMessage)
	if !ok || resp.Error != nil {
		return
	}
	// The transport decoded the response into a buffer of its own: the
	// caller may keep it.
	*sink = resp.Result
	if req.Method == string(mcp.MethodToolsCall) && mayStandIn {
		// The caller forwards the raw result and decodes it itself: the
		// client is handed a stand-in that says only whether it is a tool
		// error, so a large result is decoded once, not twice.
		resp.Result = standIn(resp.Result)
	}
}

// Stand-ins for a tools/call result whose raw form the caller uses.
var (
	standInResult    = json.RawMessage(`{"content":[]}`)
	standInToolError = json.RawMessage(`{"content":[],"isError":true}`)
)

// standIn is the stand-in for raw: it scans raw for isError (encoding/json
// skips every other field without building it).
func standIn(raw json.RawMessage) json.RawMessage {
	var f struct {
		IsError bool `json:"isError"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return raw // the client reports what it cannot decode
	}
	if f.IsError {
		return standInToolError
	}
	return standInResult
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
	t.observeCall(ctx, req, resp, err, len(spilled) == 0)
	return resp, err
}

type httpTap struct {
	*transport.StreamableHTTP
	tapState
	// What it was made of, for withoutListening.
	url     string
	headers map[string]string
	hc      *http.Client
	listens bool // keeps a GET stream on a 2025-11-25 session
}

// withoutListening is a new transport to the same server without the GET
// stream, for a 2026-07-28 session.
func (t *httpTap) withoutListening() (*httpTap, error) {
	return newHTTPTap(t.url, t.headers, t.hc, false)
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
