package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/store"
)

// TestScopeTargets: every hangar_* tool that takes a target is refused
// when any target it names is outside the token's servers (403, seed
// 004's -32002 naming the target), answered alike for a server that exists
// and one that does not, and audited allowed=false naming what was
// refused: the group, not the server named beside it.
func TestScopeTargets(t *testing.T) {
	t.Parallel()
	s := newScopeGateway(t, nil)
	scoped := s.session(t, scopeLimitedTok)
	tests := []struct {
		tool    string
		args    map[string]any
		refused string // the target named in the refusal; "" for allowed
	}{
		{"hangar_start", map[string]any{"mcp_server": "b"}, "b"},
		{"hangar_start", map[string]any{"mcp_server": "secretgrp"}, "secretgrp"},
		{"hangar_start", map[string]any{"mcp_server": "m1"}, "m1"},
		{"hangar_stop", map[string]any{"mcp_server": "b"}, "b"},
		{"hangar_tools", map[string]any{"mcp_server": "b"}, "b"},
		{"hangar_details", map[string]any{"mcp_server": "b"}, "b"},
		{"hangar_details", map[string]any{"mcp_server": "nosuch"}, "nosuch"},
		{"hangar_warm", map[string]any{"mcp_servers": "a, b"}, "b"},
		{"hangar_unload", map[string]any{"mcp_server": "b"}, "b"},
		{"hangar_approve", map[string]any{"mcp_server": "b-pend"}, "b-pend"},
		{"hangar_group_rebalance", map[string]any{"group": "secretgrp"}, "secretgrp"},
		{"hangar_group_rebalance", map[string]any{"group": "secretgrp", "mcp_server": "a"}, "secretgrp"},
		{"hangar_details", map[string]any{"mcp_server": "a", "group": "secretgrp"}, "secretgrp"},
		{"hangar_details", map[string]any{"mcp_server": "a"}, ""},
		{"hangar_warm", map[string]any{"mcp_servers": "a"}, ""},
		{"hangar_approve", map[string]any{"mcp_server": "a-pend"}, ""},
	}
	for i, tt := range tests {
		r := s.post(t, scoped, toolCall(100+i, tt.tool, tt.args))
		name := tt.tool + " " + string(mustMarshal(tt.args))
		if tt.refused == "" {
			if r.status != http.StatusOK || r.msg.Error != nil {
				t.Errorf("%s: %d %s, want it served", name, r.status, r.body)
			}
			continue
		}
		want := "Token missing required scope: server:" + tt.refused
		if r.status != http.StatusForbidden || r.msg.Error == nil || r.msg.Error.Code != auth.CodeInsufficientScope || r.msg.Error.Message != want {
			t.Errorf("%s: %d %s, want 403 %q", name, r.status, r.body, want)
			continue
		}
		got := s.entriesWhere(func(e store.AuditEntry) bool { return e.Tool == tt.tool && e.Reason == "forbidden: "+want })
		if len(got) == 0 {
			t.Errorf("%s: no audit entry of the refusal in %+v", name, s.audit.all())
			continue
		}
		if e := got[len(got)-1]; e.Allowed || e.Server != tt.refused || e.Identity != "scoped" || e.Outcome != audit.OutcomeDenied || e.Action != audit.ActionToolCall {
			t.Errorf("%s: audit entry %+v, want allowed=false on %s by scoped", name, e, tt.refused)
		}
	}
	// The refused rebalance never named the server beside the group.
	for _, e := range s.entriesWhere(func(e store.AuditEntry) bool { return e.Tool == "hangar_group_rebalance" }) {
		if e.Server != "secretgrp" {
			t.Errorf("a rebalance audited on %q: %+v", e.Server, e)
		}
	}
	// The same answer for a server that exists and one that does not.
	exists := s.post(t, scoped, toolCall(1, "hangar_details", map[string]any{"mcp_server": "b"}))
	missing := s.post(t, scoped, toolCall(1, "hangar_details", map[string]any{"mcp_server": "zz"}))
	if strings.ReplaceAll(exists.body, "server:b", "server:X") != strings.ReplaceAll(missing.body, "server:zz", "server:X") {
		t.Errorf("refusals differ for a server that exists and one that does not:\n%s\n%s", exists.body, missing.body)
	}
}

// TestScopeTargetsInProcess: the second line (the tool middleware, for
// callers that do not come through the HTTP guard) checks every target
// too, and its refusal is audited allowed=false on the group.
func TestScopeTargetsInProcess(t *testing.T) {
	t.Parallel()
	s := newScopeGateway(t, nil)
	ctx := auth.WithIdentity(t.Context(), auth.NewIdentity("inproc", auth.KindToken, auth.AllScopes, scopeServers))
	raw, err := json.Marshal(s.srv.HandleMessage(ctx, []byte(toolCall(1, "hangar_group_rebalance", map[string]any{"group": "secretgrp", "mcp_server": "a"}))))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"isError":true`) || !strings.Contains(string(raw), "Token missing required scope: server:secretgrp") {
		t.Fatalf("in-process rebalance of another's group: %s", raw)
	}
	got := s.entriesWhere(func(e store.AuditEntry) bool { return e.Identity == "inproc" })
	if len(got) != 1 || got[0].Allowed || got[0].Server != "secretgrp" || got[0].Reason != "forbidden: Token missing required scope: server:secretgrp" {
		t.Errorf("audit = %+v, want one refusal on secretgrp", got)
	}
}

// TestScopeHangarCallRefusal: a call inside hangar_call to a server outside
// the token's servers fails with error_type forbidden and seed 004's
// message, is not retried, and is audited allowed=false.
func TestScopeHangarCallRefusal(t *testing.T) {
	t.Parallel()
	s := newScopeGateway(t, nil)
	scoped := s.session(t, scopeLimitedTok)
	res := structuredOf(t, s.post(t, scoped, toolCall(1, "hangar_call", map[string]any{"max_attempts": 3, "calls": []any{
		map[string]any{"mcp_server": "a", "tool": "echo_raw", "arguments": map[string]any{"n": 1}},
		map[string]any{"mcp_server": "b", "tool": "echo_raw", "arguments": map[string]any{"n": 2}},
	}})))
	results := res["results"].([]any)
	if r := results[0].(map[string]any); r["success"] != true {
		t.Errorf("call on a: %v", r)
	}
	r := results[1].(map[string]any)
	if r["success"] != false || r["error_type"] != "forbidden" || r["error"] != "Token missing required scope: server:b" {
		t.Errorf("call on b: %v, want error_type forbidden with seed 004's message", r)
	}
	if m, _ := r["retry_metadata"].(map[string]any); m["attempts"] != 1.0 {
		t.Errorf("a refusal was retried: %v", r["retry_metadata"])
	}
	b := s.entriesWhere(func(e store.AuditEntry) bool { return e.Action == audit.ActionHangarCall && e.Server == "b" })
	if len(b) != 1 || b[0].Allowed || b[0].Outcome != audit.OutcomeDenied || b[0].Reason != "forbidden: Token missing required scope: server:b" || b[0].Identity != "scoped" {
		t.Errorf("audit of the call on b = %+v", b)
	}
	a := s.entriesWhere(func(e store.AuditEntry) bool { return e.Action == audit.ActionHangarCall && e.Server == "a" })
	if len(a) != 1 || !a[0].Allowed || a[0].Outcome != audit.OutcomeOK {
		t.Errorf("audit of the call on a = %+v", a)
	}
}

// TestScopeRefusalsAudited: every refusal is an audit entry with
// allowed=false and a reason: the guard's 401, 403 and 429, a target
// outside the servers, a disabled server, a tool policy. No entry holds a
// credential.
func TestScopeRefusalsAudited(t *testing.T) {
	t.Parallel()
	const expiredTok = "hgr_scope-expired-01234567"
	var bOff atomic.Bool // b is disabled once it has run (and is listed)
	s := newScopeGateway(t, func(c *config.Config, g *gateway.Gateway) {
		expired := tok("gone", expiredTok, auth.AllScopes)
		expired.ExpiresAt = expired.ExpiresAt.AddDate(2000, 0, 0) // year 2000: long past
		c.Auth.Tokens = append(c.Auth.Tokens, expired)
		c.Servers["a"].Tools.DenyList = []string{"kitchen_sink"}
		g.Refuse = disablesB(&bOff)
	})
	bOff.Store(true)
	admin := s.session(t, scopeAdminTok)
	s.post(t, bearer(scopeBurstTok), listTools) // takes the one token of its bucket
	tests := []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		match   func(store.AuditEntry) bool
	}{
		{"no credential", nil, listTools, 401, func(e store.AuditEntry) bool {
			return e.Action == audit.ActionRequest && strings.HasPrefix(e.Reason, "unauthenticated: no credential")
		}},
		{"unknown token", bearer("hgr_not-a-token-0123456789"), listTools, 401, func(e store.AuditEntry) bool {
			return e.Action == audit.ActionRequest && e.Reason == "unauthenticated: unknown token"
		}},
		{"expired token", bearer(expiredTok), listTools, 401, func(e store.AuditEntry) bool {
			return e.Action == audit.ActionRequest && e.Reason == "unauthenticated: token expired: gone"
		}},
		{"rate limited", bearer(scopeBurstTok), listTools, 429, func(e store.AuditEntry) bool {
			return e.Action == audit.ActionRequest && e.Reason == "rate_limited" && e.Identity == "burst"
		}},
		{"missing scope", bearer(scopeReaderTok), toolCall(1, "hangar_call", map[string]any{"calls": []any{}}), 403, func(e store.AuditEntry) bool {
			return e.Tool == "hangar_call" && e.Identity == "reader" && e.Reason == "forbidden: Token missing required scope: hangar:call"
		}},
		{"method scope", bearer(scopeReaderTok), rpcMsg(2, "mcp/install", `{}`), 403, func(e store.AuditEntry) bool {
			return e.Action == "mcp/install" && e.Identity == "reader" && e.Reason == "forbidden: Token missing required scope: hangar:admin"
		}},
		{"front-door tool outside the servers", bearer(scopeLimitedTok), toolCall(3, "b__echo_raw", map[string]any{}), 403, func(e store.AuditEntry) bool {
			return e.Tool == "b__echo_raw" && e.Server == "b" && e.Identity == "scoped" && e.Reason == "forbidden: Token missing required scope: server:b"
		}},
		{"disabled server", admin, toolCall(4, "hangar_call", map[string]any{"calls": []any{map[string]any{"mcp_server": "b", "tool": "echo_raw"}}}), 200, func(e store.AuditEntry) bool {
			return e.Action == audit.ActionHangarCall && e.Server == "b" && strings.HasPrefix(e.Reason, "mcp_server_disabled")
		}},
		{"disabled server by name", admin, toolCall(5, "b__echo_raw", map[string]any{}), 200, func(e store.AuditEntry) bool {
			return e.Action == audit.ActionFrontDoorCall && e.Server == "b" && strings.HasPrefix(e.Reason, "mcp_server_disabled")
		}},
		{"tool policy", admin, toolCall(6, "hangar_call", map[string]any{"calls": []any{map[string]any{"mcp_server": "a", "tool": "kitchen_sink"}}}), 200, func(e store.AuditEntry) bool {
			return e.Action == audit.ActionHangarCall && e.Server == "a" && e.Tool == "kitchen_sink" && strings.HasPrefix(e.Reason, provider.KindToolNotAllowed)
		}},
	}
	for _, tt := range tests {
		if r := s.post(t, tt.headers, tt.body); r.status != tt.status {
			t.Errorf("%s: status %d, want %d: %s", tt.name, r.status, tt.status, r.body)
		}
		got := s.entriesWhere(tt.match)
		if len(got) == 0 {
			t.Errorf("%s: no audit entry in %+v", tt.name, s.audit.all())
			continue
		}
		if e := got[len(got)-1]; e.Allowed || e.Outcome != audit.OutcomeDenied || e.Reason == "" {
			t.Errorf("%s: audit entry %+v, want allowed=false, outcome denied and a reason", tt.name, e)
		}
	}
	b, _ := json.Marshal(s.audit.all())
	for _, secret := range []string{expiredTok, scopeBurstTok, scopeReaderTok, scopeLimitedTok, scopeAdminTok, scopeCallerTok, "hgr_not-a-token", auth.HashHex(scopeReaderTok)} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the audit trail holds a credential: %s", secret)
		}
	}
}

// uriSet lists the URIs (or templates, or prompt names) of a list answer.
func namesOf(t *testing.T, r rpcReply, field, key string) []string {
	t.Helper()
	var res map[string][]map[string]any
	r.result(t, &res)
	var out []string
	for _, item := range res[field] {
		out = append(out, item[key].(string))
	}
	sort.Strings(out)
	return out
}

// TestScopeListsFiltered: a servers-limited token reads nothing of other
// servers in any list or status: resources, templates, prompts, metrics
// (both formats), health, pending and quarantined discoveries, sources.
func TestScopeListsFiltered(t *testing.T) {
	t.Parallel()
	s := newScopeGateway(t, nil)
	scoped := s.session(t, scopeLimitedTok)
	admin := s.session(t, scopeAdminTok)
	// Traffic on a and b, so both have series to hide.
	for _, h := range []map[string]string{admin} {
		structuredOf(t, s.post(t, h, toolCall(1, "hangar_call", map[string]any{"calls": []any{
			map[string]any{"mcp_server": "a", "tool": "echo_raw"}, map[string]any{"mcp_server": "b", "tool": "echo_raw"}}})))
	}
	lists := []struct {
		method, field, key string
		scoped, admin      []string
	}{
		{"resources/list", "resources", "uri", []string{"file:///a", "file:///shared"}, []string{"file:///a", "file:///b", "file:///m1", "file:///shared"}},
		{"resources/templates/list", "resourceTemplates", "uriTemplate", []string{"item-a://{n}"}, []string{"item-a://{n}", "item-b://{n}", "item-m1://{n}"}},
		{"prompts/list", "prompts", "name", []string{"a__greet"}, []string{"a__greet", "b__greet", "secretgrp__greet"}},
	}
	for _, l := range lists {
		if got := namesOf(t, s.post(t, scoped, rpcMsg(1, l.method, `{}`)), l.field, l.key); !slices.Equal(got, l.scoped) {
			t.Errorf("%s for the scoped token = %v, want %v", l.method, got, l.scoped)
		}
		if got := namesOf(t, s.post(t, admin, rpcMsg(1, l.method, `{}`)), l.field, l.key); !slices.Equal(got, l.admin) {
			t.Errorf("%s for admin = %v, want %v (the filter must have something to hide)", l.method, got, l.admin)
		}
	}

	foreign := []string{`"b"`, "server=\"b\"", `mcp_server="b"`, "b.echo_raw", "secretgrp", "m1", "b-pend", "b-bad", "b-other"}
	for _, tc := range []struct {
		tool string
		args map[string]any
		has  []string // what the scoped token must still see
	}{
		{"hangar_metrics", nil, []string{`"a"`, "a.echo_raw"}},
		{"hangar_metrics", map[string]any{"format": "prometheus"}, []string{`mcp_server=\"a\"`}},
		{"hangar_health", nil, []string{`"total":2`}},
		{"hangar_discovered", nil, []string{"a-pend"}},
		{"hangar_quarantine", nil, []string{"a-bad", `"name":"q"`}},
		{"hangar_sources", nil, []string{`"mcp_servers_count":1`, `"error_message":null`}},
		{"hangar_list", nil, []string{`"a"`}},
		{"hangar_status", nil, []string{`"a"`}},
		{"hangar_group_list", nil, []string{`"groups":[]`}},
	} {
		r := s.post(t, scoped, toolCall(1, tc.tool, tc.args))
		structuredOf(t, r)
		for _, f := range foreign {
			if strings.Contains(r.body, f) {
				t.Errorf("%s %v shows %s to the scoped token: %.400s", tc.tool, tc.args, f, r.body)
			}
		}
		for _, h := range tc.has {
			if !strings.Contains(r.body, h) {
				t.Errorf("%s %v lacks %s: %.400s", tc.tool, tc.args, h, r.body)
			}
		}
		// The admin sees the others: the filter had something to hide.
		if ar := s.post(t, admin, toolCall(1, tc.tool, tc.args)); tc.tool != "hangar_list" && tc.tool != "hangar_status" &&
			!strings.Contains(ar.body, "b") {
			t.Errorf("%s for admin shows nothing of b: %.300s", tc.tool, ar.body)
		}
	}
}

// TestScopeMetricsEndpoint: /metrics gives a servers-limited token the
// series of its servers only; an unlimited one gets them all.
func TestScopeMetricsEndpoint(t *testing.T) {
	t.Parallel()
	s := newScopeGateway(t, nil)
	get := func(tok string) string {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/metrics: %d %s", resp.StatusCode, b)
		}
		return string(b)
	}
	scoped, all := get(scopeLimitedTok), get(scopeAdminTok)
	if !strings.Contains(all, `mcp_server="b"`) || !strings.Contains(all, `mcp_server="a"`) {
		t.Fatalf("the admin's /metrics lacks a or b:\n%.600s", all)
	}
	if strings.Contains(scoped, `mcp_server="b"`) || strings.Contains(scoped, `mcp_server="m1"`) || !strings.Contains(scoped, `mcp_server="a"`) {
		t.Errorf("the scoped token's /metrics:\n%s", scoped)
	}
}

// TestScopeQuarantineWithholds: a quarantined server's resources,
// templates and prompts are not listed, and reading, getting, completing
// or subscribing to them is answered as for what nobody serves; the same
// on a server that is not quarantined works.
func TestScopeQuarantineWithholds(t *testing.T) {
	t.Parallel()
	s := newScopeGateway(t, nil)
	for _, tok := range []string{scopeAdminTok, scopeLimitedTok} {
		h := s.session(t, tok)
		for _, l := range []struct{ method, field, key, served, withheld string }{
			{"resources/list", "resources", "uri", "file:///a", "file:///q"},
			{"resources/templates/list", "resourceTemplates", "uriTemplate", "item-a://{n}", "item-q://{n}"},
			{"prompts/list", "prompts", "name", "a__greet", "q__greet"},
		} {
			got := namesOf(t, s.post(t, h, rpcMsg(1, l.method, `{}`)), l.field, l.key)
			if !slices.Contains(got, l.served) || slices.Contains(got, l.withheld) {
				t.Errorf("%s: %v, want %s and not %s", l.method, got, l.served, l.withheld)
			}
		}
		same := func(what, method, params, name, nobody string) {
			t.Helper()
			w := s.post(t, h, rpcMsg(9, method, strings.ReplaceAll(params, "NAME", name)))
			n := s.post(t, h, rpcMsg(9, method, strings.ReplaceAll(params, "NAME", nobody)))
			if w.msg.Error == nil || strings.ReplaceAll(w.body, name, "X") != strings.ReplaceAll(n.body, nobody, "X") {
				t.Errorf("%s: the withheld %s is answered\n%s\nnot as %s nobody serves:\n%s", what, name, w.body, nobody, n.body)
			}
		}
		same("resources/read", "resources/read", `{"uri":"NAME"}`, "file:///q", "file:///zz")
		same("resources/read by template", "resources/read", `{"uri":"NAME"}`, "item-q://4", "itemz-zz://4")
		same("prompts/get", "prompts/get", `{"name":"NAME","arguments":{"who":"x"}}`, "q__greet", "zz__greet")
		same("completion of a prompt", "completion/complete", `{"ref":{"type":"ref/prompt","name":"NAME"},"argument":{"name":"who","value":""}}`, "q__greet", "zz__greet")
		same("completion of a resource", "completion/complete", `{"ref":{"type":"ref/resource","uri":"NAME"},"argument":{"name":"n","value":""}}`, "item-q://{n}", "itemz-zz://{n}")
		same("resources/subscribe", "resources/subscribe", `{"uri":"NAME"}`, "file:///q", "file:///zz")
		// The same on a served server works: the checks above are not
		// refusing everything.
		for _, ok := range []struct{ method, params string }{
			{"resources/read", `{"uri":"file:///a"}`},
			{"prompts/get", `{"name":"a__greet","arguments":{"who":"x"}}`},
			{"completion/complete", `{"ref":{"type":"ref/resource","uri":"item-a://{n}"},"argument":{"name":"n","value":""}}`},
			{"resources/subscribe", `{"uri":"file:///a"}`},
		} {
			if r := s.post(t, h, rpcMsg(3, ok.method, ok.params)); r.status != http.StatusOK || r.msg.Error != nil {
				t.Errorf("%s %s: %d %s", ok.method, ok.params, r.status, r.body)
			}
		}
	}
	if got := s.g.FrontDoor.Subscriptions(); got["file:///q"] != 0 {
		t.Errorf("subscribed to the quarantined server's resource: %v", got)
	}
	// Outside the servers reads the same as nobody's.
	h := s.session(t, scopeLimitedTok)
	w := s.post(t, h, rpcMsg(9, "resources/read", `{"uri":"file:///b"}`))
	n := s.post(t, h, rpcMsg(9, "resources/read", `{"uri":"file:///zz"}`))
	if w.msg.Error == nil || w.msg.Error.Code != mcp.RESOURCE_NOT_FOUND || strings.ReplaceAll(w.body, "file:///b", "X") != strings.ReplaceAll(n.body, "file:///zz", "X") {
		t.Errorf("another's resource:\n%s\nnobody's:\n%s", w.body, n.body)
	}
}

// TestScopeSessionLimitAudited: an initialize refused for the session
// limits (503 when the table is full) is an audit entry allowed=false.
func TestScopeSessionLimitAudited(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Auth.Tokens = []config.Token{tok("alice", "tok-alice", auth.AllScopes), tok("bob", "tok-bob", auth.AllScopes)}
	g := gateway.New(cfg, provider.NewManager(nil, provider.Options{Log: quiet}), nil, nil, quiet)
	a := &fakeAudit{}
	g.AuditStore = a
	ep := g.HTTP(g.MCPServer(), endpoint.Options{MaxSessions: 1,
		Auth: &auth.HTTP{Auth: auth.NewAuthenticator(t.Context(), cfg.Auth, auth.Options{}), Log: quiet}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ep.Sessions().Shutdown(ctx)
		ep.Close()
	})
	s := &scopeGateway{}
	hs := httptestServer(t, ep.Handler)
	s.url = hs
	s.session(t, "tok-alice")
	r := s.post(t, bearer("tok-bob"), `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("initialize beyond max_sessions: %d %s", r.status, r.body)
	}
	var got []store.AuditEntry
	for _, e := range a.all() {
		if e.Identity == "bob" && !e.Allowed && e.Reason == "session_limit: session limit reached" {
			got = append(got, e)
		}
	}
	if len(got) != 1 {
		t.Errorf("audit = %+v, want bob's refused initialize", a.all())
	}
}

// TestCallByNameIsOneAuditEntry: a call by callable name is one decision
// and one audit entry (front_door, the server's tool name), allowed or
// refused, not a front_door entry and a tools/call entry of the same call.
func TestCallByNameIsOneAuditEntry(t *testing.T) {
	t.Parallel()
	var bOff atomic.Bool
	s := newScopeGateway(t, func(c *config.Config, g *gateway.Gateway) {
		g.Refuse = disablesB(&bOff)
	})
	bOff.Store(true)
	admin := s.session(t, scopeAdminTok)
	tests := []struct {
		server, callable, tool string
		allowed                bool
	}{
		{"a", "a__echo_raw", "echo_raw", true},
		{"b", "b__echo_raw", "echo_raw", false},
	}
	for i, tt := range tests {
		before := len(s.audit.all())
		if r := s.post(t, admin, toolCall(10+i, tt.callable, map[string]any{})); r.status != 200 {
			t.Fatalf("%s: status %d: %s", tt.callable, r.status, r.body)
		}
		got := s.audit.all()[before:]
		if len(got) != 1 || got[0].Action != audit.ActionFrontDoorCall || got[0].Server != tt.server || got[0].Tool != tt.tool || got[0].Allowed != tt.allowed {
			t.Errorf("%s: entries %+v, want one front_door entry of %s/%s (allowed %v)", tt.callable, got, tt.server, tt.tool, tt.allowed)
		}
	}
}

// disablesB is a Refuse that disables server b once off is set (after b
// has run and is listed).
func disablesB(off *atomic.Bool) func(string) error {
	return func(id string) error {
		if id == "b" && off.Load() {
			return &provider.Error{Kind: "mcp_server_disabled", ID: id, Detail: "disabled by policy"}
		}
		return nil
	}
}
