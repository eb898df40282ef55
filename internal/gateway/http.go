package gateway

import (
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/frontdoor"
	"github.com/mcp-hangar/hangar/internal/relay"
)

// HTTP builds the gateway's endpoint (internal/endpoint): the stages of
// /mcp that need the gateway (trace context, scope guard, stream holds,
// 2026-07-28 cancellation and roots), its routing table, and /events and
// /metrics beside it.
func (g *Gateway) HTTP(s *server.MCPServer, o endpoint.Options) *endpoint.Endpoint {
	o = o.WithDefaults()
	// The session table, not mcp-go, owns session ids and their expiry
	// (endpoint/sessions.go); mcp-go's own idle sweeper stays off.
	sessions := endpoint.NewSessionTable(o.MaxSessions, o.MaxSessionsPerIdentity, o.SessionIdleTTL, g.Log.With("component", "sessions"))
	sessions.Replica = g.replica
	g.Metrics.CountSessions(sessions.Count)
	opts := []server.StreamableHTTPOption{
		server.WithEndpointPath("/mcp"),
		server.WithSessionIdManagerResolver(sessions),
		server.WithHeartbeatInterval(30 * time.Second),
	}
	if _, built := g.chains.Load(s); built {
		// Between requests mcp-go holds a small session object of the
		// table's, not its own (endpoint/mcpsession.go); MCPServer gave s
		// the hooks and the call middleware that takes.
		sessions.MCP = s
		opts = append(opts, server.WithHTTPContextFunc(endpoint.HTTPContext))
	}
	streamable := server.NewStreamableHTTPServer(s, opts...)
	if o.Auth.Log == nil {
		o.Auth.Log = g.Log
	}
	if o.Auth.Audit == nil {
		o.Auth.Audit = g.auditRequest // every refusal is audited (authz.go)
	}
	sessions.Release = endpoint.ReleaseVia(streamable)
	sessions.Refused = g.auditRequest
	p := endpoint.Parts{MCP: streamable, Sessions: sessions, Mounts: map[string]http.Handler{}}
	p.Stages = []func(http.Handler) http.Handler{
		g.traceRequests,
		// The scope guard refuses before any session is looked up or
		// created.
		func(next http.Handler) http.Handler {
			return endpoint.Guard(o.Auth, endpoint.GuardChecks{ServerOf: g.toolServer, Audit: g.auditGuard,
				Policy: g.guardPolicy, PolicyActive: g.Policy.Active}, next)
		},
		func(next http.Handler) http.Handler { return endpoint.HoldStreams(o.Auth, next) },
		relay.RootsParams,
		(&endpoint.Inflight{}).Middleware, // 2026-07-28 notifications, and the requests they cancel
	}
	if m := g.Management; m != nil {
		// Only a management method goes through its wrapper: the envelope
		// is parsed once already, so every other message goes straight on.
		wrapped := m.WrapMCP(http.NotFoundHandler())
		p.Table.Open = append(p.Table.Open, endpoint.Row{Name: "mcp/* (seed 003)", Serve: func(w http.ResponseWriter, r *http.Request) bool {
			if env, ok := endpoint.RequestEnvelope(r.Context()); !ok || !m.Handles(env.Method) {
				return false
			}
			wrapped.ServeHTTP(w, r)
			return true
		}})
		p.Mounts["/events"] = o.Auth.Middleware(needScope(o.Auth, auth.ScopeRead, endpoint.HoldStreams(o.Auth, m.Events())))
	}
	if g.FrontDoor != nil {
		p.Table.Rows = append(p.Table.Rows, endpoint.Row{Name: "resources/read of a withheld resource", Serve: g.unservedResource})
	}
	answers := relay.NewAnswers()
	if serve := g.directCalls(s, streamable, answers); serve != nil {
		p.Table.Rows = append(p.Table.Rows,
			endpoint.Row{Name: "answers to what a plain call asked its client", Serve: answers.Serve},
			endpoint.Row{Name: "plain tools/call", Serve: serve})
	}
	if serve := g.toolsListHandler(s, streamable); serve != nil {
		p.Table.Rows = append(p.Table.Rows, endpoint.Row{Name: "plain tools/list", Serve: serve})
	}
	p.Table.Last = relay.CountProgress(streamable, frontdoor.FindToolName)
	if o.UI != nil {
		p.Mounts["/ui/"] = o.UI(func(scope string, next http.Handler) http.Handler {
			return o.Auth.Middleware(needScope(o.Auth, scope, next))
		})
	}
	if o.Metrics != nil {
		// Metrics name every server: the same credentials and hangar:read
		// as hangar_metrics (a loopback gateway without tokens is open).
		p.Mounts["/metrics"] = o.Auth.Middleware(needScope(o.Auth, auth.ScopeRead, g.Metrics.Scoped(o.Metrics)))
	}
	return endpoint.New(o, p)
}

// needScope lets a request through when its identity holds scope.
func needScope(h *auth.HTTP, scope string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e := auth.Caller(r.Context()).Check(scope, ""); e != nil {
			if h.Audit != nil {
				h.Audit(r, auth.Refusal{Status: http.StatusForbidden, Identity: auth.Caller(r.Context()), Reason: audit.ForbiddenReason(e)})
			}
			h.Forbid(w, r, nil, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// toolsListHandler serves tools/list of the front door from its listing
// when mcp-go's answer is known (internal/frontdoor/listing.go says when).
func (g *Gateway) toolsListHandler(s *server.MCPServer, st *server.StreamableHTTPServer) func(http.ResponseWriter, *http.Request) bool {
	if g.FrontDoor == nil {
		return nil
	}
	return g.FrontDoor.ServingToolsList(s, st)
}
