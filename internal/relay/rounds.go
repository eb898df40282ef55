package relay

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/forward"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

// MCP 2026-07-28 has no server-to-client requests: a server that needs its
// client's input answers the call with an input_required result, and the
// client calls again with the answers (multi round trip, SEP-2322). A
// provider on 2025-11-25 still asks in the middle of its call. To relay
// that, a relaying call of a 2026-07-28 client that declared sampling,
// elicitation or roots runs on a goroutine of its own; when the provider
// asks, the client's call is answered with input_required carrying the
// provider's request and a requestState naming the call, and the provider
// waits. The client's next call with that requestState feeds its answers
// to the provider and waits again: for the result, or the next question.
//
// A waiting call is bounded: the client has inputTTL to come back (then
// the call is cancelled and forgotten), at most maxAwaitingInput calls may
// wait per gateway (past that the provider is refused at once), and a
// requestState resumes only a call of the same tool by the same identity.

// Bounds of calls waiting for their clients' input.
const (
	InputTTL         = 5 * time.Minute
	MaxAwaitingInput = 256
)

// errUnknownState is the answer for a requestState that is unknown,
// expired, someone else's or another tool's: all alike.
var errUnknownState = errors.New("hangar: unknown or expired requestState; call the tool again without it")

// InputRounds holds the calls whose provider asked their client for input.
type InputRounds struct {
	ttl time.Duration
	max int

	// Replica is named in every requestState (forward.ID); "" without
	// replicas. Set it before the first round.
	Replica string

	mu    sync.Mutex
	calls map[string]*roundCall // by requestState
}

func NewInputRounds(ttl time.Duration, max int) *InputRounds {
	return &InputRounds{ttl: ttl, max: max, calls: map[string]*roundCall{}}
}

// roundCall is one relaying call of a 2026-07-28 client.
type roundCall struct {
	rounds *InputRounds
	owner  string // sessionOwner of the caller
	tool   string
	caps   mcp.ClientCapabilities
	ctx    context.Context // the call's own: cancel ends it
	cancel context.CancelFunc
	asks   chan *inputAsk // from the provider
	done   chan struct{}  // closed when res and err are set
	res    *mcp.CallToolResult
	err    error

	// guarded by rounds.mu
	client   context.Context // the client request waiting on the call; nil between rounds
	admitted bool
	state    string               // set when admitted
	claimed  bool                 // a client request serves the call now
	open     map[string]*inputAsk // sent to the client, not answered
	seq      int
	gen      int // of the TTL timer
	timer    *time.Timer
}

// inputAsk is one request of the provider to the client.
type inputAsk struct {
	req    mcp.InputRequest
	answer chan inputAnswer // buffered: one answer
}

type inputAnswer struct {
	resp mcp.InputResponse
	err  error
}

// Middleware serves the relaying tools (relays reports which) of
// 2026-07-28 clients by multi round trip; everything else goes on as is.
func (r *InputRounds) Middleware(relays func(tool string) bool) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			info := server.RequestProtocolInfoFromContext(ctx)
			if info == nil || !info.Modern {
				return next(ctx, req)
			}
			if req.Params.RequestState != "" {
				c, err := r.resume(ctx, req.Params.RequestState, endpoint.SessionOwner(ctx), req.Params.Name)
				if err != nil {
					return mcp.NewToolResultError(err.Error()), nil
				}
				c.feed(req.Params.InputResponses)
				return c.await(ctx)
			}
			caps := info.ClientCapabilities
			if caps == nil || (caps.Sampling == nil && caps.Elicitation == nil && caps.Roots == nil) || !relays(req.Params.Name) {
				return next(ctx, req) // a request to this client is refused at once
			}
			return r.start(ctx, req, *caps, next).await(ctx)
		}
	}
}

// start runs the call on its own goroutine, detached from the client's
// request: it outlives it while it waits for the client's input.
func (r *InputRounds) start(ctx context.Context, req mcp.CallToolRequest, caps mcp.ClientCapabilities, next server.ToolHandlerFunc) *roundCall {
	c := &roundCall{rounds: r, owner: endpoint.SessionOwner(ctx), tool: req.Params.Name, caps: caps,
		asks: make(chan *inputAsk), done: make(chan struct{}), client: ctx}
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	callCtx := withRelay(c.ctx, inputRelay{c})
	go func() {
		defer close(c.done)
		defer c.cancel()
		defer func() {
			if p := recover(); p != nil {
				c.res, c.err = nil, fmt.Errorf("hangar: panic in tool %s: %v", req.Params.Name, p)
			}
		}()
		c.res, c.err = next(callCtx, req)
	}()
	return c
}

// await waits, on behalf of the client's request in ctx, for the call's
// result or its next questions. That request is the call's client (start
// and resume record it, before the provider can send anything) until it
// has its answer.
func (c *roundCall) await(ctx context.Context) (*mcp.CallToolResult, error) {
	defer c.serving(nil)
	select {
	case <-c.done: // questions still open are moot
	default:
		if reqs := c.pending(nil); len(reqs) > 0 {
			return c.inputRequired(reqs), nil
		}
	}
	select {
	case <-c.done:
		c.rounds.drop(c)
		return c.res, c.err
	case a := <-c.asks:
		asks := []*inputAsk{a}
		for more := true; more; {
			select {
			case a := <-c.asks:
				asks = append(asks, a)
			default:
				more = false
			}
		}
		return c.inputRequired(c.pending(asks)), nil
	case <-ctx.Done():
		// The client went away while the call runs: it ends.
		c.rounds.drop(c)
		c.cancel()
		return nil, ctx.Err()
	}
}

// serving records the client request waiting on the call (nil: none).
func (c *roundCall) serving(ctx context.Context) {
	c.rounds.mu.Lock()
	defer c.rounds.mu.Unlock()
	c.client = ctx
}

// ClientOf returns the context of the client request that waits on the
// call made with ctx, for what the provider sends that client (progress):
// a 2026-07-28 call's round trips are separate requests, so it is the one
// of the current round, or nil between rounds. For any other call it is
// ctx.
func ClientOf(ctx context.Context) context.Context {
	r, ok := ctx.Value(relayKey{}).(inputRelay)
	if !ok {
		return ctx
	}
	r.c.rounds.mu.Lock()
	defer r.c.rounds.mu.Unlock()
	return r.c.client
}

func (c *roundCall) inputRequired(reqs mcp.InputRequests) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Result:               mcp.Result{ResultType: mcp.ResultTypeInputRequired},
		MultiRoundTripResult: mcp.MultiRoundTripResult{InputRequests: reqs, RequestState: c.state},
	}
}

// pending adds asks to the questions open and, when any is open, parks the
// call until the client comes back (or inputTTL passes) and returns them
// all; it returns nil when none is open.
func (c *roundCall) pending(asks []*inputAsk) mcp.InputRequests {
	r := c.rounds
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range asks {
		if c.open == nil {
			c.open = map[string]*inputAsk{}
		}
		c.seq++
		c.open[strconv.Itoa(c.seq)] = a
	}
	if len(c.open) == 0 {
		return nil
	}
	reqs := make(mcp.InputRequests, len(c.open))
	for id, a := range c.open {
		reqs[id] = a.req
	}
	c.claimed = false
	if c.timer != nil {
		c.timer.Stop()
	}
	c.gen++
	gen := c.gen
	c.timer = time.AfterFunc(r.ttl, func() { r.expire(c, gen) })
	return reqs
}

// admit counts the call among those that may wait for input; it refuses
// when maxAwaitingInput are.
func (r *InputRounds) admit(c *roundCall) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.admitted {
		return nil
	}
	if len(r.calls) >= r.max {
		return fmt.Errorf("hangar: %d calls already wait for their clients' input, the most the gateway keeps; try again later", r.max)
	}
	c.admitted = true
	c.state = forward.ID(rand.Text(), r.Replica) // 130 bits from the CSPRNG
	r.calls[c.state] = c
	return nil
}

// resume claims the call state names for the client request in ctx, of
// owner calling tool: what the provider sends the client from now on goes
// on that request.
func (r *InputRounds) resume(ctx context.Context, state, owner, tool string) (*roundCall, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls[state]
	if c == nil || c.owner != owner || c.tool != tool {
		return nil, errUnknownState
	}
	if c.claimed {
		return nil, errors.New("hangar: another request is answering this requestState")
	}
	c.claimed = true
	c.client = ctx
	if c.timer != nil {
		c.timer.Stop()
	}
	return c, nil
}

// feed gives the provider the client's answers to the questions open; the
// ones left unanswered stay open and are asked again.
func (c *roundCall) feed(answers mcp.InputResponses) {
	r := c.rounds
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, a := range c.open {
		resp, ok := answers[id]
		if !ok {
			continue
		}
		delete(c.open, id)
		if err := resp.DecodeFor(a.req.Method); err != nil {
			a.answer <- inputAnswer{err: fmt.Errorf("hangar: the client's answer to %s is not valid: %w", a.req.Method, err)}
			continue
		}
		a.answer <- inputAnswer{resp: resp}
	}
}

// expire ends a call whose client did not come back in time.
func (r *InputRounds) expire(c *roundCall, gen int) {
	r.mu.Lock()
	stale := c.claimed || c.gen != gen || r.calls[c.state] != c
	if !stale {
		delete(r.calls, c.state)
	}
	r.mu.Unlock()
	if !stale {
		c.cancel()
	}
}

// drop forgets a call that is over.
func (r *InputRounds) drop(c *roundCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls[c.state] == c {
		delete(r.calls, c.state)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
}

// waiting is the number of calls kept for their clients' input.
func (r *InputRounds) waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// ask puts the provider's request to the client and waits for its answer.
func (c *roundCall) ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	if err := c.rounds.admit(c); err != nil {
		return mcp.InputResponse{}, err
	}
	ended := func() (mcp.InputResponse, error) {
		if c.ctx.Err() != nil {
			return mcp.InputResponse{}, errCallEnded
		}
		return mcp.InputResponse{}, ctx.Err()
	}
	a := &inputAsk{req: req, answer: make(chan inputAnswer, 1)}
	select {
	case c.asks <- a:
	case <-ctx.Done():
		return ended()
	case <-c.ctx.Done():
		return ended()
	}
	select {
	case ans := <-a.answer:
		return ans.resp, ans.err
	case <-ctx.Done():
		return ended()
	case <-c.ctx.Done():
		return ended()
	}
}

// errCallEnded answers a provider whose call ended while it asked: its
// client went away or did not come back within inputTTL.
var errCallEnded = errors.New("hangar: the call ended before its client answered (it went away, or did not call again with the requestState in time)")

// inputRelay relays a provider's requests to a 2026-07-28 client by multi
// round trip.
type inputRelay struct{ c *roundCall }

var _ mcpconn.Relay = inputRelay{}

func (r inputRelay) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if r.c.caps.Sampling == nil {
		return nil, undeclared("sampling")
	}
	resp, err := r.c.ask(ctx, mcp.NewSamplingInputRequest(req.CreateMessageParams))
	if err != nil {
		return nil, err
	}
	if resp.Sampling == nil {
		return nil, errors.New("hangar: the client sent no sampling result")
	}
	return resp.Sampling, nil
}

func (r inputRelay) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if !elicitationDeclared(&r.c.caps, req.Params) {
		return nil, undeclared(elicitationCapability(req.Params))
	}
	resp, err := r.c.ask(ctx, mcp.NewElicitationInputRequest(req.Params))
	if err != nil {
		return nil, err
	}
	if resp.Elicitation == nil {
		return nil, errors.New("hangar: the client sent no elicitation result")
	}
	return resp.Elicitation, nil
}

func (r inputRelay) ListRoots(ctx context.Context, _ mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	if r.c.caps.Roots == nil {
		return nil, undeclared("roots")
	}
	resp, err := r.c.ask(ctx, mcp.NewRootsInputRequest())
	if err != nil {
		return nil, err
	}
	if resp.Roots == nil {
		return nil, errors.New("hangar: the client sent no roots result")
	}
	return resp.Roots, nil
}

// mcp-go writes a roots/list input request without params (roots/list
// takes none, and the spec makes them optional); the official go-sdk
// (v1.8) decodes every input request's params and fails on a missing one
// ("unexpected end of JSON input"), while it takes an empty object. So
// the answers of 2026-07-28 tools/calls say "params":{} for roots/list.
// The literal below is what mcp-go's InputRequest encodes to: a provider's
// own JSON can only carry it inside a string, escaped.
var (
	rootsWithoutParams = []byte(`{"method":"roots/list"}`)
	rootsEmptyParams   = []byte(`{"method":"roots/list","params":{}}`)
	inputRequestsKey   = []byte(`"inputRequests"`)
)

type rootsParamsWriter struct{ http.ResponseWriter }

func (w rootsParamsWriter) Write(p []byte) (int, error) {
	if !bytes.Contains(p, rootsWithoutParams) || !bytes.Contains(p, inputRequestsKey) {
		return w.ResponseWriter.Write(p)
	}
	if _, err := w.ResponseWriter.Write(bytes.ReplaceAll(p, rootsWithoutParams, rootsEmptyParams)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w rootsParamsWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w rootsParamsWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// RootsParams gives 2026-07-28 tools/call answers rootsParamsWriter.
func RootsParams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if env, ok := endpoint.RequestEnvelope(r.Context()); ok && env.Method == string(mcp.MethodToolsCall) && endpoint.ModernMessage(r, env) {
			w = rootsParamsWriter{w}
		}
		next.ServeHTTP(w, r)
	})
}
