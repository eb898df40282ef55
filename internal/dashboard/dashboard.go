// Package dashboard is the gateway's web UI at /ui/. In the data flow it
// is one of the read model's faces, beside the hangar_* tools and mcp/*:
// every page is a server-rendered HTML fragment of a readmodel view.
// Each candidate and server is offered the actions its state allows, as
// the read model says (Candidate.Approvable/Rejectable, Details'): Approve
// for a pending candidate the catalog would serve, a quarantined or
// rejected one, a provider whose tools or image changed; Reject for a
// pending candidate and an approved discovered one (its approval is
// revoked). Approve is a call of the hangar_approve tool through the
// gateway's MCP server, so that it is authorized and audited on the same
// path as the tool. Reject has no tool (seed 001's are fixed) and no mcp/*
// method (seed 003 decides nothing about discovered servers, nor has a
// quarantine to release: releasing one is hangar_approve): it calls the
// discovery service (Decisions) behind the same hangar:admin guard and
// writes its own entry in the gateway's audit trail.
//
// The shell page and its script are static and need no credential: a
// browser navigation cannot carry the Authorization header, and a token
// must never travel in a query string or a cookie. The script keeps the
// token in sessionStorage and fetches the fragments under /ui/api/ with
// it as a Bearer header; those routes go through the endpoint's auth
// middleware with hangar:read to view and hangar:admin to act. Live
// updates come from /events, read with fetch (EventSource cannot send
// the header). Assets are embedded: no build step.
package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/readmodel"
	"github.com/mcp-hangar/hangar/internal/store"
)

//go:embed assets
var assets embed.FS

// Views is what the dashboard reads of the read model.
type Views interface {
	Servers(keep func(id string) bool) []readmodel.Summary
	Details(ctx context.Context, id string, history int) *readmodel.Details
	Candidates(keep func(id string) bool) []readmodel.Candidate
	InstalledServers(ctx context.Context, keep func(id string) bool) ([]readmodel.Install, error)
	Refusals(ctx context.Context, keep func(id string) bool, limit int) ([]store.AuditEntry, error)
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
	pages *template.Template

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
	return &Dashboard{views: views, tools: tools, log: log, pages: template.Must(template.New("").Funcs(funcs).ParseFS(assets, "assets/*.tmpl"))}
}

// contentSecurity allows the page's own script and style only: no inline
// script or style, no framing, no other origin.
const contentSecurity = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; object-src 'none'; frame-ancestors 'none'"

// Handler serves every path under /ui/; guard protects the data routes.
func (d *Dashboard) Handler(guard Guard) http.Handler {
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	mux := http.NewServeMux()
	mux.Handle("GET /ui/{$}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	}))
	mux.Handle("GET /ui/app.js", http.StripPrefix("/ui/", files))
	mux.Handle("GET /ui/app.css", http.StripPrefix("/ui/", files))
	read := func(h http.HandlerFunc) http.Handler { return guard(auth.ScopeRead, noStore(h)) }
	mux.Handle("GET /ui/api/servers", read(d.servers))
	mux.Handle("GET /ui/api/server/{id}", read(d.server))
	mux.Handle("GET /ui/api/pending", read(d.pending))
	mux.Handle("GET /ui/api/installs", read(d.installs))
	mux.Handle("GET /ui/api/refusals", read(d.refusals))
	mux.Handle("POST /ui/api/approve/{id}", guard(auth.ScopeAdmin, noStore(http.HandlerFunc(d.approve))))
	mux.Handle("POST /ui/api/reject/{id}", guard(auth.ScopeAdmin, noStore(http.HandlerFunc(d.reject))))
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

func (d *Dashboard) render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := d.pages.ExecuteTemplate(w, name, data); err != nil {
		d.log.Warn("dashboard fragment not rendered", "fragment", name, "error", err)
	}
}
