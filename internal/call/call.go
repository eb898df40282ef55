// Package call is what one tool call through the gateway carries beside
// its server, tool and arguments, on its way down the call path: from the
// tool handler mcp-go hands it to (a callable name of the front door,
// hangar_call, hangar_start and the other tools that may start a server;
// relay.NewRequest builds it there) through the gateway's callServer, the
// batch executor, a group and a provider, to the provider's connection
// (mcpconn.CallOptions) and the image gate of a cold start.
//
// It is an argument, not a context value, so that every signature on the
// way shows that it needs the caller, the session, the progress reporter,
// the relay or the attempt budget. The context keeps what libraries need:
// cancellation, deadlines, trace spans, and mcp-go's own session and
// request info.
package call

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/retry"
)

// Request is the per-call data of one tool call. A nil *Request is an
// in-process call with none of it (a health check, a test): no relay, no
// progress, no attempt budget; code that needs the caller then treats it
// as local.
type Request struct {
	// Caller is who made the call (auth.Caller of the client's request).
	Caller auth.Identity
	// Session is the caller's MCP session ID; empty for a 2026-07-28
	// stateless call and for stdio.
	Session string
	// Progress reports progress to the caller: an image pull of the cold
	// start the call causes, and the provider's own progress when the
	// call's _meta is forwarded.
	Progress Progress
	// Relay answers the provider's sampling, elicitation and roots
	// requests during the call; nil refuses them.
	Relay mcpconn.Relay
	// Budget is the attempts one hangar_call entry may make, shared by
	// the batch executor's retries and a group's failover; nil: no bound.
	Budget *retry.Budget
	// Meta is the caller's _meta, forwarded to the provider (its
	// progressToken mapped, mcpconn.CallOptions.Meta); nil: none is
	// forwarded (hangar_call).
	Meta *mcp.Meta
	// Raw receives the provider's raw result when it answered (the front
	// door forwards it unchanged); nil: not kept.
	Raw *json.RawMessage
}

// Progress is where progress of a call goes: notifications/progress
// params, with the caller's own token, sent to the caller.
type Progress struct {
	// Token is the caller's progressToken; nil when it asked for none.
	Token mcp.ProgressToken
	// Send delivers one notifications/progress params to the caller. It
	// must not block: it may run on a connection's read loop.
	Send func(params map[string]any)
}

// Wanted reports whether the caller asked for progress and can get it.
func (p Progress) Wanted() bool { return p.Token != nil && p.Send != nil }

// ProgressOf is r's progress reporter; none for a nil r.
func (r *Request) ProgressOf() Progress {
	if r == nil {
		return Progress{}
	}
	return r.Progress
}

// Take spends one attempt of r's budget; a request without a budget (a
// call from anywhere but hangar_call's executor) may always try.
func (r *Request) Take() bool { return r == nil || r.Budget == nil || r.Budget.Take() }

// CallerOr is the caller, or a local, unrestricted identity for a nil r
// (an in-process call never passed the HTTP middleware).
func (r *Request) CallerOr() auth.Identity {
	if r == nil {
		return auth.Local(auth.KindLocal)
	}
	return r.Caller
}

// Options is how the provider's connection forwards the call: nil for a
// nil r, as for a call nobody relays to.
func (r *Request) Options() *mcpconn.CallOptions {
	if r == nil {
		return nil
	}
	o := &mcpconn.CallOptions{Meta: r.Meta, Raw: r.Raw, Relay: r.Relay, Caller: r.Caller, Session: r.Session}
	if r.Progress.Wanted() {
		o.OnProgress = r.Progress.Send
	}
	return o
}

// WithBudget is a copy of r for one hangar_call entry with budget b.
func (r *Request) WithBudget(b *retry.Budget) *Request {
	c := Request{}
	if r != nil {
		c = *r
	}
	c.Budget = b
	return &c
}
