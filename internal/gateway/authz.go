package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/endpoint"
)

// toolServer is the provider or group a front-door tool is bound to (the
// front door's binding: a prefix or a hash suffix may hide it in the
// name), "" for hangar_* tools (whose target is an argument) and for a
// name nothing is bound to.
func (g *Gateway) toolServer(name string) string {
	if strings.HasPrefix(name, "hangar_") || g.FrontDoor == nil {
		return ""
	}
	if b := g.FrontDoor.Binding(name); b != nil {
		return b.Server
	}
	return ""
}

// targetKeys are the arguments of hangar_* tools that name a provider or
// group the tool acts on: mcp_server, group, and hangar_warm's
// comma-separated mcp_servers. Every one named must be within the
// caller's servers, not just the first (a call naming a group it may not
// reach beside a server it may must not pass on the server's word).
var targetKeys = []string{"mcp_server", "group", "mcp_servers"}

// targetsOf lists the providers and groups a hangar_* call names, in
// targetKeys order; nil when it names none.
func targetsOf(args any) []string {
	m, _ := args.(map[string]any)
	var out []string
	for _, k := range targetKeys {
		s, ok := m[k].(string)
		if !ok || s == "" {
			continue
		}
		if k != "mcp_servers" {
			out = append(out, s)
			continue
		}
		for _, id := range strings.Split(s, ",") {
			if id = strings.TrimSpace(id); id != "" {
				out = append(out, id)
			}
		}
	}
	return out
}

// actedOn is the provider or group a hangar_* call acts on, for the audit:
// the argument the tool itself reads (a group for hangar_group_rebalance,
// whatever else the call names). "" for tools without one target.
func actedOn(tool string, args any) string {
	m, _ := args.(map[string]any)
	key := "mcp_server"
	if tool == "hangar_group_rebalance" {
		key = "group"
	}
	s, _ := m[key].(string)
	return s
}

// checkTool is the refusal for the caller calling tool with args, or nil.
// A front-door tool's server is checked by the front door's own filter,
// which mcp-go applies at tools/call too.
func checkTool(id auth.Identity, tool string, args any) *auth.Error {
	if !strings.HasPrefix(tool, "hangar_") {
		return id.Check(auth.ToolScope(tool), "")
	}
	return checkTargets(id, auth.ToolScope(tool), targetsOf(args))
}

// checkTargets is the refusal of scope or of any of targets, or nil. The
// answer depends on the names and the caller's patterns only, never on
// whether a server exists: "not yours" and "no such server" read alike.
func checkTargets(id auth.Identity, scope string, targets []string) *auth.Error {
	if e := id.Check(scope, ""); e != nil {
		return e
	}
	for _, t := range targets {
		if e := id.Check("", t); e != nil {
			return e
		}
	}
	return nil
}

// mayCall is the tool filter: a tool the caller may not call is not
// listed, and a call of it is refused as of an unknown tool. Front-door
// tools are filtered per server by the front door (FrontDoor.visible).
func mayCall(ctx context.Context, t mcp.Tool) bool {
	return auth.Caller(ctx).Check(auth.ToolScope(t.Name), "") == nil
}

// authorize is the tool-handler middleware that refuses a call outside the
// caller's scopes or servers. On HTTP the guard below has already
// answered such a call with a JSON-RPC error; this is the second line, for
// every other way in.
func authorize(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if e := checkTool(auth.Caller(ctx), req.Params.Name, req.Params.Arguments); e != nil {
			return mcp.NewToolResultError(e.Message), nil
		}
		return next(ctx, req)
	}
}

// envelope is the part of a JSON-RPC request the guard needs.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name string `json:"name"`
		// Raw: only an identity limited to some servers needs to look
		// inside, for the call's target (see refusal).
		Arguments json.RawMessage `json:"arguments"`
	} `json:"params"`
}

// guard answers, before mcp-go sees it, a POST whose method or tool the
// caller lacks the scope or server for: HTTP 403 with insufficient_scope
// and the seed 004 -32002 error, since mcp-go can only answer a filtered
// tool with "not found" (-32602). A body that does not parse is left to
// mcp-go, which answers it with the right JSON-RPC error.
func guard(h *auth.HTTP, serverOf func(tool string) string, audit func(context.Context, envelope, *auth.Error), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		id := auth.Caller(r.Context())
		if unlimited(id) {
			// Nothing to refuse: do not decode the body for nothing (a
			// loopback gateway without tokens, every call).
			next.ServeHTTP(w, r)
			return
		}
		if env, ok := endpoint.RequestEnvelope(r.Context()); ok {
			// checkEnvelope parsed the message already: only a tools/call's
			// params are decoded here, for its tool and arguments.
			checked := forGuard(env)
			if e := refusal(id, checked, serverOf); e != nil {
				audit(r.Context(), checked, e)
				h.Forbid(w, r, auth.ScalarID(env.ID), e)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		body, read := endpoint.BodyBytes(r)
		if !read {
			// Not behind checkEnvelope (embedding code): read it here.
			var err error
			body, err = io.ReadAll(r.Body)
			if err != nil {
				r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
				next.ServeHTTP(w, r)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		for _, env := range envelopes(body) {
			if e := refusal(id, env, serverOf); e != nil {
				audit(r.Context(), env, e)
				h.Forbid(w, r, auth.ScalarID(env.ID), e)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// unlimited reports whether id has every scope and may reach every
// server: then no request of it is refused here.
func unlimited(id auth.Identity) bool {
	if len(id.Servers) > 0 {
		return false
	}
	for _, s := range auth.AllScopes {
		if !id.Has(s) {
			return false
		}
	}
	return true
}

func refusal(id auth.Identity, env envelope, serverOf func(tool string) string) *auth.Error {
	if env.Method == "" {
		return nil // a response to a server-to-client request
	}
	if env.Method != "tools/call" {
		return id.Check(auth.MethodScope(env.Method), "")
	}
	if srv := serverOf(env.Params.Name); srv != "" {
		return id.Check(auth.ToolScope(env.Params.Name), srv)
	}
	var targets []string
	if len(id.Servers) > 0 && strings.HasPrefix(env.Params.Name, "hangar_") {
		targets = rawTargets(env.Params.Arguments)
	}
	return checkTargets(id, auth.ToolScope(env.Params.Name), targets)
}

// rawTargets is targetsOf for raw JSON arguments. Keys are matched
// exactly, as the handler reads them (a struct would match them in any
// case), and only the targets' values are decoded (hangar_call's calls
// may be large).
func rawTargets(raw json.RawMessage) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	args := map[string]any{}
	for _, k := range targetKeys {
		var s string
		if json.Unmarshal(m[k], &s) == nil {
			args[k] = s
		}
	}
	return targetsOf(args)
}

// forGuard is what the guard needs of a checked message: its method, id
// and, for tools/call, the tool and raw arguments from its params.
func forGuard(e endpoint.Envelope) envelope {
	out := envelope{ID: e.ID, Method: e.Method}
	if e.Method == string(mcp.MethodToolsCall) {
		_ = json.Unmarshal(e.Params, &out.Params)
	}
	return out
}

// envelopes decodes a request or a batch of them; nil when the body is not
// JSON-RPC at all.
func envelopes(body []byte) []envelope {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var many []envelope
		if json.Unmarshal(body, &many) != nil {
			return nil
		}
		return many
	}
	var one envelope
	if json.Unmarshal(body, &one) != nil {
		return nil
	}
	return []envelope{one}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// reachable is the caller's server filter, for answers that list servers.
func reachable(ctx context.Context) func(id string) bool { return auth.Caller(ctx).MayReach }

// hotLoadFor is g.HotLoad as the caller sees it: hot-loaded servers
// outside its filter are not listed.
func (g *Gateway) hotLoadFor(ctx context.Context) HotLoader {
	id := auth.Caller(ctx)
	if g.HotLoad == nil || len(id.Servers) == 0 {
		return g.HotLoad
	}
	return visibleHotLoader{g.HotLoad, id}
}

type visibleHotLoader struct {
	HotLoader
	id auth.Identity
}

func (v visibleHotLoader) Runtime() []RuntimeServer {
	var out []RuntimeServer
	for _, r := range v.HotLoader.Runtime() {
		if v.id.MayReach(r.ID) {
			out = append(out, r)
		}
	}
	return out
}

// holdStreams runs the streams of /mcp and /events under their
// credential (auth.HTTP.Hold): a legacy GET stream, /events, and a
// 2026-07-28 subscriptions/listen answer end within a moment of their
// token expiring or being removed by a reload. Other requests are short
// and pass as they are.
func holdStreams(h *auth.HTTP, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stream := r.Method == http.MethodGet
		if env, ok := endpoint.RequestEnvelope(r.Context()); ok && env.Method == string(mcp.MethodSubscriptionsListen) {
			stream = true
		}
		if !stream {
			next.ServeHTTP(w, r)
			return
		}
		ctx, release := h.Hold(r)
		defer release()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// hideUnserved answers resources/read of a URI whose server the caller is
// not served (outside its servers, quarantined, disabled) exactly as
// mcp-go answers a URI nobody serves, before mcp-go sees it: an error
// from the resource handler would carry another code (-32603), and the
// difference would tell a caller that the URI exists.
func (g *Gateway) unservedResource(w http.ResponseWriter, r *http.Request) bool {
	{
		env, ok := endpoint.RequestEnvelope(r.Context())
		if !ok || env.Method != string(mcp.MethodResourcesRead) || env.Kind != endpoint.KindRequest {
			return false
		}
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(env.Params, &p) != nil || p.URI == "" || !g.FrontDoor.UnservedURI(r.Context(), p.URI) {
			return false // mcp-go answers what is malformed
		}
		code := mcp.RESOURCE_NOT_FOUND
		if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || mcp.IsModernProtocol(env.MetaProtocolVersion()) {
			code = mcp.INVALID_PARAMS // 2026-07-28, as mcp-go's resourceNotFoundCode
		}
		auth.WriteError(w, http.StatusOK, auth.ScalarID(env.ID), &auth.Error{Code: code,
			Message: fmt.Sprintf("handler not found for resource URI '%s': %v", p.URI, server.ErrResourceNotFound)})
		return true
	}
}
