package mcpconn

import (
	"context"
	"encoding/json"
	"github.com/mcp-hangar/hangar/internal/auth"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Forwarding a call from a client of the gateway to a provider without
// losing anything on the way: the caller's _meta (its progressToken
// included) goes to the provider, the provider's progress notifications
// come back to the caller, and the result is kept as the raw JSON the
// provider sent. The call path hands the options to CallTool (built from
// its call.Request).

// CallOptions say how one tools/call is forwarded.
type CallOptions struct {
	// Meta is the caller's _meta, sent on to the provider. Its
	// progressToken is replaced by one unique on this connection (callers
	// on different sessions may use the same token) and mapped back.
	Meta *mcp.Meta
	// OnProgress receives the params of each notifications/progress the
	// provider sends for this call, with the caller's own token restored.
	// It runs on the connection's read loop: it must not block, nor call
	// the provider.
	OnProgress func(params map[string]any)
	// Raw receives the raw result of the call when it succeeds.
	Raw *json.RawMessage
	// Relay answers the provider's sampling, elicitation and roots
	// requests during the call; nil refuses them.
	Relay Relay
	// Caller is who made the call: a backend whose upstream credentials
	// are per identity calls as them (backend.identityBackend).
	Caller auth.Identity
	// Session is the caller's MCP session ID ("" for none), told when a
	// login the call asked for completes.
	Session string
}

// progressRouter maps the tokens the gateway sent to a provider back to the
// calls that wait for their progress.
type progressRouter struct {
	seq   atomic.Uint64
	mu    sync.Mutex
	calls map[string]*progressCall
}

type progressCall struct {
	token any // the caller's own token
	send  func(map[string]any)
	// mu orders what goes to send; last is the progress sent last. A
	// provider may send one call's progress on more than one stream (mcp-go's
	// HTTP server puts some on the GET stream), and they arrive here side by
	// side: the caller gets an increasing progress, as the specification
	// requires, and one that went backwards is dropped.
	mu   sync.Mutex
	last float64
	sent bool
	// seen gets a value for each notification routed, true once one says
	// the work is complete (progress = total).
	seen chan bool
}

// progressSettle bounds how long a call's result waits for the provider's
// last progress: servers that queue notifications apart from responses
// (mcp-go's stdio server) write the final progress just after the result,
// and a client whose request stream has ended would never get it.
const progressSettle = 100 * time.Millisecond

// settle waits until the call's final progress was routed, or a moment
// passed without it.
func (r *progressRouter) settle(tok string) {
	r.mu.Lock()
	call, ok := r.calls[tok]
	r.mu.Unlock()
	if !ok {
		return
	}
	t := time.NewTimer(progressSettle)
	defer t.Stop()
	for {
		select {
		case done := <-call.seen:
			if done {
				return
			}
		case <-t.C:
			return
		}
	}
}

// progressGrace is how long a call's token is still routed after the call
// ended: servers that queue notifications apart from responses (mcp-go's
// stdio server) may write the last progress after the result.
const progressGrace = 2 * time.Second

// register returns the token to send to the provider and a function that
// forgets it (after progressGrace).
func (r *progressRouter) register(token any, send func(map[string]any)) (string, func()) {
	tok := "hangar-" + strconv.FormatUint(r.seq.Add(1), 10)
	r.mu.Lock()
	if r.calls == nil {
		r.calls = map[string]*progressCall{}
	}
	r.calls[tok] = &progressCall{token: token, send: send, seen: make(chan bool, 64)}
	r.mu.Unlock()
	return tok, func() {
		time.AfterFunc(progressGrace, func() {
			r.mu.Lock()
			delete(r.calls, tok)
			r.mu.Unlock()
		})
	}
}

// dispatch is the client's notification handler.
func (r *progressRouter) dispatch(n mcp.JSONRPCNotification) {
	if n.Method != string(mcp.MethodNotificationProgress) {
		return
	}
	tok, ok := n.Params.AdditionalFields["progressToken"].(string)
	if !ok {
		return
	}
	r.mu.Lock()
	call, found := r.calls[tok]
	r.mu.Unlock()
	if !found {
		return
	}
	params := make(map[string]any, len(n.Params.AdditionalFields)+1)
	for k, v := range n.Params.AdditionalFields {
		params[k] = v
	}
	params["progressToken"] = call.token
	if len(n.Params.Meta) > 0 {
		params["_meta"] = n.Params.Meta
	}
	progress, numeric := n.Params.AdditionalFields["progress"].(float64)
	call.mu.Lock()
	if numeric && call.sent && progress <= call.last {
		call.mu.Unlock()
		return
	}
	if numeric {
		call.last, call.sent = progress, true
	}
	call.send(params)
	call.mu.Unlock()
	total, hasTotal := n.Params.AdditionalFields["total"].(float64)
	select {
	case call.seen <- hasTotal && progress >= total:
	default:
	}
}

// prepare applies o to req and returns the context to send it with, a
// function to call when the result is in (before it is returned), and one
// to call when the call is over.
func (c *Conn) prepare(ctx context.Context, req *mcp.CallToolRequest, o *CallOptions) (context.Context, func(), func()) {
	done, settle := func() {}, func() {}
	if o.Meta != nil {
		meta := &mcp.Meta{AdditionalFields: endToEnd(o.Meta.AdditionalFields)}
		if o.Meta.ProgressToken != nil && o.OnProgress != nil {
			var tok string
			tok, done = c.progress.register(o.Meta.ProgressToken, o.OnProgress)
			meta.ProgressToken = tok
			settle = func() { c.progress.settle(tok) }
		}
		if meta.ProgressToken != nil || len(meta.AdditionalFields) > 0 {
			req.Params.Meta = meta
		}
	}
	undo := c.relay.add(o.Relay)
	prev := done
	done = func() { undo(); prev() }
	if o.Raw != nil {
		*o.Raw = (*o.Raw)[:0]
		ctx = withRawSink(ctx, o.Raw)
	}
	return ctx, settle, done
}

// rawOnly stands for a result the client could not decode (a content type
// it does not know) when the raw result is what the caller uses anyway.
func rawOnly(raw json.RawMessage) *mcp.CallToolResult {
	var f struct {
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(raw, &f)
	return &mcp.CallToolResult{IsError: f.IsError}
}

// protocolMetaPrefix marks the _meta keys of the protocol itself (the
// caller's protocol version, client info, capabilities on 2026-07-28):
// they describe the caller's session with the gateway, not the gateway's
// session with the provider, and a provider rejects a call whose _meta
// names another protocol version than its session.
const protocolMetaPrefix = "io.modelcontextprotocol/"

// metaBaggage is the W3C baggage field of a _meta. The caller's is not
// passed on: what a provider gets is the baggage of the gateway's trace
// context (traceMeta), of which telemetry kept only the keys the operator
// allows (telemetry.forward_baggage).
const metaBaggage = "baggage"

// endToEnd returns the _meta fields that belong to the call itself.
func endToEnd(fields map[string]any) map[string]any {
	var out map[string]any
	for k, v := range fields {
		if strings.HasPrefix(k, protocolMetaPrefix) || k == metaBaggage {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(fields))
		}
		out[k] = v
	}
	return out
}
