package frontdoor

import (
	"context"
	"encoding/json"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/sync/singleflight"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/endpoint"
)

// tools/list from pre-encoded bytes.
//
// mcp-go builds every tools/list answer from scratch: it copies and sorts
// the whole tool set (twice on a streamable HTTP session, whose empty
// session tool map it merges in), runs the tool filters over it and
// marshals each tool through a map (Tool.MarshalJSON), then compacts the
// result again. With 1,000 front-door tools that is milliseconds of CPU
// per list, for an answer that only changes when the front door replaces
// the tool set and differs between callers only by what the tool filters
// let them see.
//
// So the answer is computed by mcp-go itself (HandleMessage with the
// caller's identity and session, so the same filters run) once per tool
// generation, caller view and protocol, kept as bytes, and served with the
// request's id to every request mcp-go would answer exactly so. Anything
// else goes to mcp-go as before.
//
// On the session-based protocols (2025-11-25 and before) the answer is the
// same for every version (mcp-go decorates results on 2026-07-28 only) and
// depends on the session through the filters alone (search mode's
// activations, by session id): the gateway sets no session tools. What
// else mcp-go does with a session's request is about framing: it flushes
// the notifications waiting in the session into the answer first (then
// the answer is an SSE stream), and once a session has been sent any
// notification it frames every later answer as SSE. A session with
// notifications waiting is left to mcp-go (Pending says so);
// one that has none is answered as plain JSON, which every client takes
// for a POST (it must accept both), with the same message mcp-go would
// put in the stream. A notification sent while the answer is written waits
// for the session's next request or its GET stream, as one sent just
// after mcp-go's answer would.
//
// What observes every request inside mcp-go does not see the answers served
// here: hooks are checked on each request (any tools/list or catch-all hook
// sends it to mcp-go), and the gateway configures no tracer or request
// logger on its MCP server.

// maxListings bounds the answers kept: one per caller view (the scopes and
// server filters of the tokens and JWTs in use, and in search mode the
// activations of a session or caller) and protocol.
const maxListings = 32

// sessionProtocols is the listing key's version of the answers on the
// session-based protocols: mcp-go answers them alike.
const sessionProtocols = "session"

type listingKey struct{ view, version string }

// listing holds the encoded tools/list answers of the current tool
// generation.
//
// A change of the tool set is bracketed by beginChange and endChange: mcp-go
// sends list_changed from inside SetTools, and a client may list again
// before SetTools returns, so from before the change until after it
// nothing is served from, kept in or shared through the listing. Every
// answer kept was computed after the change, in its generation.
type listing struct {
	flight   singleflight.Group
	mu       sync.Mutex
	gen      uint64
	changing bool
	answers  map[listingKey][]byte // `,"result":…}` and a newline

	sessions registeredSessions
}

// beginChange drops the answers kept: call it before every change of the
// tool set or of the bindings the tool filter reads, and endChange after
// both.
func (l *listing) beginChange() {
	l.mu.Lock()
	l.gen++
	l.changing = true
	clear(l.answers)
	l.mu.Unlock()
}

// endChange starts the generation of the changed tool set.
func (l *listing) endChange() {
	l.mu.Lock()
	l.gen++
	l.changing = false
	clear(l.answers)
	l.mu.Unlock()
}

// get returns the answer kept for k, and the generation an answer computed
// now belongs to; keep is false while the tool set changes.
func (l *listing) get(k listingKey) (answer []byte, gen uint64, keep bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changing {
		return nil, l.gen, false
	}
	return l.answers[k], l.gen, true
}

// put keeps answer unless the generation it was computed in is over.
// Past maxListings answers, one other answer makes room: views of
// single sessions (search mode's activations) come and go, and must not
// push out the views every caller shares each time.
func (l *listing) put(k listingKey, gen uint64, answer []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.gen || l.changing {
		return
	}
	if l.answers == nil {
		l.answers = map[listingKey][]byte{}
	}
	if _, ok := l.answers[k]; !ok && len(l.answers) >= maxListings {
		for old := range l.answers {
			delete(l.answers, old)
			break
		}
	}
	l.answers[k] = answer
}

func (l *listing) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.answers)
}

// registeredSessions are the sessions mcp-go holds (its register and
// unregister hooks), by id: mcp-go answers a session's request with the
// one it holds, and its notifications wait there.
type registeredSessions struct {
	mu sync.RWMutex
	by map[string]server.ClientSession
}

func (rs *registeredSessions) register(_ context.Context, s server.ClientSession) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.by == nil {
		rs.by = map[string]server.ClientSession{}
	}
	rs.by[s.SessionID()] = s
}

func (rs *registeredSessions) unregister(_ context.Context, s server.ClientSession) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.by[s.SessionID()] == s {
		delete(rs.by, s.SessionID())
	}
}

func (rs *registeredSessions) get(id string) server.ClientSession {
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	return rs.by[id]
}

// Pending is how many notifications wait in session: the session table's
// small sessions say (endpoint/mcpsession.go; asking for their channel
// would make their queue), mcp-go's own have them in their channel. mcp-go
// writes them into the answer of the session's next request.
func Pending(session server.ClientSession) int {
	if p, ok := session.(interface{ Pending() int }); ok {
		return p.Pending()
	}
	return len(session.NotificationChannel())
}

// CachedListings is the number of tools/list answers kept for the current
// tool set.
func (f *FrontDoor) CachedListings() int { return f.listing.size() }

// ServingToolsList answers plain tools/list requests (stateless, or on a
// session with no notification waiting) from the listing and passes
// everything else to st, the streamable server of s.
func (f *FrontDoor) ServingToolsList(s *server.MCPServer, st *server.StreamableHTTPServer) func(http.ResponseWriter, *http.Request) bool {
	f.refreshMu.Lock()
	mine := f.srv == s
	f.refreshMu.Unlock()
	if !mine {
		return nil // not the server whose tools the front door keeps
	}
	neutral := f.ListNeutralHooks()
	return func(w http.ResponseWriter, r *http.Request) bool {
		ctx, version, id := r.Context(), "", []byte(nil)
		var session server.ClientSession
		if v := r.Header.Get(mcp.HeaderProtocolVersion); mcp.IsModernProtocol(v) {
			var ok bool
			if version, id, ok = plainToolsList(r, s, st, neutral); !ok {
				return false
			}
		} else {
			var ok bool
			if session, id, ok = f.sessionToolsList(r, s, neutral); !ok {
				return false
			}
			// The filters see the session as mcp-go gives it to them.
			ctx, version = s.WithContext(ctx, session), sessionProtocols
		}
		key := listingKey{view: f.viewOf(ctx) + f.searchView(ctx), version: version}
		answer, gen, keep := f.listing.get(key)
		if !keep {
			return false // the tool set is changing
		}
		if answer == nil {
			// One computation for the callers of a view that all list at
			// once (after a list_changed, say).
			v, _, _ := f.listing.flight.Do(strconv.FormatUint(gen, 10)+"\x00"+key.version+"\x00"+key.view, func() (any, error) {
				answer, ok := encodeToolsList(ctx, s, version)
				if ok {
					f.listing.put(key, gen, answer)
				}
				return answer, nil
			})
			if answer, _ = v.([]byte); answer == nil {
				return false
			}
		}
		if session != nil && Pending(session) > 0 {
			return false // mcp-go sends what waits first
		}
		// What mcp-go writes for a JSON answer: json.Encoder's output of
		// the response, whose fields come in this order.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		head := make([]byte, 0, 32+len(id))
		head = append(append(head, `{"jsonrpc":"2.0","id":`...), id...)
		if _, err := w.Write(head); err == nil {
			_, _ = w.Write(answer)
		}
		return true
	}
}

// viewOf is the caller's view of the tool set: the tool filters
// (mayCall, FrontDoor.visible) read the identity's scopes and server
// filter, and the policy's filter what View says.
func (f *FrontDoor) viewOf(ctx context.Context) string {
	view := ""
	if f.View != nil {
		view = "\x00" + f.View(ctx)
	}
	id, ok := auth.FromContext(ctx)
	if !ok {
		return view // no identity: the scope filters pass everything
	}
	return "id\x00" + id.ViewKey() + view
}

// plainToolsList reports whether mcp-go would answer r with the plain
// tools/list answer of its protocol version, and returns that version and
// the request id as mcp-go writes it back. Each check below is one mcp-go
// makes before it lists; a request failing any is mcp-go's to answer.
func plainToolsList(r *http.Request, s *server.MCPServer, st *server.StreamableHTTPServer, neutral server.Hooks) (version string, id []byte, ok bool) {
	if _, version, ok = StatelessPost(r, s, st, neutral, mcp.MethodToolsList); !ok {
		return "", nil, false
	}
	id, req, raw, ok := listRequest(r)
	if !ok {
		return "", nil, false
	}
	meta := req.Params.Meta
	if meta.ProtocolVersion() != version || meta.ClientCapabilities() == nil ||
		mcp.ValidateStandardHeaders(r.Header.Get, version, mcp.MethodToolsList, raw) != nil {
		return "", nil, false
	}
	return version, id, true
}

// sessionToolsList reports whether mcp-go would answer r, a request on a
// session of the session-based protocols, with the plain tools/list
// answer, and returns the session mcp-go would answer it on and the
// request id as mcp-go writes it back. Each check is one mcp-go makes
// before it lists (streamable_http.go's handlePost); the session table
// (endpoint/sessions.go) has vouched for the session id already.
func (f *FrontDoor) sessionToolsList(r *http.Request, s *server.MCPServer, neutral server.Hooks) (session server.ClientSession, id []byte, ok bool) {
	if _, session, ok = f.SessionPost(r, s, neutral, mcp.MethodToolsList); !ok {
		return nil, nil, false
	}
	id, req, _, ok := listRequest(r)
	if !ok || mcp.IsModernProtocol(req.Params.Meta.ProtocolVersion()) {
		return nil, nil, false
	}
	return session, id, true
}

// SessionPost reports whether r is a request of method on a session of
// the session-based protocols that mcp-go's transport takes on to its
// server and that no hook but neutral ones would see, and returns its
// envelope and the session mcp-go would handle it on (the one it holds,
// which the session table has vouched for). The request's own _meta may
// still name a 2026-07-28 version, which mcp-go takes for the stateless
// protocol: the caller checks that.
func (f *FrontDoor) SessionPost(r *http.Request, s *server.MCPServer, neutral server.Hooks, method mcp.MCPMethod) (env endpoint.Envelope, session server.ClientSession, ok bool) {
	if env, ok = post(r, s, neutral, method); !ok {
		return env, nil, false
	}
	if v := r.Header.Get(mcp.HeaderProtocolVersion); v != "" && (!mcp.IsValidProtocolVersion(v) || mcp.IsModernProtocol(v)) {
		return env, nil, false
	}
	if session = f.listing.sessions.get(r.Header.Get(server.HeaderKeySessionID)); session == nil {
		return env, nil, false // mcp-go would make a session up for this request
	}
	return env, session, true
}

// listRequest decodes r's body as mcp-go decodes a tools/list request,
// and returns the id as mcp-go writes it back and the raw params; ok is
// false for what mcp-go answers otherwise (a response, a cursor, params
// it cannot decode).
func listRequest(r *http.Request) (id []byte, req mcp.ListToolsRequest, params json.RawMessage, ok bool) {
	body, read := endpoint.BodyBytes(r)
	if !read {
		return nil, req, nil, false
	}
	var msg struct {
		ID     any             `json:"id"`
		Result any             `json:"result"` // a request with a result is taken for a response
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Result != nil || json.Unmarshal(body, &req) != nil || req.Params.Cursor != "" {
		return nil, req, nil, false
	}
	// mcp-go decodes the id into an interface and marshals it back (1.0
	// comes back as 1).
	id, err := json.Marshal(msg.ID)
	if err != nil {
		return nil, req, nil, false
	}
	return id, req, msg.Params, true
}

// listingRequestID is the id of the requests the listing asks mcp-go: a
// string no client sends in practice, so that mcp-go's record of the
// requests in flight (by session and id, for cancellation) never holds
// one of the caller's beside it.
const listingRequestID = `"\u0000hangar listing"`

// encodeToolsList asks mcp-go for the tools/list answer of version
// (sessionProtocols: on the session in ctx) as the caller in ctx sees it,
// and returns what follows the id in the response.
func encodeToolsList(ctx context.Context, s *server.MCPServer, version string) ([]byte, bool) {
	msg := `{"jsonrpc":"2.0","id":` + listingRequestID + `,"method":"tools/list"}`
	if version != sessionProtocols {
		msg = `{"jsonrpc":"2.0","id":` + listingRequestID + `,"method":"tools/list","params":{"_meta":{` +
			`"` + mcp.MetaKeyProtocolVersion + `":"` + version + `","` + mcp.MetaKeyClientCapabilities + `":{}}}}`
	}
	resp, ok := s.HandleMessage(ctx, json.RawMessage(msg)).(mcp.JSONRPCResponse)
	if !ok {
		return nil, false
	}
	result, err := json.Marshal(resp.Result)
	if err != nil {
		return nil, false
	}
	return append(append([]byte(`,"result":`), result...), "}\n"...), true
}

// StatelessPost reports whether r is a request of method on the stateless
// protocol (2026-07-28 and later) that mcp-go's transport takes on to its
// server and that no hook but neutral ones (the gateway's own, which ignore
// method) would see, and returns its envelope and protocol version. Each
// check is one mcp-go makes before it handles the message.
func StatelessPost(r *http.Request, s *server.MCPServer, st *server.StreamableHTTPServer, neutral server.Hooks, method mcp.MCPMethod) (env endpoint.Envelope, version string, ok bool) {
	if env, ok = post(r, s, neutral, method); !ok {
		return env, "", false
	}
	version = r.Header.Get(mcp.HeaderProtocolVersion)
	if !mcp.IsModernProtocol(version) || !mcp.IsValidProtocolVersion(version) || !st.SupportsProtocolVersion(version) ||
		r.Header.Get(mcp.HeaderLastEventID) != "" {
		return env, "", false
	}
	return env, version, true
}

// post reports whether r is a JSON POST of a request of method that
// mcp-go's transport takes on to its server (of either protocol) and that
// no hook but neutral ones would see, and returns its envelope.
func post(r *http.Request, s *server.MCPServer, neutral server.Hooks, method mcp.MCPMethod) (env endpoint.Envelope, ok bool) {
	env, posted := endpoint.RequestEnvelope(r.Context())
	if !posted || r.Method != http.MethodPost || env.Kind != endpoint.KindRequest || env.Method != string(method) ||
		rebinding(r) || hooked(s.GetHooks(), neutral, method) {
		return env, false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return env, false
	}
	return env, true
}

// hooked reports whether hooks other than neutral ones would see a request
// of method (tools/list or tools/call): then mcp-go must serve it.
func hooked(h *server.Hooks, neutral server.Hooks, method mcp.MCPMethod) bool {
	if h == nil {
		return false
	}
	if len(h.OnBeforeAny) > len(neutral.OnBeforeAny) || len(h.OnSuccess) > len(neutral.OnSuccess) ||
		len(h.OnError) > len(neutral.OnError) || len(h.OnRequestInitialization) > len(neutral.OnRequestInitialization) {
		return true
	}
	switch method {
	case mcp.MethodToolsList:
		return len(h.OnBeforeListTools) > 0 || len(h.OnAfterListTools) > 0
	case mcp.MethodToolsCall:
		return len(h.OnBeforeCallTool) > 0 || len(h.OnAfterCallTool) > 0
	}
	return true
}

// rebinding reports whether mcp-go's DNS-rebinding protection refuses r: a
// request to a loopback listener naming another host.
func rebinding(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && loopbackHost(local.String()) && !loopbackHost(r.Host)
}

func loopbackHost(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
