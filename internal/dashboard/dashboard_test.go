package dashboard_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dashboard"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/group"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/metrics"
	"github.com/mcp-hangar/hangar/internal/policy"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/readmodel"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/upstreamauth"
)

const (
	adminTok  = "hgr_dash-admin-0123456789ab"
	readerTok = "hgr_dash-reader-0123456789a"
	callerTok = "hgr_dash-caller-0123456789a"
	// limitedTok is an admin of the servers named mine*.
	limitedTok = "hgr_dash-limited-012345678"
)

// hostile is a server-controlled string: a tool description, an error.
const hostile = `<script>alert("x")</script><img src=x onerror=alert(1)>`

// fakeViews answers every view with fixed data holding hostile strings.
type fakeViews struct {
	servers []readmodel.Summary
	// creds are callers' upstream credentials; nil: no server has
	// upstream_auth.
	creds *fakeCreds
}

// fakeCreds: math and mine-a have upstream_auth type oauth, disc type
// client_credentials; callers in connected have a login at math and
// mine-a, since and until the times below.
type fakeCreds struct {
	mu        sync.Mutex
	connected map[string]bool
	dropped   []string // server/identity of each Disconnect that dropped one
}

var (
	loggedIn  = time.Date(2026, 11, 28, 11, 40, 37, 0, time.UTC)
	tokenEnds = loggedIn.Add(time.Hour)
)

func (f fakeViews) UpstreamAuth(_ context.Context, id string, caller auth.Identity) *upstreamauth.Status {
	if f.creds == nil {
		return nil
	}
	switch id {
	case "math", "mine-a":
		f.creds.mu.Lock()
		defer f.creds.mu.Unlock()
		st := &upstreamauth.Status{Type: config.UpstreamOAuth, PerIdentity: true}
		if f.creds.connected[caller.Name] {
			st.Connected, st.Since, st.Expires = true, &loggedIn, &tokenEnds
		}
		return st
	case "disc":
		return &upstreamauth.Status{Type: config.UpstreamClientCredentials, Connected: true}
	}
	return nil
}

func (f fakeViews) Disconnect(_ context.Context, id string, caller auth.Identity) (bool, error) {
	if f.creds == nil || (id != "math" && id != "mine-a") {
		return false, readmodel.ErrNoUpstreamAuth
	}
	f.creds.mu.Lock()
	defer f.creds.mu.Unlock()
	had := f.creds.connected[caller.Name]
	delete(f.creds.connected, caller.Name)
	if had {
		f.creds.dropped = append(f.creds.dropped, id+"/"+caller.Name)
	}
	return had, nil
}

func (f fakeViews) Servers(keep func(string) bool) []readmodel.Summary {
	var out []readmodel.Summary
	for _, s := range f.servers {
		if keep == nil || keep(s.ID) {
			out = append(out, s)
		}
	}
	return out
}

func (fakeViews) Details(_ context.Context, id string, _ int) *readmodel.Details {
	switch id {
	case "disc": // approved from discovery: its approval can be revoked
		return &readmodel.Details{ID: id, Source: string(catalog.SourceDiscovery), Provider: true, Spec: &config.Server{ID: id}}
	case "moved": // its image changed: quarantined until approved
		return &readmodel.Details{ID: id, Source: string(catalog.SourceConfig), Provider: true, Spec: &config.Server{ID: id},
			Quarantine: &provider.Quarantine{Reason: provider.ReasonImageChanged}}
	case "math", "mine-a":
	default:
		return &readmodel.Details{ID: id}
	}
	return &readmodel.Details{
		ID: id, Source: "config", Provider: true,
		Snapshot: provider.Snapshot{ID: id, State: provider.Ready, Stderr: "boom " + hostile, LastError: "exit " + hostile},
		Spec:     &config.Server{ID: id, Image: "mcp-hangar/math:dev"},
		Tools: []mcpconn.Tool{
			{Name: "add", Description: "adds " + hostile, InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a"]}`)},
			{Name: "hidden", Description: "not on the front door"},
		},
		Bindings:          []readmodel.Binding{{CallableName: id + "__add", RawToolName: "add", BoundAt: time.Unix(0, 0)}},
		ToolNames:         map[string]string{"add": id + "__add"},
		PromptNames:       map[string]string{"greet": id + "__greet"},
		Resources:         []json.RawMessage{json.RawMessage(`{"uri":"math://pi","name":"pi","mimeType":"text/plain"}`)},
		ResourceTemplates: []json.RawMessage{json.RawMessage(`{"uriTemplate":"math://sq/{n}{?exact,base}","name":"square"}`)},
		Prompts:           []json.RawMessage{json.RawMessage(`{"name":"greet","description":"` + strings.ReplaceAll(hostile, `"`, `\"`) + `","arguments":[{"name":"who","required":true},{"name":"tone"}]}`)},
		Audit:             []store.AuditEntry{{At: time.Unix(0, 0), Identity: "admin", Action: "tools/call", Tool: "add", Allowed: true, Outcome: "ok"}},
		Egress:            map[string]any{"allow": []string{"api.example.com:443"}, "refused": []string{hostile}},
		Rules:             ownRulesOf(id),
	}
}

func (fakeViews) GroupList(keep func(string) bool) []group.Status {
	var out []group.Status
	for _, id := range []string{"pool", "mine-pool"} {
		if keep == nil || keep(id) {
			out = append(out, group.Status{ID: id, State: group.Healthy, Strategy: "round_robin", Circuit: "half_open", HealthyCount: 1, TotalMembers: 2,
				Members: []group.MemberStatus{{ID: id + "-1", State: provider.Ready, InRotation: true}, {ID: id + "-2", State: provider.Dead}}})
		}
	}
	return out
}

func (fakeViews) Replicas(_ context.Context, keep func(string) bool) readmodel.Replicas {
	r := readmodel.Replicas{Instance: "inst", Shared: true}
	for _, name := range []string{"r1", "r2"} {
		x := readmodel.Replica{Name: name, Self: name == "r1", Live: name == "r1", HeartbeatAt: time.Now()}
		for _, srv := range []string{"math", "mine-a"} {
			if keep == nil || keep(srv) {
				x.Containers = append(x.Containers, dockerrt.Managed{ID: strings.Repeat("c", 64), Name: name + "-" + srv, Server: srv, Replica: name, State: "running"})
			}
		}
		r.Members = append(r.Members, x)
	}
	return r
}

func (fakeViews) GatewayTools() []mcpconn.Tool {
	return []mcpconn.Tool{
		{Name: "hangar_stop", Description: "Stop", InputSchema: json.RawMessage(`{"type":"object","properties":{"mcp_server":{"type":"string"}},"required":["mcp_server"]}`)},
		{Name: "hangar_list", Description: "List"},
	}
}

// trafficOf is 10 steps of 5 s: 5 calls each, 1 error each other step.
func trafficOf(ids ...string) *readmodel.Traffic {
	t := &readmodel.Traffic{Step: 5 * time.Second}
	now := time.Now()
	for i := range 10 {
		p := readmodel.TrafficPoint{At: now.Add(time.Duration(i-10) * 5 * time.Second), Calls: int64(5 * len(ids)), P50Ms: 3, P99Ms: 40}
		if i%2 == 0 {
			p.Errors = int64(len(ids))
		}
		t.Points = append(t.Points, p)
	}
	return t
}

func (fakeViews) Traffic(id string) *readmodel.Traffic {
	if id == "math" || id == "mine-a" {
		return trafficOf(id)
	}
	return nil
}

func (f fakeViews) TrafficOf(keep func(string) bool) *readmodel.Traffic {
	var ids []string
	for _, id := range []string{"math", "mine-a"} {
		if keep == nil || keep(id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return trafficOf(ids...)
}

func (fakeViews) TrafficStepOf() time.Duration { return 5 * time.Second }

func (fakeViews) Candidates(_ context.Context, keep func(string) bool) []readmodel.Candidate {
	return []readmodel.Candidate{
		{Name: "cand", Kind: readmodel.KindPending, Source: "docker", Reason: hostile},
		{Name: "q", Kind: readmodel.KindQuarantined, Source: "docker", Reason: "rejected by operator admin"},
		{Name: "taken", Kind: readmodel.KindPending, Status: discovery.StatusRefused, Source: "docker", Reason: "config serves it"},
		{Name: "appr", Kind: readmodel.KindPending, Status: discovery.StatusRefused, Approved: true, Source: "docker", Reason: "config serves it"},
		{Name: "chd", Kind: readmodel.KindChanged, Discovered: true, Reason: "tools_changed"},
		{Name: "chc", Kind: readmodel.KindChanged, Reason: "image_changed"},
	}
}

// ownPolicy is a server's own policy with a hostile condition.
var ownPolicy = []policy.Rule{
	{Name: "no-drops", Effect: policy.Deny, When: `tool.name.startsWith("drop_") && args.q != "` + hostile + `"`, Message: "drops need a ticket " + hostile},
	{Name: "oncall", Effect: policy.Allow, When: `"oncall" in identity.groups`},
}

func (fakeViews) GatewayRules() *readmodel.Rules {
	return &readmodel.Rules{Default: policy.Deny, Rules: []policy.Rule{
		{Name: "read-only", Effect: policy.Allow, When: "tool.annotations.?readOnlyHint.orValue(false)"},
		{Name: "no-secrets", Effect: policy.Deny, When: `resource.uri.startsWith("file:///etc/") || identity.name == "` + hostile + `"`, Message: hostile},
	}}
}

// OwnRules: math's rules are added to the gateway's (config), mine-a's
// narrow them (installed).
func (fakeViews) OwnRules(keep func(string) bool) []readmodel.ServerRules {
	var out []readmodel.ServerRules
	for _, id := range []string{"math", "mine-a"} {
		if keep == nil || keep(id) {
			out = append(out, readmodel.ServerRules{Server: id, Policy: *ownRulesOf(id)})
		}
	}
	return out
}

func ownRulesOf(id string) *readmodel.Rules {
	if id == "mine-a" {
		return &readmodel.Rules{Default: policy.Deny, Rules: ownPolicy, Narrows: true}
	}
	return &readmodel.Rules{Rules: ownPolicy}
}

func (fakeViews) InstalledServers(context.Context, func(string) bool) ([]readmodel.Install, error) {
	return []readmodel.Install{{Name: "inst", Enabled: true}}, nil
}

func (fakeViews) Refusals(context.Context, func(string) bool, int) ([]store.AuditEntry, error) {
	return []store.AuditEntry{
		{Identity: "reader", Action: "request", Tool: "POST /ui/api/approve/x", Reason: "insufficient_scope"},
		{Identity: "admin", Server: "math", Action: "tools/call", Tool: "drop_table", Reason: "policy_denied: Forbidden by policy rule \"math/no-drops\": " + hostile, Rule: "math/no-drops"},
	}, nil
}

// fakeDiscovery approves everything it is asked to.
type fakeDiscovery struct{}

func (fakeDiscovery) Scan(context.Context) discovery.ScanResult { return discovery.ScanResult{} }
func (fakeDiscovery) Pending() []discovery.PendingEntry         { return nil }
func (fakeDiscovery) Quarantined() []discovery.QuarantineEntry  { return nil }
func (fakeDiscovery) Sources() []discovery.SourceStatus         { return nil }
func (fakeDiscovery) Approve(_ context.Context, name string) discovery.ApproveResult {
	return discovery.ApproveResult{Approved: true, Server: name, Status: "registered"}
}

// fakeDecisions rejects "cand"; "quar" is quarantined already; every
// other name is unknown.
type fakeDecisions struct{}

func (fakeDecisions) Reject(_ context.Context, name, by string) (discovery.QuarantineEntry, error) {
	switch name {
	case "cand":
		return discovery.QuarantineEntry{Name: name, Source: "docker", Reason: discovery.ReasonRejected + by}, nil
	case "quar":
		return discovery.QuarantineEntry{}, fmt.Errorf("%w: %s", discovery.ErrAlreadyQuarantined, name)
	}
	return discovery.QuarantineEntry{}, fmt.Errorf("%w: %s", discovery.ErrNotFound, name)
}

type testEndpoint struct {
	url   string
	audit store.Audit
}

// newEndpoint serves the dashboard on the gateway's real HTTP endpoint,
// with tokens, as the app wires it.
func newEndpoint(t *testing.T, views dashboard.Views) *testEndpoint {
	t.Helper()
	return newEndpointWith(t, views, nil)
}

// newEndpointWith is newEndpoint with the endpoint's authentication set by
// authn (nil: the tokens above).
func newEndpointWith(t *testing.T, views dashboard.Views, authn *auth.HTTP) *testEndpoint {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.OpenDir(t.TempDir(), store.Options{KeystoreKey: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cfg := config.Default()
	mgr := provider.NewManager(nil, provider.Options{Log: log})
	g := gateway.New(cfg, mgr, nil, nil, log)
	g.AuditStore = st
	g.Discovery = fakeDiscovery{}
	mcp := g.MCPServer()
	tokens := []config.Token{
		{Name: "admin", SHA256: sha256.Sum256([]byte(adminTok)), Scopes: auth.AllScopes},
		{Name: "reader", SHA256: sha256.Sum256([]byte(readerTok)), Scopes: []string{auth.ScopeRead}},
		{Name: "caller", SHA256: sha256.Sum256([]byte(callerTok)), Scopes: []string{auth.ScopeCall}},
		{Name: "limited", SHA256: sha256.Sum256([]byte(limitedTok)), Scopes: auth.AllScopes, Servers: []string{"mine*"}},
	}
	ah := &auth.HTTP{Auth: auth.NewAuthenticator(t.Context(), config.Auth{Tokens: tokens}, auth.Options{}), Log: log}
	if authn != nil {
		ah = authn
	}
	ui := dashboard.New(views, mcp, log)
	ui.Decisions, ui.Audit = fakeDecisions{}, g.RecordAudit
	ep := g.HTTP(mcp, endpoint.Options{Auth: ah, UI: ui.Handler})
	t.Cleanup(ep.Close)
	srv := httptest.NewServer(ep.Handler)
	t.Cleanup(srv.Close)
	return &testEndpoint{url: srv.URL, audit: st}
}

func (e *testEndpoint) do(t *testing.T, method, path, token string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var someServers = fakeViews{servers: []readmodel.Summary{
	{ID: "math", Source: "config", State: "ready", Health: "ok", Calls: 3, LastError: hostile, ImageDigest: "sha256:0123456789abcdef0123"},
}}

// Who may see and do what on /ui/: a table of routes, tokens and
// outcomes, run against the real endpoint.
func TestAccess(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, someServers)
	cases := []struct {
		name, method, path, token string
		status                    int
		code                      int // the seed-004 JSON-RPC code of a refusal
	}{
		{"shell needs no token", "GET", "/ui/", "", 200, 0},
		{"script needs no token", "GET", "/ui/app.js", "", 200, 0},
		{"data needs a token", "GET", "/ui/api/servers", "", 401, auth.CodeUnauthenticated},
		{"a wrong token is refused", "GET", "/ui/api/servers", "hgr_nope", 401, auth.CodeUnauthenticated},
		{"read token reads", "GET", "/ui/api/servers", readerTok, 200, 0},
		{"read token reads details", "GET", "/ui/api/server/math", readerTok, 200, 0},
		{"read token reads pending", "GET", "/ui/api/pending", readerTok, 200, 0},
		{"read token reads installs", "GET", "/ui/api/installs", readerTok, 200, 0},
		{"read token reads refusals", "GET", "/ui/api/refusals", readerTok, 200, 0},
		{"call token cannot read", "GET", "/ui/api/servers", callerTok, 403, auth.CodeInsufficientScope},
		{"read token cannot act", "POST", "/ui/api/approve/cand", readerTok, 403, auth.CodeInsufficientScope},
		{"no token cannot act", "POST", "/ui/api/approve/cand", "", 401, auth.CodeUnauthenticated},
		{"admin acts", "POST", "/ui/api/approve/cand", adminTok, 200, 0},
		{"approve is POST only", "GET", "/ui/api/approve/cand", adminTok, 405, 0},
		{"read token cannot reject", "POST", "/ui/api/reject/cand", readerTok, 403, auth.CodeInsufficientScope},
		{"call token cannot reject", "POST", "/ui/api/reject/cand", callerTok, 403, auth.CodeInsufficientScope},
		{"no token cannot reject", "POST", "/ui/api/reject/cand", "", 401, auth.CodeUnauthenticated},
		{"admin rejects", "POST", "/ui/api/reject/cand", adminTok, 200, 0},
		{"admin of other servers cannot reject", "POST", "/ui/api/reject/cand", limitedTok, 403, auth.CodeInsufficientScope},
		{"reject is POST only", "GET", "/ui/api/reject/cand", adminTok, 405, 0},
		{"read token cannot disconnect", "POST", "/ui/api/disconnect/math", readerTok, 403, auth.CodeInsufficientScope},
		{"no token cannot disconnect", "POST", "/ui/api/disconnect/math", "", 401, auth.CodeUnauthenticated},
		{"disconnect is POST only", "GET", "/ui/api/disconnect/math", adminTok, 405, 0},
		{"try.js needs no token", "GET", "/ui/try.js", "", 200, 0},
		{"css needs no token", "GET", "/ui/app.css", "", 200, 0},
	}
	for _, frag := range []string{"me", "traffic", "traffic/math", "groups", "replicas", "gateway", "tools?q=add", "try?server=math&tool=add", "server/math?part=body", "policy"} {
		cases = append(cases,
			struct {
				name, method, path, token string
				status                    int
				code                      int
			}{"read token reads " + frag, "GET", "/ui/api/" + frag, readerTok, 200, 0},
			struct {
				name, method, path, token string
				status                    int
				code                      int
			}{"no token cannot read " + frag, "GET", "/ui/api/" + frag, "", 401, auth.CodeUnauthenticated},
			struct {
				name, method, path, token string
				status                    int
				code                      int
			}{"call token cannot read " + frag, "GET", "/ui/api/" + frag, callerTok, 403, auth.CodeInsufficientScope})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := e.do(t, c.method, c.path, c.token)
			if resp.StatusCode != c.status {
				t.Fatalf("%s %s = %d %s, want %d", c.method, c.path, resp.StatusCode, body, c.status)
			}
			if got := resp.Header.Get("Content-Security-Policy"); !strings.Contains(got, "default-src 'self'") ||
				!strings.Contains(got, "frame-ancestors 'none'") || strings.Contains(got, "unsafe-inline") {
				t.Errorf("Content-Security-Policy = %q", got)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
				t.Errorf("headers %v", resp.Header)
			}
			if c.code != 0 {
				var m struct {
					Error struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(body), &m); err != nil || m.Error.Code != c.code {
					t.Errorf("refusal body %s, want code %d", body, c.code)
				}
				if c.code == auth.CodeInsufficientScope && !strings.HasPrefix(m.Error.Message, "Token missing required scope: ") {
					t.Errorf("refusal message %q", m.Error.Message)
				}
			}
		})
	}
}

// A refused action is audited like any refused request, with who and
// why; an approval is audited as the hangar_approve call it is.
func TestActionsAudited(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, someServers)
	if resp, body := e.do(t, "POST", "/ui/api/approve/cand", readerTok); resp.StatusCode != 403 {
		t.Fatalf("reader approve = %d %s", resp.StatusCode, body)
	}
	es, err := e.audit.RecentAudit(t.Context(), "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) == 0 || es[0].Identity != "reader" || es[0].Allowed || es[0].Tool != "POST /ui/api/approve/cand" ||
		!strings.Contains(es[0].Reason, auth.ScopeAdmin) {
		t.Errorf("refusal audit = %+v", es)
	}

	resp, body := e.do(t, "POST", "/ui/api/approve/cand", adminTok)
	if resp.StatusCode != 200 || !strings.Contains(body, "approved: registered") {
		t.Fatalf("admin approve = %d %s", resp.StatusCode, body)
	}
	es, err = e.audit.RecentAudit(t.Context(), "cand", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Identity != "admin" || es[0].Tool != "hangar_approve" || !es[0].Allowed || es[0].Outcome != "ok" {
		t.Errorf("approval audit = %+v", es)
	}
}

// Every Reject is audited in the gateway's trail: a read token's refusal
// by the guard, and the admin's decisions (done, or why not) by the
// dashboard, as kinds with the server and who.
func TestRejectAudited(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, someServers)
	cases := []struct {
		name, token, server string
		status              int
		body                string // in the answer
		want                store.AuditEntry
	}{
		{"read token refused", readerTok, "cand", 403, "Token missing required scope: hangar:admin",
			store.AuditEntry{Identity: "reader", Action: "request", Tool: "POST /ui/api/reject/cand", Outcome: "denied"}},
		{"admin rejects", adminTok, "cand", 200, "cand: rejected: quarantined (rejected by operator admin)",
			store.AuditEntry{Identity: "admin", Server: "cand", Action: dashboard.ActionReject, Allowed: true, Reason: auth.ScopeAdmin, Outcome: "ok"}},
		{"already quarantined", adminTok, "quar", 409, "quar: already quarantined: quar",
			store.AuditEntry{Identity: "admin", Server: "quar", Action: dashboard.ActionReject, Allowed: true, Reason: auth.ScopeAdmin, Outcome: "already_quarantined"}},
		{"unknown", adminTok, "nope", 409, "nope: not found in pending or quarantine: nope",
			store.AuditEntry{Identity: "admin", Server: "nope", Action: dashboard.ActionReject, Allowed: true, Reason: auth.ScopeAdmin, Outcome: "not_found"}},
		{"outside the caller's servers", limitedTok, "other", 403, "Token missing required scope: server:other",
			store.AuditEntry{Identity: "limited", Server: "other", Action: dashboard.ActionReject, Reason: "forbidden: Token missing required scope: server:other", Outcome: "denied"}},
	}
	// One at a time: each reads the newest entry of the one trail.
	for _, c := range cases {
		resp, body := e.do(t, "POST", "/ui/api/reject/"+c.server, c.token)
		if resp.StatusCode != c.status || !strings.Contains(body, c.body) {
			t.Errorf("%s: %d %s, want %d with %q", c.name, resp.StatusCode, body, c.status, c.body)
		}
		es, err := e.audit.RecentAudit(t.Context(), "", 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 1 {
			t.Fatalf("%s: no audit entry", c.name)
		}
		got := es[0]
		if c.want.Action == "request" {
			// The guard's entry: the reason names the missing scope.
			if !strings.Contains(got.Reason, auth.ScopeAdmin) {
				t.Errorf("%s: reason %q", c.name, got.Reason)
			}
			got.Reason = ""
		}
		got.ID, got.At, got.DurationMs = 0, time.Time{}, 0
		if got != c.want {
			t.Errorf("%s: audit\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// Each row and server page offers the actions its state allows: Approve
// where an approval would act (pending, quarantined or rejected, changed),
// Reject where a rejection would (pending, approved from discovery).
func TestActionButtons(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, someServers)
	_, pending := e.do(t, "GET", "/ui/api/pending", readerTok)
	page := func(id string) string {
		_, body := e.do(t, "GET", "/ui/api/server/"+id, readerTok)
		return body
	}
	for _, tt := range []struct {
		name, id, body  string
		approve, reject bool
	}{
		{"pending candidate", "cand", pending, true, true},
		{"quarantined (rejected) candidate: approve it", "q", pending, true, false},
		{"candidate refused its name: approval cannot succeed", "taken", pending, false, true},
		{"approved candidate refused its name since: reject it", "appr", pending, false, true},
		{"changed discovered server", "chd", pending, true, true},
		{"changed config server", "chc", pending, true, false},
		{"served discovered server's page: reject it", "disc", page("disc"), false, true},
		{"quarantined server's page: approve it", "moved", page("moved"), true, false},
		{"config server's page: nothing to decide", "math", page("math"), false, false},
	} {
		if got := strings.Contains(tt.body, fmt.Sprintf(`data-approve=%q`, tt.id)); got != tt.approve {
			t.Errorf("%s: Approve offered = %v, want %v", tt.name, got, tt.approve)
		}
		if got := strings.Contains(tt.body, fmt.Sprintf(`data-reject=%q`, tt.id)); got != tt.reject {
			t.Errorf("%s: Reject offered = %v, want %v", tt.name, got, tt.reject)
		}
	}
}

// Strings the servers control (descriptions, errors, stderr) and those
// of the configuration (rules, messages) are shown as text, never as
// markup. (internal/markup's tests hold the writer to it: a value is
// always escaped, markup is only a constant.)
func TestFragmentsEscape(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, someServers)
	for _, path := range []string{"/ui/api/servers", "/ui/api/server/math?part=head", "/ui/api/server/math?part=body", "/ui/api/pending",
		"/ui/api/try?server=math&tool=add", "/ui/api/try?server=math&prompt=greet", "/ui/api/policy", "/ui/api/refusals"} {
		resp, body := e.do(t, "GET", path, readerTok)
		if resp.StatusCode != 200 {
			t.Fatalf("%s = %d", path, resp.StatusCode)
		}
		if strings.Contains(body, "<script") || strings.Contains(body, "<img") {
			t.Errorf("%s renders server-controlled markup:\n%s", path, body)
		}
		if !strings.Contains(body, "&lt;script&gt;") {
			t.Errorf("%s does not show the hostile string as text:\n%s", path, body)
		}
	}
	_, body := e.do(t, "GET", "/ui/api/server/math?part=head", readerTok)
	_, more := e.do(t, "GET", "/ui/api/server/math?part=body", readerTok)
	body += more
	for _, want := range []string{"math__add", "mcp-hangar/math:dev", "api.example.com:443", "math__greet", "math://pi"} {
		if !strings.Contains(body, want) {
			t.Errorf("details fragment lacks %q:\n%s", want, body)
		}
	}
	if resp, body := e.do(t, "GET", "/ui/api/server/nope", readerTok); resp.StatusCode != 200 || !strings.Contains(body, "No server named") {
		t.Errorf("unknown server = %d %s", resp.StatusCode, body)
	}
}

// The shell page has no inline script or style: the CSP would block it.
func TestShellHasNoInlineCode(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, fakeViews{})
	_, body := e.do(t, "GET", "/ui/", "")
	if strings.Contains(body, "<script>") || strings.Contains(body, "<style") || strings.Contains(body, " style=") ||
		strings.Contains(body, "onclick") || !strings.Contains(body, `<script src="/ui/app.js" defer></script>`) {
		t.Errorf("shell page:\n%s", body)
	}
}

// BenchmarkServerList renders the server list fragment of 100 servers.
func BenchmarkServerList(b *testing.B) {
	var views fakeViews
	for i := range 100 {
		views.servers = append(views.servers, readmodel.Summary{
			ID: fmt.Sprintf("server-%03d", i), Source: "config", State: "ready", Health: "ok",
			Calls: int64(i * 10), Errors: int64(i), CallsPerSecond: 1.5, MeanMs: 12.5,
			LastError: "connection refused " + hostile, ImageDigest: "sha256:0123456789abcdef0123456789abcdef",
		})
	}
	benchServerList(b, views)
}

// BenchmarkServerListFromModel is the same fragment built from the read
// model over a real catalog, provider manager and metrics registry of
// 100 servers: the whole server-side cost of the list.
func BenchmarkServerListFromModel(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr := provider.NewManager(nil, provider.Options{Log: log})
	g := gateway.New(config.Default(), mgr, nil, nil, log)
	var specs []*config.Server
	for i := range 100 {
		specs = append(specs, &config.Server{ID: fmt.Sprintf("server-%03d", i), Mode: config.ModeRemote, Endpoint: fmt.Sprintf("http://127.0.0.1:%d/mcp", 10000+i)})
	}
	g.Catalog.Publish(context.Background(), catalog.SourceConfig, specs, "bench")
	mt := metrics.New()
	for i := range 100 {
		for range 5 {
			mt.CallDone(fmt.Sprintf("server-%03d", i), "add", "success", 10*time.Millisecond)
		}
	}
	views := &readmodel.Model{Providers: mgr, Groups: g.Groups, Catalog: g.Catalog, Metrics: mt, Log: log}
	benchServerList(b, views)
}

// benchServerList times the dashboard's list of the 100 servers views
// holds, and fails it over 200 ms (the bound).
func benchServerList(b *testing.B, views dashboard.Views) {
	b.Helper()
	h := dashboard.New(views, nil, nil).Handler(func(_ string, next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(auth.WithIdentity(r.Context(), auth.Local(auth.KindLocal))))
		})
	})
	req := httptest.NewRequest("GET", "/ui/api/servers", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 || strings.Count(w.Body.String(), "<tr data-id=") != 100 {
			b.Fatalf("status %d:\n%.2000s", w.Code, w.Body.String())
		}
	}
	if per := b.Elapsed() / time.Duration(b.N); per > 200*time.Millisecond {
		b.Fatalf("the list of 100 servers took %v to build and render, want under 200ms", per)
	}
}
