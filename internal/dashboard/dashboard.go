// Package dashboard is the gateway's web UI at /ui/. In the data flow it
// is one of the read model's faces, beside the hangar_* tools and mcp/*:
// every page is made of server-rendered HTML fragments of readmodel views,
// each filtered by the caller's servers.
//
// Pages and sections. The shell (shell.go) is written once from the
// pages table (pages.go): each page is a route (#name) and a list of parts,
// each part a fragment under /ui/api/ and how it stays current (when
// /events reports a change, or every traffic step). A server's page is
// its sections (serverSections, server.go): each written from the
// server's readmodel.Details. Adding a view is a row in one of those
// tables and a writer; what it shows is added to the read model.
//
// HTML. Every fragment is written by Go code with a markup.Writer, not by
// html/template (internal/markup says why): markup is only ever a constant
// of the source, and every value is escaped as it is written.
//
// Actions. Each candidate and server is offered the actions its state
// allows, as the read model says (Candidate.Approvable/Rejectable,
// Details'): Approve for a pending candidate the catalog would serve, a
// quarantined or rejected one, a provider whose tools or image changed;
// Reject for a pending candidate and an approved discovered one (its
// approval is revoked). Approve is a call of the hangar_approve tool
// through the gateway's MCP server, so that it is authorized and audited
// on the same path as the tool. Reject has no tool (seed 001's are fixed)
// and no mcp/* method (seed 003 decides nothing about discovered servers,
// nor has a quarantine to release: releasing one is hangar_approve): it
// calls the discovery service (Decisions) behind the same hangar:admin
// guard and writes its own entry in the gateway's audit trail. Disconnect
// (upstream.go) drops the caller's own upstream login through the read
// model (Model.Disconnect, as mcp/server/disconnect does) behind
// hangar:call; the credential manager audits it. Try (try.go)
// builds a form from what the read model knows of a tool, prompt or
// resource; the page's script runs it against /mcp with the caller's
// credentials, as any MCP client would.
//
// Credentials. The shell page and its scripts are static and need none: a
// browser navigation cannot carry the Authorization header, and a token
// must never travel in a query string or a cookie. The script asks the
// data routes first with no credential (or the token it holds): a gateway
// that serves the caller without one (loopback without tokens, or
// allow_anonymous) answers, and the page opens on the servers; only a 401
// brings up the token box. A token is kept in sessionStorage and sent as
// a Bearer header. The data routes under /ui/api/ go through the
// endpoint's auth middleware with hangar:read to view and hangar:admin to
// act. Live updates come from /events, read with fetch (EventSource cannot
// send the header); on a server's page it follows that server's log
// (?follow=ID). Assets are embedded: no build step, no CDN, and a CSP
// that allows the gateway's own files only.
package dashboard

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/group"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/readmodel"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/upstreamauth"
)

//go:embed assets
var assets embed.FS

// Views is what the dashboard reads of the read model, and the one change
// it makes there: a caller dropping their own upstream credential
// (Disconnect, as mcp/server/disconnect does).
type Views interface {
	Servers(keep func(id string) bool) []readmodel.Summary
	Details(ctx context.Context, id string, history int) *readmodel.Details
	Candidates(ctx context.Context, keep func(id string) bool) []readmodel.Candidate
	InstalledServers(ctx context.Context, keep func(id string) bool) ([]readmodel.Install, error)
	Refusals(ctx context.Context, keep func(id string) bool, limit int) ([]store.AuditEntry, error)
	GroupList(keep func(id string) bool) []group.Status
	Replicas(ctx context.Context, keep func(id string) bool) readmodel.Replicas
	GatewayTools() []mcpconn.Tool
	Traffic(id string) *readmodel.Traffic
	TrafficOf(keep func(id string) bool) *readmodel.Traffic
	TrafficStepOf() time.Duration
	GatewayRules() *readmodel.Rules
	OwnRules(keep func(id string) bool) []readmodel.ServerRules
	UpstreamAuth(ctx context.Context, id string, caller auth.Identity) *upstreamauth.Status
	Disconnect(ctx context.Context, id string, caller auth.Identity) (bool, error)
}

var _ Views = (*readmodel.Model)(nil)

// Tools runs a JSON-RPC message through the gateway's MCP server, with
// its tool middlewares (authorization, audit): *server.MCPServer.
type Tools interface {
	HandleMessage(ctx context.Context, message json.RawMessage) mcp.JSONRPCMessage
}

// Decisions are the discovery decisions the dashboard makes itself:
// *discovery.Service's.
type Decisions interface {
	Reject(ctx context.Context, name, by string) (discovery.QuarantineEntry, error)
}

var _ Decisions = (*discovery.Service)(nil)

// ErrDiscoveryOff is a Decisions' answer when discovery is off.
var ErrDiscoveryOff = errors.New("discovery is not configured")

// Audit records one entry in the gateway's audit trail
// (Gateway.RecordAudit: the log line, the store, the refusal metric).
type Audit = func(ctx context.Context, e store.AuditEntry)

// Guard wraps a data route with the endpoint's authentication and a
// required scope; a refusal is answered (401, 403) and audited there.
type Guard = func(scope string, next http.Handler) http.Handler

// Dashboard serves /ui/.
type Dashboard struct {
	views Views
	tools Tools
	log   *slog.Logger
	shell []byte // the shell page, written once from the pages table

	// Decisions and Audit, both set before Handler, enable Reject: an
	// action nobody audits is not offered.
	Decisions Decisions
	Audit     Audit
}

// History is how many audit entries and bindings a server page shows,
// and how many refusals the refusals page shows.
const History = 50

// New builds the dashboard over views; tools (nil: no actions) runs the
// actions.
func New(views Views, tools Tools, log *slog.Logger) *Dashboard {
	if log == nil {
		log = slog.Default()
	}
	return &Dashboard{views: views, tools: tools, log: log, shell: shellPage()}
}

// contentSecurity allows the page's own script and style only: no inline
// script or style, no framing, no other origin.
const contentSecurity = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; object-src 'none'; frame-ancestors 'none'"

// Handler serves every path under /ui/; guard protects the data routes.
func (d *Dashboard) Handler(guard Guard) http.Handler {
	static, _ := fs.Sub(assets, "assets")
	files := http.StripPrefix("/ui/", http.FileServerFS(static))
	mux := http.NewServeMux()
	mux.Handle("GET /ui/{$}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(d.shell))
	}))
	for _, f := range []string{"app.js", "try.js", "app.css"} {
		mux.Handle("GET /ui/"+f, files)
	}
	read := func(h http.HandlerFunc) http.Handler { return guard(auth.ScopeRead, noStore(h)) }
	for _, f := range d.fragments() {
		mux.Handle("GET /ui/api/"+f.path, read(f.serve))
	}
	mux.Handle("POST /ui/api/approve/{id}", guard(auth.ScopeAdmin, noStore(http.HandlerFunc(d.approve))))
	mux.Handle("POST /ui/api/reject/{id}", guard(auth.ScopeAdmin, noStore(http.HandlerFunc(d.reject))))
	mux.Handle("POST /ui/api/disconnect/{id}", guard(auth.ScopeCall, noStore(http.HandlerFunc(d.disconnect))))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurity)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		mux.ServeHTTP(w, r)
	})
}

func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// keep is the caller's view: only the servers it may reach.
func keep(ctx context.Context) func(id string) bool {
	id, ok := auth.FromContext(ctx)
	if !ok {
		return func(string) bool { return false }
	}
	return id.MayReach
}
