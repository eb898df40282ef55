package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/frontdoor"
	"github.com/mcp-hangar/hangar/internal/relay"
	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// tools/call run directly.
//
// For one tools/call mcp-go decodes the message six times (its endpoint.Checked,
// the protocol era, _meta twice, the tool name for the header check, the
// request itself), re-serialises and decodes the tool's whole input schema
// to look for x-mcp-header bindings, starts a goroutine to forward
// notifications and encodes the answer: most of the gateway's CPU per warm
// call before this path (BENCHMARKS.md, figure 10, "Before"). For a plain
// call none of that can change the answer, so the gateway runs it itself:
// the tool mcp-go would run, behind the same middlewares and tool filters
// (toolChain, which mcp-go is given from the same list), with what mcp-go
// would put in its context that the gateway's handlers read, and it writes
// what mcp-go would write, byte for byte (TestDirectCallsMatchMCPGo,
// TestDirectSessionCallsMatchMCPGo).
//
// A plain call is a tools/call request that mcp-go would not refuse before
// calling the tool, with no progress token (nothing is sent to the client
// while it runs: progress is the only notification a call of the gateway's
// sends, a 2026-07-28 client is asked for input by multi round trip, in the
// answer, and a session's client that could be asked declared it, see
// plainSessionCall), no task, no multi round trip state to resume, and a
// tool whose input schema binds no header. Everything else
// goes to mcp-go, and so does every request while a hook other than the
// gateway's own would see it.

// directCalls is the routing row of plain calls of s: it serves them and
// declines everything else; nil when s is not a server MCPServer built.
// answers takes the client's answers to what a call's relay asks on the
// call's own stream (relay/stream.go).
func (g *Gateway) directCalls(s *server.MCPServer, st *server.StreamableHTTPServer, answers *relay.Answers) func(http.ResponseWriter, *http.Request) bool {
	c, ok := g.chains.Load(s)
	if !ok {
		return nil // not a server MCPServer built
	}
	chain := c.(toolChain)
	var neutral server.Hooks
	if g.FrontDoor != nil {
		neutral = g.FrontDoor.ListNeutralHooks()
	}
	impl := mcp.Implementation{Name: "hangar", Version: Version}
	// The _meta mcp-go stamps on a 2026-07-28 result that has none: the
	// same for every answer, so encoded once.
	stamp := &mcp.Meta{}
	stamp.SetServerInfo(impl)
	stamped, err := json.Marshal(stamp)
	if err != nil {
		return nil
	}
	clients := &clientMeta{}
	return func(w http.ResponseWriter, r *http.Request) bool {
		var call directCall
		plain := false
		switch {
		case mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)):
			call, plain = plainCall(r, s, st, chain, neutral, clients)
		case g.FrontDoor != nil: // it knows the sessions mcp-go holds
			call, plain = g.plainSessionCall(r, s, chain, neutral, clients)
			if plain {
				call.stream = relay.NewCallStream(w, r, answers)
				call.ctx = relay.WithDirectCall(call.ctx, s, call.stream)
			}
		}
		if !plain {
			return false
		}
		g.directCount.Add(1)
		res, err := chain.wrap(call.tool.Handler)(call.ctx, call.req)
		if call.ctx.Err() != nil {
			return true // the client is gone; mcp-go writes nothing then either
		}
		if err == nil && res == nil {
			err = fmt.Errorf("tool '%s' handler returned no result", call.req.Params.Name)
		}
		var answer []byte
		if err == nil {
			var meta []byte // res.Meta as mcp-go would stamp it, when it has none
			if call.info.Modern {
				// The result metadata 2026-07-28 requires, as mcp-go stamps it.
				if res.GetResultType() == "" {
					res.SetResultType(mcp.ResultTypeComplete)
				}
				if res.Meta == nil {
					meta = stamped
				} else if res.Meta.ServerInfo() == nil {
					res.Meta.SetServerInfo(impl)
				}
			}
			// A result JSON cannot hold (a NaN, say) is an error here; mcp-go
			// would write half an answer.
			answer, err = resultAnswer(call.id, res, meta)
		}
		if err != nil {
			details := mcp.NewJSONRPCErrorDetails(mcp.INTERNAL_ERROR, err.Error(), nil)
			var needsLogin mcp.URLElicitationRequiredError
			if errors.As(err, &needsLogin) && !call.info.Modern {
				// As mcp-go answers a handler's URL elicitation required
				// error on 2025-11-25: -32042 with the elicitations.
				details = needsLogin.JSONRPCError().Error
			}
			answer, _ = json.Marshal(mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(call.id), Error: details})
			answer = append(answer, '\n') // as json.Encoder ends it
		}
		if call.stream != nil {
			// A session's call: the answer ends the stream if a request to
			// the client upgraded it.
			err = call.stream.Finish(answer)
		} else {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK) // -32603 is 200 on 2026-07-28 too
			_, err = w.Write(answer)
		}
		if err != nil {
			g.Log.Debug("writing a tool answer", telemetry.FieldError, err)
		}
		return true
	}
}

// directCall is a plain call, ready to run.
type directCall struct {
	id   any // as mcp-go decodes it, so it is written back the same
	req  mcp.CallToolRequest
	info *server.RequestProtocolInfo
	tool *server.ServerTool
	// ctx is the request's context with what mcp-go would put in it that
	// the gateway's handlers read: the protocol info, and on a session
	// the session, with the server and stream the relay uses.
	ctx context.Context
	// stream is a session's call's response stream (nil on 2026-07-28).
	stream *relay.CallStream
}

// plainCall reports whether r is a plain call (see the top of this file)
// and returns it decoded. Each check below is one mcp-go makes before it
// calls the tool, or one that keeps a call whose answer mcp-go frames
// otherwise (streamed notifications, an error it writes itself) for mcp-go.
func plainCall(r *http.Request, s *server.MCPServer, st *server.StreamableHTTPServer, chain toolChain, neutral server.Hooks, clients *clientMeta) (directCall, bool) {
	env, version, ok := frontdoor.StatelessPost(r, s, st, neutral, mcp.MethodToolsCall)
	if !ok {
		return directCall{}, false
	}
	c, meta, ok := decodeCall(r, env, clients)
	if !ok || meta.version != version || meta.caps == nil || !standardHeaders(r.Header, c.req.Params.Name) {
		return c, false
	}
	c.info = &server.RequestProtocolInfo{Modern: true, ProtocolVersion: version, ClientInfo: meta.info,
		ClientCapabilities: meta.caps, LogLevel: meta.level}
	c.ctx = server.WithRequestProtocolInfo(r.Context(), c.info)
	return c, c.runnable(s, chain)
}

// plainSessionCall is plainCall for a session of the session-based
// protocols (2025-11-25 and before), whose session mcp-go holds (the
// session table's, endpoint/mcpsession.go, or its own while a GET stream
// is open). Beside a stateless plain call's, its conditions are those
// under which mcp-go answers on a session as it answers a stateless call:
// no notification waits for the session (mcp-go would stream it ahead of
// the answer), and the tool is a call of a provider's (hangar_call or a
// callable name). A client that declared sampling, elicitation or roots
// is served here too: its relays are those of mcp-go's path
// (relay/stream.go): sampling and roots through the server to the GET
// stream, elicitation on this call's stream, which the call then answers
// on. A notification for the session during the call waits for its next
// request or its GET stream, as one sent just after mcp-go's answer
// would.
func (g *Gateway) plainSessionCall(r *http.Request, s *server.MCPServer, chain toolChain, neutral server.Hooks, clients *clientMeta) (directCall, bool) {
	env, session, ok := g.FrontDoor.SessionPost(r, s, neutral, mcp.MethodToolsCall)
	if !ok || !session.Initialized() || frontdoor.Pending(session) > 0 {
		return directCall{}, false
	}
	if _, ok := session.(server.SessionWithClientInfo); !ok {
		return directCall{}, false
	}
	c, meta, ok := decodeCall(r, env, clients)
	if !ok || mcp.IsModernProtocol(meta.version) || !g.relays(c.req.Params.Name) {
		// mcp-go takes a 2026-07-28 _meta for the stateless protocol; the
		// gateway's other tools change what the session lists (find,
		// start, load), and mcp-go streams the list_changed to the caller
		// with the answer.
		return c, false
	}
	// What mcp-go gives a handler on the session-based protocols.
	c.info = &server.RequestProtocolInfo{ProtocolVersion: meta.version}
	c.ctx = server.WithRequestProtocolInfo(s.WithContext(r.Context(), session), c.info)
	return c, c.runnable(s, chain)
}

// decodeCall decodes a tools/call request as mcp-go would, or reports
// what no plain call has (a progress token, a task, a multi round trip to
// resume).
func decodeCall(r *http.Request, env endpoint.Envelope, clients *clientMeta) (c directCall, meta callMeta, ok bool) {
	// The envelope check decoded the message once already: its id, params
	// and "jsonrpc" are as mcp-go reads them (envelope.go).
	if env.Answer || len(env.Params) == 0 || json.Unmarshal(env.ID, &c.id) != nil || c.id == nil {
		return c, meta, false
	}
	c.req.Method = env.Method
	c.req.Header = r.Header
	var raw callParams
	if json.Unmarshal(env.Params, &raw) != nil {
		return c, meta, false
	}
	if meta, ok = raw.meta(clients); !ok || raw.Task != nil || raw.RequestState != "" || len(raw.InputResponses) > 0 {
		return c, meta, false
	}
	p := &c.req.Params
	p.Name, p.Meta, p.RawArguments = raw.Name, &mcp.Meta{AdditionalFields: meta.fields}, raw.Arguments
	// The gateway's own tools read their arguments as a map (mcp-go's
	// decoding of them); a provider's tool passes them on raw.
	if len(raw.Arguments) > 0 && auth.GatewayTool(raw.Name) && json.Unmarshal(raw.Arguments, &p.Arguments) != nil {
		return c, meta, false
	}
	return c, meta, true
}

// runnable finds c's tool and reports whether mcp-go would run it as is.
func (c *directCall) runnable(s *server.MCPServer, chain toolChain) bool {
	c.tool = s.GetTool(c.req.Params.Name)
	return c.tool != nil && c.tool.Handler != nil && bindsNoHeader(c.tool.Tool) &&
		(c.tool.Tool.Execution == nil || c.tool.Tool.Execution.TaskSupport != mcp.TaskSupportRequired) &&
		chain.sees(c.ctx, c.tool.Tool) // mcp-go answers unknown, hidden and task-only tools
}

// standardHeaders reports whether Mcp-Method and Mcp-Name agree with a
// tools/call of tool, as mcp.ValidateStandardHeaders checks them (which
// decodes the params once more to find the name).
func standardHeaders(h http.Header, tool string) bool {
	name := h.Get(mcp.HeaderName)
	if h.Get(mcp.HeaderMethod) != string(mcp.MethodToolsCall) || name == "" {
		return false
	}
	decoded, ok := mcp.DecodeHeaderValue(name)
	return ok && decoded == tool
}

var headerAnnotation = []byte("x-mcp-header")

// bindsNoHeader reports whether t's input schema certainly has no
// x-mcp-header binding, which mcp-go would check against the request's
// headers: the word appears nowhere in the schema, not even \u-escaped.
func bindsNoHeader(t mcp.Tool) bool {
	raw := t.RawInputSchema
	return len(raw) > 0 && !bytes.Contains(raw, headerAnnotation) && !bytes.Contains(raw, []byte(`\u`))
}

// callParams are tools/call's params as mcp.CallToolParams.UnmarshalJSON
// reads them, with _meta's values kept raw: mcp-go decodes the whole
// _meta into a map of any and re-encodes and decodes its client info and
// capabilities again on each read, the larger part of a plain call's
// allocations. Only what a plain call needs is decoded here, once, to the
// same values (FuzzCallParamsAsMCPGo), but for one case: an object under
// _meta whose keys repeat in another letter case ({"name":"a","NAME":"b"})
// reads as the last of them here, and as whichever sorts last there. Both
// are the client's own word about itself, sent twice.
type callParams struct {
	Name      string                     `json:"name"`
	Arguments json.RawMessage            `json:"arguments"`
	Meta      map[string]json.RawMessage `json:"_meta"`
	Task      *mcp.TaskParams            `json:"task,omitempty"`
	mcp.MultiRoundTripParams
}

// callMeta is a plain call's _meta: the fields mcp.Meta would hold, with
// the protocol's own values typed as mcp.Meta's accessors return them.
type callMeta struct {
	version string
	caps    *mcp.ClientCapabilities
	info    *mcp.Implementation
	level   mcp.LoggingLevel
	fields  map[string]any
}

// meta decodes p's _meta as mcp.Meta and its accessors would, or reports
// a progress token (no plain call has one).
func (p *callParams) meta(clients *clientMeta) (m callMeta, ok bool) {
	m.fields = make(map[string]any, len(p.Meta))
	for k, v := range p.Meta {
		if k == "progressToken" {
			if string(v) != "null" {
				return m, false
			}
			continue // mcp.Meta keeps the token out of its fields
		}
		if string(v) == "null" {
			m.fields[k] = nil
			continue
		}
		var typed any
		switch k {
		case mcp.MetaKeyProtocolVersion:
			var version string
			if json.Unmarshal(v, &version) == nil {
				m.version, typed = version, version
			}
		case mcp.MetaKeyClientCapabilities:
			if caps, err := clients.caps.decode(v); err == nil {
				m.caps, typed = caps, caps
			}
		case mcp.MetaKeyClientInfo:
			if info, err := clients.info.decode(v); err == nil {
				m.info, typed = info, info
			}
		case mcp.MetaKeyLogLevel:
			var level mcp.LoggingLevel
			if json.Unmarshal(v, &level) == nil {
				m.level, typed = level, level
			}
		}
		if typed == nil && json.Unmarshal(v, &typed) != nil {
			return m, false
		}
		m.fields[k] = typed
	}
	return m, true
}

// clientMeta keeps the client info and capabilities last decoded from a
// 2026-07-28 call's _meta: a client sends the same ones with every
// request, so most calls decode neither. What it hands out is shared
// between calls and only ever read.
type clientMeta struct {
	caps lastDecoded[mcp.ClientCapabilities]
	info lastDecoded[mcp.Implementation]
}

// lastDecoded is the last JSON value decoded into a *T, and its JSON.
type lastDecoded[T any] struct{ last atomic.Pointer[decoded[T]] }

type decoded[T any] struct {
	raw string
	v   *T
}

// decode is json.Unmarshal of raw into a *T, from the last one when raw
// is the same JSON.
func (l *lastDecoded[T]) decode(raw []byte) (*T, error) {
	if d := l.last.Load(); d != nil && d.raw == string(raw) {
		return d.v, nil
	}
	var v *T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	l.last.Store(&decoded[T]{raw: string(raw), v: v})
	return v, nil
}

// resultAnswer is the JSON-RPC answer carrying res, as json.Encoder writes
// mcp.NewJSONRPCResultResponse(id, res), with meta (already encoded) as
// res's _meta when it is not nil: the same bytes
// (TestResultAnswerAsMCPGo), without mcp.CallToolResult.MarshalJSON's map
// of every member, which encoding/json then sorts, encodes and compacts
// once more. The members come in the order that map's keys sort in.
func resultAnswer(id any, res *mcp.CallToolResult, meta []byte) ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	var err error
	if b, err = appendJSON(b, id); err != nil {
		return nil, err
	}
	b = append(b, `,"result":{`...)
	sep := func() {
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
	}
	if meta != nil {
		b = append(append(b, `"_meta":`...), meta...)
	} else if res.Meta != nil {
		b = append(b, `"_meta":`...)
		if b, err = appendJSON(b, res.Meta); err != nil {
			return nil, err
		}
	}
	sep()
	b = append(b, `"content":`...)
	if len(res.Content) == 0 {
		b = append(b, "[]"...)
	} else if b, err = appendJSON(b, res.Content); err != nil {
		return nil, err
	}
	if len(res.InputRequests) > 0 {
		b = append(b, `,"inputRequests":`...)
		if b, err = appendJSON(b, res.InputRequests); err != nil {
			return nil, err
		}
	}
	if res.IsError {
		b = append(b, `,"isError":true`...)
	}
	if res.RequestState != "" {
		b = append(b, `,"requestState":`...)
		if b, err = appendJSON(b, res.RequestState); err != nil {
			return nil, err
		}
	}
	if res.ResultType != "" {
		b = append(b, `,"resultType":`...)
		if b, err = appendJSON(b, res.ResultType); err != nil {
			return nil, err
		}
	}
	switch {
	case len(res.RawStructuredContent) > 0:
		b = append(b, `,"structuredContent":`...)
		b, err = appendJSON(b, json.RawMessage(res.RawStructuredContent))
	case res.StructuredContent != nil:
		b = append(b, `,"structuredContent":`...)
		if e, ok := res.StructuredContent.(encoded); ok {
			b = append(b, e...)
		} else {
			b, err = appendJSON(b, res.StructuredContent)
		}
	}
	if err != nil {
		return nil, err
	}
	return append(b, "}}\n"...), nil
}

// appendJSON appends v as json.Marshal encodes it.
func appendJSON(b []byte, v any) ([]byte, error) {
	enc, err := json.Marshal(v)
	return append(b, enc...), err
}
