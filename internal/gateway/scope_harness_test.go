package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/metrics"
	"github.com/mcp-hangar/hangar/internal/pin"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/store"
)

// The scope boundary (issues 19 and 20): a gateway with a front door over
// real MCP providers (a, b, q, and the group secretgrp of member m1),
// served by the real HTTP handler with tokens. q is quarantined (its
// tools changed, restored from the store). The "scoped" token has every
// scope but reaches only a, q and a-*; b, secretgrp and m1 are someone
// else's.

const (
	scopeAdminTok   = "hgr_scope-admin-0123456789ab"
	scopeLimitedTok = "hgr_scope-limited-012345678"
	scopeReaderTok  = "hgr_scope-reader-012345678"
	scopeCallerTok  = "hgr_scope-caller-012345678"
	scopeBurstTok   = "hgr_scope-burst-0123456789"
)

// scopeServers are the patterns of the scoped token.
var scopeServers = []string{"a", "q", "a-*"}

type scopeGateway struct {
	g     *gateway.Gateway
	srv   *mcpserver.MCPServer
	ah    *auth.HTTP
	cfg   *config.Config
	audit *fakeAudit
	l     *pipeLauncher
	url   string // the endpoint's base URL
}

// scopeTokens are the harness's tokens; extra are added after them.
func scopeTokens(extra ...config.Token) []config.Token {
	burst := tok("burst", scopeBurstTok, auth.AllScopes)
	burst.RateLimit = &config.RateLimit{RPS: 0.01, Burst: 1}
	return append([]config.Token{
		tok("admin", scopeAdminTok, auth.AllScopes),
		tok("scoped", scopeLimitedTok, auth.AllScopes, scopeServers...),
		tok("reader", scopeReaderTok, []string{auth.ScopeRead}),
		tok("caller", scopeCallerTok, []string{auth.ScopeCall}),
		burst,
	}, extra...)
}

// fakeDiscovery is a discovery service with fixed answers: one of each
// kind for a server the scoped token reaches and one it does not.
type fakeDiscovery struct{}

func (fakeDiscovery) Scan(context.Context) discovery.ScanResult { return discovery.ScanResult{} }
func (fakeDiscovery) Pending() []discovery.PendingEntry {
	return []discovery.PendingEntry{
		{Name: "a-pend", Source: "docker", Mode: "http", Status: discovery.StatusPending},
		{Name: "b-pend", Source: "docker", Mode: "http", Status: discovery.StatusPending},
	}
}
func (fakeDiscovery) Quarantined() []discovery.QuarantineEntry {
	return []discovery.QuarantineEntry{{Name: "a-bad", Source: "docker", Reason: "health_check_failed"}, {Name: "b-bad", Source: "docker", Reason: "health_check_failed"}}
}
func (fakeDiscovery) Approve(context.Context, string) discovery.ApproveResult {
	return discovery.ApproveResult{}
}
func (fakeDiscovery) Sources() []discovery.SourceStatus {
	return []discovery.SourceStatus{{SourceType: "docker", Mode: "additive", IsHealthy: true, IsEnabled: true,
		ServersCount: 3, Servers: []string{"a-pend", "b-pend", "b-other"}, ErrorMessage: "container b-other: bad label mcp.hangar.port"}}
}

func newScopeGateway(t *testing.T, tune func(*config.Config, *gateway.Gateway)) *scopeGateway {
	t.Helper()
	l := newPipeLauncher()
	cfg := config.Default()
	cfg.FrontDoor.Prefetch = false
	for _, id := range []string{"a", "b", "q"} {
		cfg.Servers[id] = server(id)
	}
	cfg.Servers["secretgrp"] = poolSpec("secretgrp", "m1")
	cfg.Auth.Tokens = scopeTokens()
	cfg.Auth.RateLimit = config.RateLimit{RPS: 1000, Burst: 1000}
	db := newFakeDecisions()
	_ = db.PutDecision(t.Context(), store.Decision{Key: "q", Kind: store.DecisionQuarantined,
		Fingerprint: store.ProviderQuarantineFingerprint("example/q"), Reason: provider.ReasonToolSchemaChanged,
		Detail: "echo_raw: description changed", At: time.Now().UTC()})
	qs, err := pin.LoadQuarantines(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	mgr := provider.NewManager(l, provider.Options{Log: quiet, Events: m, Quarantines: qs})
	g := gateway.New(cfg, mgr, nil, m, quiet)
	g.Discovery = fakeDiscovery{}
	audit := &fakeAudit{}
	g.AuditStore = audit
	if tune != nil {
		tune(cfg, g)
	}
	for _, ch := range g.Catalog.PublishConfig(t.Context(), cfg, "test", false) {
		if ch.Action == catalog.Refused {
			t.Fatalf("%s not served: %s", ch.ID, ch.Reason)
		}
	}
	srv := g.MCPServer()
	ah := &auth.HTTP{
		Auth:      auth.NewAuthenticator(t.Context(), cfg.Auth, auth.Options{}),
		Limiter:   g.RateLimiter,
		RateLimit: cfg.Auth.RateLimit,
		Log:       quiet,
	}
	ep := g.HTTP(srv, endpoint.Options{Auth: ah, Metrics: promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})})
	hs := httptest.NewServer(ep.Handler)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ep.Sessions().Shutdown(ctx)
		ep.Close()
		_ = mgr.StopAll(ctx, "test")
	})
	s := &scopeGateway{g: g, srv: srv, ah: ah, cfg: cfg, audit: audit, l: l, url: hs.URL}
	// Every server runs once, so the front door has read its resources,
	// templates and prompts.
	admin := s.session(t, scopeAdminTok)
	for _, id := range []string{"a", "b", "q", "secretgrp"} {
		if r := s.post(t, admin, toolCall(1, "hangar_start", map[string]any{"mcp_server": id})); r.status != http.StatusOK || r.msg.Error != nil {
			t.Fatalf("hangar_start %s: %d %s", id, r.status, r.body)
		}
	}
	g.FrontDoor.Refresh(t.Context())
	if _, _, _, ok := g.FrontDoor.Extras("q"); !ok {
		t.Fatal("the front door has not read q's resources: the quarantine tests would prove nothing")
	}
	return s
}

// post sends one JSON-RPC message to /mcp with headers over real HTTP.
func (s *scopeGateway) post(t *testing.T, headers map[string]string, body string) rpcReply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	r := rpcReply{status: resp.StatusCode, header: resp.Header, body: buf.String()}
	b := buf.Bytes()
	if i := bytes.Index(b, []byte("data: ")); i >= 0 {
		b = b[i+6:]
	}
	_ = json.Unmarshal(b, &r.msg)
	return r
}

// session opens a 2025-11-25 session for tok and returns the headers of
// requests on it.
func (s *scopeGateway) session(t *testing.T, tok string) map[string]string {
	t.Helper()
	h := bearer(tok)
	r := s.post(t, h, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	h["Mcp-Session-Id"] = sid
	return h
}

// result decodes a successful answer's result into v.
func (r rpcReply) result(t *testing.T, v any) {
	t.Helper()
	if r.status != http.StatusOK || r.msg.Error != nil || json.Unmarshal(r.msg.Result, v) != nil {
		t.Fatalf("answer: %d %s", r.status, r.body)
	}
}

// structuredOf is a tools/call answer's structured content.
func structuredOf(t *testing.T, r rpcReply) map[string]any {
	t.Helper()
	var res struct {
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
	}
	r.result(t, &res)
	if res.IsError {
		t.Fatalf("tool error: %s", r.body)
	}
	return res.StructuredContent
}

// rpcMsg is a JSON-RPC request of method with params.
func rpcMsg(id int, method, params string) string {
	return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"` + method + `","params":` + params + `}`
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// entriesWhere are the audit entries that match.
func (s *scopeGateway) entriesWhere(match func(store.AuditEntry) bool) []store.AuditEntry {
	var out []store.AuditEntry
	for _, e := range s.audit.all() {
		if match(e) {
			out = append(out, e)
		}
	}
	return out
}

// httptestServer serves h on a local test server and returns its URL.
func httptestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs.URL
}
