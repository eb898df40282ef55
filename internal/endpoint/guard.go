package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcp-hangar/hangar/internal/auth"
)

// Checked is the part of a JSON-RPC request the guard needs.
type Checked struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		// Name is the tool of tools/call, the prompt of prompts/get.
		Name string `json:"name"`
		// Raw: only an identity limited to some servers, or the policy,
		// needs to look inside (see refusal).
		Arguments json.RawMessage `json:"arguments"`
		// URI is the resource of resources/read.
		URI string `json:"uri"`
	} `json:"params"`
}

// GuardChecks are what the guard asks of the gateway.
type GuardChecks struct {
	// ServerOf is the provider or group a front-door tool is bound to.
	ServerOf func(tool string) string
	// Audit records a refusal for a scope or a server.
	Audit func(context.Context, Checked, *auth.Error)
	// Policy, when set, decides a request the scopes allow (tools/call,
	// resources/read, prompts/get; internal/policy) for the request's
	// protocol version: a refusal, which it has audited, or the context
	// the request goes on with (carrying the decision, so that the call
	// path does not decide it again).
	Policy func(ctx context.Context, c Checked, protocol string) (context.Context, *auth.Error)
	// PolicyActive reports whether Policy can refuse anything now (nil:
	// always): when not, a caller with every scope is not read for it.
	PolicyActive func() bool
}

// Guard answers, before mcp-go sees it, a POST whose method or tool the
// caller lacks the scope or server for: HTTP 403 with insufficient_scope
// and the seed 004 -32002 error, since mcp-go can only answer a filtered
// tool with "not found" (-32602). Then it asks the policy: a refusal of
// the policy is the same -32002 error, naming the rule, with HTTP 200 (no
// other token's scope would change it, and a client takes a JSON-RPC
// error in a 200 for what it is). A body that does not parse is left to
// mcp-go, which answers it with the right JSON-RPC error.
func Guard(h *auth.HTTP, c GuardChecks, next http.Handler) http.Handler {
	policyActive := func() bool { return c.Policy != nil && (c.PolicyActive == nil || c.PolicyActive()) }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		id := auth.Caller(r.Context())
		decide := policyActive()
		if unlimited(id) && !decide {
			// Nothing to refuse: do not decode the body for nothing (a
			// loopback gateway without tokens or policy, every call).
			next.ServeHTTP(w, r)
			return
		}
		if env, ok := RequestEnvelope(r.Context()); ok {
			// checkEnvelope parsed the message already: only the params
			// of a call, read or get are decoded here.
			checked := forGuard(env, decide)
			if e := refusal(id, checked, c.ServerOf); e != nil {
				c.Audit(r.Context(), checked, e)
				h.Forbid(w, r, auth.ScalarID(env.ID), e)
				return
			}
			if decide && decided(checked.Method) {
				ctx, e := c.Policy(r.Context(), checked, requestProtocol(r, env))
				if e != nil {
					auth.WriteError(w, http.StatusOK, auth.ScalarID(env.ID), e)
					return
				}
				r = r.WithContext(ctx)
			}
			next.ServeHTTP(w, r)
			return
		}
		body, read := BodyBytes(r)
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
		// Not behind checkEnvelope: scopes only. The policy is decided on
		// the call path (its refusal is then the call's error).
		for _, env := range envelopes(body) {
			if e := refusal(id, env, c.ServerOf); e != nil {
				c.Audit(r.Context(), env, e)
				h.Forbid(w, r, auth.ScalarID(env.ID), e)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// decided reports whether the guard asks the policy about method: the
// ways a request reaches a provider that the guard can read.
func decided(method string) bool {
	switch method {
	case string(mcp.MethodToolsCall), string(mcp.MethodResourcesRead), string(mcp.MethodPromptsGet):
		return true
	}
	return false
}

// requestProtocol is the MCP protocol version of a request: its header
// (every client sends it after initialize), else its _meta.
func requestProtocol(r *http.Request, env Envelope) string {
	if v := r.Header.Get(mcp.HeaderProtocolVersion); v != "" {
		return v
	}
	return env.MetaProtocolVersion()
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

func refusal(id auth.Identity, env Checked, serverOf func(tool string) string) *auth.Error {
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
	if len(id.Servers) > 0 && auth.GatewayTool(env.Params.Name) {
		targets = auth.RawTargets(env.Params.Arguments)
	}
	return auth.CheckTargets(id, auth.ToolScope(env.Params.Name), targets)
}

// forGuard is what the guard needs of a checked message: its method, id
// and, for tools/call, the tool and raw arguments from its params; with
// the policy to ask, also the URI of resources/read and the name of
// prompts/get.
func forGuard(e Envelope, policy bool) Checked {
	out := Checked{ID: e.ID, Method: e.Method}
	if e.Method == string(mcp.MethodToolsCall) || policy && decided(e.Method) {
		_ = json.Unmarshal(e.Params, &out.Params)
	}
	return out
}

// envelopes decodes a request or a batch of them; nil when the body is not
// JSON-RPC at all.
func envelopes(body []byte) []Checked {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var many []Checked
		if json.Unmarshal(body, &many) != nil {
			return nil
		}
		return many
	}
	var one Checked
	if json.Unmarshal(body, &one) != nil {
		return nil
	}
	return []Checked{one}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// HoldStreams runs the streams of /mcp and /events under their
// credential (auth.HTTP.Hold): a legacy GET stream, /events, and a
// 2026-07-28 subscriptions/listen answer end within a moment of their
// token expiring or being removed by a reload. Other requests are short
// and pass as they are.
func HoldStreams(h *auth.HTTP, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stream := r.Method == http.MethodGet
		if env, ok := RequestEnvelope(r.Context()); ok && env.Method == string(mcp.MethodSubscriptionsListen) {
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
