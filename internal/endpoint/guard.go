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
		Name string `json:"name"`
		// Raw: only an identity limited to some servers needs to look
		// inside, for the call's target (see refusal).
		Arguments json.RawMessage `json:"arguments"`
	} `json:"params"`
}

// Guard answers, before mcp-go sees it, a POST whose method or tool the
// caller lacks the scope or server for: HTTP 403 with insufficient_scope
// and the seed 004 -32002 error, since mcp-go can only answer a filtered
// tool with "not found" (-32602). A body that does not parse is left to
// mcp-go, which answers it with the right JSON-RPC error.
func Guard(h *auth.HTTP, serverOf func(tool string) string, audit func(context.Context, Checked, *auth.Error), next http.Handler) http.Handler {
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
		if env, ok := RequestEnvelope(r.Context()); ok {
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
// and, for tools/call, the tool and raw arguments from its params.
func forGuard(e Envelope) Checked {
	out := Checked{ID: e.ID, Method: e.Method}
	if e.Method == string(mcp.MethodToolsCall) {
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
