// Package endpoint is the first stop of every request: hangar's HTTP
// pipeline and its one routing table for /mcp.
//
// A POST to /mcp goes through, in this order:
//
//	host       Host header allow-list (DNS rebinding; every
//	           path but /healthz)                                CheckHost
//	origin     Origin header allow-list (DNS rebinding)          CheckOrigin
//	auth       token or JWT → identity, scopes, rate limit        auth.HTTP
//	forward    another replica's session, continuation or
//	           requestState goes to that replica                  Options.Forward
//	envelope   body read once, bounded; JSON-RPC shape checked    CheckEnvelope
//	stages     trace context, scope and policy guard (Guard), stream holds
//	           (HoldStreams), 2026-07-28 cancellation (Inflight) and
//	           roots, in the order the gateway gives them        Parts.Stages
//	routes     the table below, first row that serves wins        Table
//
// The table (Table.Rows, built by the gateway, see gateway.Routes):
//
//	mcp/*        seed 003's management methods      outside sessions
//	─── session table (2025-11-25 session ids; 2026-07-28 passes) ───
//	unserved     resources/read of what is withheld  answered here
//	answers      a client's answer to what a direct  relay.Answers
//	             call asked on its stream
//	direct call  plain tools/call by name            the call path
//	listing      plain tools/list (stateless, or on  the front door's cache
//	             a session with nothing waiting)
//	mcp-go       everything else                     the MCP server
//
// Each row either serves a request or declines it without writing, and
// the next row is tried; the last row serves everything.
//
// Beside /mcp the endpoint serves these paths (New):
//
//	/healthz     liveness: 200 while the process answers    always open
//	/readyz      readiness: 200 once the catalog, the tool   always open
//	             index and stored state are loaded, else 503
//	             (Readiness; /mcp requests wait for it too)
//	/.well-known/oauth-protected-resource[/mcp]   RFC 9728 metadata
//	Mounts       /events, /metrics, /ui/ (each does its own auth,
//	             after the Origin check)
//	/oauth/ (Options.OAuth): upstream logins     no bearer token and no
//	  /oauth/start/<id>  a caller's login link   Origin check: a browser
//	  /oauth/callback    the redirect URI        brings neither; the link,
//	  /oauth/client-metadata.json                the state and a cookie
//	                                             bind each to one caller
package endpoint

import (
	"context"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
)

// Options configure the HTTP endpoint.
type Options struct {
	// AllowedOrigins may send browser requests; loopback origins always
	// may. A request with any other Origin header gets 403 (DNS rebinding
	// and cross-site protection, which mcp-go does not do).
	AllowedOrigins []string
	// Hosts are the Host headers answered (HostPolicy); a request for
	// another gets 421 and an audit entry (Auth.Audit).
	Hosts HostPolicy
	// SessionIdleTTL ends streamable HTTP sessions idle this long
	// (server.session_idle_ttl, default 30 minutes).
	SessionIdleTTL time.Duration
	// MaxSessions bounds the open sessions (server.max_sessions, default
	// 1000); an initialize beyond it gets 503.
	MaxSessions int
	// MaxSessionsPerIdentity bounds one caller's open sessions
	// (server.max_sessions_per_identity; 0 is MaxSessions): beyond it the
	// caller's least recently active idle session ends.
	MaxSessionsPerIdentity int
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64
	// Metrics serves /metrics; nil leaves it out.
	Metrics http.Handler
	// Auth authenticates and rate-limits /mcp. nil trusts every caller as
	// local, as a loopback gateway without tokens does: app.ServeHTTP
	// always sets it from the config and the listen address.
	Auth *auth.HTTP
	// UI, when set, builds the handler of /ui/ (the dashboard) given the
	// guard of its data routes: this endpoint's auth middleware and a
	// required scope, as on /events.
	UI func(guard func(scope string, next http.Handler) http.Handler) http.Handler
	// Forward, when set, comes right after authentication on /mcp: it
	// passes requests for another replica's ids there
	// (forward.Router.Middleware), counted against the caller's rate
	// limit here; the owner authenticates them again.
	Forward func(http.Handler) http.Handler
	// OAuth, when set, serves /oauth/: the upstream login links, the
	// OAuth callback and the client metadata document
	// (upstreamauth.Manager.Handler). A browser reaches it with neither a
	// bearer token nor a cross-origin-safe Origin (a form posted from the
	// link's page, a redirect from an authorization server): what it
	// serves is bound to one caller by the link's and the state's secrets.
	OAuth http.Handler
	// Ready is the gateway's readiness (/readyz); nil is always ready.
	Ready *Readiness
}

// WithDefaults fills what o leaves unset (New applies it; the gateway
// needs the session limits before, to build its session table).
func (o Options) WithDefaults() Options {
	if o.SessionIdleTTL <= 0 {
		o.SessionIdleTTL = 30 * time.Minute
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 16 << 20
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 1000
	}
	if o.Auth == nil {
		o.Auth = &auth.HTTP{Auth: auth.NewAuthenticator(context.Background(), config.Auth{}, auth.Options{}), Loopback: true}
	}
	if o.Ready == nil {
		o.Ready = NewReadiness()
		o.Ready.Ready()
	}
	return o
}

// Management is the management protocol's HTTP side (seed 003).
type Management interface {
	// WrapMCP serves the mcp/* methods on /mcp and passes the rest on.
	WrapMCP(next http.Handler) http.Handler
	// Handles reports whether method is one of them.
	Handles(method string) bool
	// Events serves /events, the notifications as Server-Sent Events.
	Events() http.Handler
}

// Row is one way into /mcp.
type Row struct {
	// Name says which requests the row serves, for the reader and logs.
	Name string
	// Serve answers r and reports true, or declines, writing nothing.
	Serve func(w http.ResponseWriter, r *http.Request) bool
}

// Table is /mcp's routing table.
type Table struct {
	// Open rows are tried first, outside the session table: their
	// methods do not belong to an MCP session.
	Open []Row
	// Rows are tried behind the session table.
	Rows []Row
	// Last serves what no row took: mcp-go's streamable HTTP server.
	Last http.Handler
}

// Parts are what the gateway gives the endpoint.
type Parts struct {
	// MCP is the gateway's MCP server; Table.Last should serve it.
	MCP *server.StreamableHTTPServer
	// Sessions is the session table MCP was built with (NewSessionTable
	// and server.WithSessionIdManagerResolver).
	Sessions *SessionTable
	// Stages wrap the routing table, outermost first, after the envelope
	// check (trace context, scope guard, stream holds, ...).
	Stages []func(http.Handler) http.Handler
	Table  Table
	// Mounts are further paths beside /mcp (/events, /metrics, /ui/),
	// served after the Origin check; each does its own auth.
	Mounts map[string]http.Handler
}

// Endpoint is the HTTP side of the gateway.
type Endpoint struct {
	Handler  http.Handler
	mcp      *server.StreamableHTTPServer
	sessions *SessionTable
}

// New builds the endpoint: /mcp through the pipeline, /healthz, /readyz,
// the OAuth metadata, and p.Mounts.
func New(o Options, p Parts) *Endpoint {
	o = o.WithDefaults()
	mux := http.NewServeMux()
	var h http.Handler = p.Table.handler(p.Sessions)
	for i := len(p.Stages) - 1; i >= 0; i-- {
		h = p.Stages[i](h)
	}
	// Authentication before the body is read; with replicas, Forward
	// passes another replica's ids there (it looks for one in the body's
	// first MiB); the envelope check (413, -32600) reads the body once; the
	// stages see it parsed; a request that needs what start-up loads
	// waits for it there.
	h = CheckEnvelope(o.MaxBodyBytes, o.Ready.gate(h))
	if o.Forward != nil {
		h = o.Forward(h)
	}
	mux.Handle("/mcp", o.Auth.Middleware(h))
	mux.Handle(auth.MetadataPath, o.Auth.MetadataHandler())
	mux.Handle(auth.MetadataPath+"/mcp", o.Auth.MetadataHandler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", o.Ready.serveReadyz)
	for path, m := range p.Mounts {
		mux.Handle(path, m)
	}
	var h2 http.Handler = CheckOrigin(o.AllowedOrigins, mux)
	if o.OAuth != nil {
		top := http.NewServeMux()
		top.Handle("/oauth/", o.OAuth)
		top.Handle("/", h2)
		h2 = top
	}
	refused := func(r *http.Request) {
		if o.Auth.Audit != nil {
			o.Auth.Audit(r, auth.Refusal{Status: http.StatusMisdirectedRequest, Reason: HostRefusedReason})
		}
	}
	return &Endpoint{Handler: CheckHost(o.Hosts, refused, h2), mcp: p.MCP, sessions: p.Sessions}
}

// handler serves the table: open rows, then the session table, then the
// rows behind it and Last.
func (t Table) handler(sessions *SessionTable) http.Handler {
	behind := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, row := range t.Rows {
			if row.Serve(w, r) {
				return
			}
		}
		t.Last.ServeHTTP(w, r)
	}))
	if sessions != nil {
		behind = sessions.Middleware(behind)
	}
	if len(t.Open) == 0 {
		return behind
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, row := range t.Open {
			if row.Serve(w, r) {
				return
			}
		}
		behind.ServeHTTP(w, r)
	})
}

// Sessions returns the streamable HTTP server, for shutdown.
func (e *Endpoint) Sessions() *server.StreamableHTTPServer { return e.mcp }

// OpenSessions is the number of open streamable HTTP sessions.
func (e *Endpoint) OpenSessions() int { return e.sessions.Count() }

// Close stops the session sweeper. Call it after Sessions().Shutdown.
func (e *Endpoint) Close() { e.sessions.Close() }
