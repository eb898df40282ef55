package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/metrics"
	"github.com/mcp-hangar/hangar/internal/policy"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/store"
)

// The policy over calls (issue 34) through the real HTTP endpoint, with
// mcp-go's client and the go-sdk client on both protocol versions.

const (
	polDevTok        = "hgr_policy-dev-0123456789ab"
	polOncallTok     = "hgr_policy-oncall-012345678"
	polContractorTok = "hgr_policy-contractor-01234"
)

// polRules are the rules of the table: each kind an operator writes.
var polRules = policy.Spec{Rules: []policy.Rule{
	{Name: "no-deletes", Effect: policy.Deny, When: `tool.name.startsWith("delete_")`, Message: "deleting needs a change ticket"},
	{Name: "mail-domain", Effect: policy.Deny, When: `tool.name == "send_email" && !args.to.endsWith("@example.com")`, Message: "mail goes to example.com only"},
	{Name: "big-orders", Effect: policy.Deny, When: `tool.name == "order" && args.order.items.exists(i, i.qty > 10)`},
	{Name: "restart-oncall", Effect: policy.Deny, When: `tool.name == "restart_service" && !("oncall" in identity.groups)`, Message: "on-call only"},
	{Name: "office-hours", Effect: policy.Deny, When: `"contractors" in identity.groups && request.time.getHours("Europe/Berlin") >= 17`},
	{Name: "small-n", Effect: policy.Deny, When: `tool.name == "echo_raw" && has(args.n) && args.n > 100`},
}}

// opsTools are the tools of the "ops" provider beside providerServer's.
func opsTools(s *mcpserver.MCPServer) {
	for _, name := range []string{"delete_rows", "send_email", "order", "restart_service"} {
		tool := mcp.NewTool(name, mcp.WithDescription("does "+name))
		if name == "delete_rows" {
			tool.Annotations.DestructiveHint = mcp.ToBoolPtr(true)
		}
		s.AddTool(tool, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("done " + name), nil
		})
	}
}

type policyGateway struct {
	g     *gateway.Gateway
	url   string // the endpoint's /mcp
	audit *fakeAudit
	idp   *idp
	cfg   *config.Config
}

// newPolicyGateway serves servers "ops" and "math" behind spec, on a
// clock that reads now (a Wednesday, 18:30 in Berlin, unless tune sets
// another), with the tokens above and an OIDC issuer.
func newPolicyGateway(t *testing.T, spec policy.Spec, now time.Time, tune func(*config.Config)) *policyGateway {
	t.Helper()
	p := newIDP(t)
	l := newPipeLauncher()
	l.extra["ops"] = opsTools
	cfg := config.Default()
	cfg.FrontDoor.Prefetch = false
	cfg.Servers["ops"], cfg.Servers["math"] = server("ops"), server("math")
	dev, oncall, contractor := tok("dev", polDevTok, auth.AllScopes), tok("oncall", polOncallTok, auth.AllScopes), tok("contractor", polContractorTok, auth.AllScopes)
	dev.Groups, oncall.Groups, contractor.Groups = []string{"dev"}, []string{"dev", "oncall"}, []string{"contractors"}
	cfg.Auth.Tokens = []config.Token{dev, oncall, contractor, tok("admin", adminTok, auth.AllScopes)}
	cfg.Auth.RateLimit = config.RateLimit{RPS: 1000, Burst: 1000}
	cfg.Auth.OIDC = config.OIDC{Issuer: p.srv.URL, Audience: audience, JWKSURL: p.srv.URL, GroupsClaim: "groups"}
	cfg.Policy = spec
	if tune != nil {
		tune(cfg)
	}
	m := metrics.New()
	mgr := provider.NewManager(l, provider.Options{Log: quiet, Events: m})
	g := gateway.New(cfg, mgr, nil, m, quiet)
	compiled, err := policy.Compile(cfg.Policy)
	if err != nil {
		t.Fatal(err)
	}
	g.Policy = policy.NewEngine(func() time.Time { return now })
	g.Policy.Set(compiled)
	audit := &fakeAudit{}
	g.AuditStore = audit
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
		Resource:  audience,
		Log:       quiet,
	}
	ep := g.HTTP(srv, endpoint.Options{Auth: ah})
	url := httptestServer(t, ep.Handler)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ep.Sessions().Shutdown(ctx)
		ep.Close()
		_ = mgr.StopAll(ctx, "test")
	})
	pg := &policyGateway{g: g, url: url + "/mcp", audit: audit, idp: p, cfg: cfg}
	s := &scopeGateway{url: url}
	admin := s.session(t, adminTok)
	for _, id := range []string{"ops", "math"} {
		if r := s.post(t, admin, toolCall(1, "hangar_start", map[string]any{"mcp_server": id})); r.status != http.StatusOK || r.msg.Error != nil {
			t.Fatalf("hangar_start %s: %d %s", id, r.status, r.body)
		}
	}
	g.FrontDoor.Refresh(t.Context())
	return pg
}

// evening is a Wednesday, 18:30 in Berlin: after the contractors' hours.
var evening = time.Date(2026, 3, 4, 17, 30, 0, 0, time.UTC)

// jwtWith signs a token of the idp for subject with extra claims.
func (p *idp) jwtWith(t *testing.T, subject string, claims map[string]any) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: p.key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]any{"scope": strings.Join(auth.AllScopes, " ")}
	for k, v := range claims {
		all[k] = v
	}
	raw, err := jwt.Signed(sig).Claims(jwt.Claims{
		Issuer: p.srv.URL, Subject: subject, Audience: jwt.Audience{audience},
		Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour)), IssuedAt: jwt.NewNumericDate(time.Now().Add(-time.Minute)),
	}).Claims(all).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// bearerTransport sends a bearer token with every request.
type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// polClient is what the table needs of either client: a call by name
// (a refusal is the JSON-RPC error's message and code, -1 when the client
// does not report the code), a hangar_call, and the listed tool names.
type polClient struct {
	call  func(name string, args map[string]any) (text string, code int, err error)
	tools func() ([]string, error)
}

var polClients = []struct {
	name string
	dial func(t *testing.T, url, token, version string) polClient
}{
	{"mcp-go", dialPolicyMCPGo},
	{"go-sdk", dialPolicySDK},
}

func dialPolicyMCPGo(t *testing.T, url, token, version string) polClient {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(&http.Client{Transport: bearerTransport(token)}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(version))
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	if c.ProtocolVersion() != version {
		t.Fatalf("the client speaks %s", c.ProtocolVersion())
	}
	return polClient{
		call: func(name string, args map[string]any) (string, int, error) {
			res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
			if err != nil {
				return "", -1, err // mcp-go keeps the message, not the code
			}
			b, _ := json.Marshal(res)
			return string(b), 0, nil
		},
		tools: func() ([]string, error) {
			res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
			if err != nil {
				return nil, err
			}
			var out []string
			for _, tl := range res.Tools {
				out = append(out, tl.Name)
			}
			return out, nil
		},
	}
}

func dialPolicySDK(t *testing.T, url, token, version string) polClient {
	t.Helper()
	s := connectSDK(t, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport(token)}, MaxRetries: 1}, version, nil)
	return polClient{
		call: func(name string, args map[string]any) (string, int, error) {
			res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
			if err != nil {
				var we *jsonrpc.Error
				if errors.As(err, &we) {
					return "", int(we.Code), err
				}
				return "", 0, err
			}
			b, _ := json.Marshal(res)
			return string(b), 0, nil
		},
		tools: func() ([]string, error) {
			res, err := s.ListTools(t.Context(), nil)
			if err != nil {
				return nil, err
			}
			var out []string
			for _, tl := range res.Tools {
				out = append(out, tl.Name)
			}
			return out, nil
		},
	}
}

// polCall is one row of the table: who calls what with which arguments,
// and the rule that refuses it ("" when it passes).
type polCall struct {
	caller string // token name
	tool   string // raw tool name (on ops, or math for echo_raw)
	args   map[string]any
	rule   string
	msg    string // the rule's message, in the refusal
}

var polCalls = []polCall{
	{"dev", "delete_rows", nil, "no-deletes", "deleting needs a change ticket"},
	{"dev", "send_email", map[string]any{"to": "ann@example.com"}, "", ""},
	{"dev", "send_email", map[string]any{"to": "ann@evil.example"}, "mail-domain", "mail goes to example.com only"},
	// No "to" at all: the rule fails, and fails closed.
	{"dev", "send_email", map[string]any{"subject": "hi"}, "mail-domain", "mail goes to example.com only"},
	{"dev", "order", map[string]any{"order": map[string]any{"items": []any{map[string]any{"qty": 3}, map[string]any{"qty": 11}}}}, "big-orders", ""},
	{"dev", "order", map[string]any{"order": map[string]any{"items": []any{map[string]any{"qty": 3}, map[string]any{"qty": 10.5}}}}, "big-orders", ""},
	{"dev", "order", map[string]any{"order": map[string]any{"items": []any{map[string]any{"qty": 10}}}}, "", ""},
	{"dev", "restart_service", nil, "restart-oncall", "on-call only"},
	{"oncall", "restart_service", nil, "", ""},
	{"oncall", "echo_raw", map[string]any{"n": 500}, "small-n", ""},
	{"oncall", "echo_raw", map[string]any{"n": 500.5}, "small-n", ""},
	{"oncall", "echo_raw", map[string]any{"n": 5}, "", ""},
	// 18:30 in Berlin on the test's clock.
	{"contractor", "echo_raw", nil, "office-hours", ""},
	{"dev", "echo_raw", nil, "", ""},
}

var polTokens = map[string]string{"dev": polDevTok, "oncall": polOncallTok, "contractor": polContractorTok}

func serverOf(tool string) string {
	if tool == "echo_raw" {
		return "math"
	}
	return "ops"
}

// TestPolicyTable: every row by callable name (a refusal is the JSON-RPC
// error -32002 naming the rule and carrying its message) and inside
// hangar_call (error_type forbidden, the rule named), with both clients
// on both protocol versions; what a rule denies without the arguments is
// not listed; every refusal is audited with its rule.
func TestPolicyTable(t *testing.T) {
	t.Parallel()
	pg := newPolicyGateway(t, polRules, evening, nil)
	for _, pc := range polClients {
		for _, version := range sdkVersions {
			t.Run(pc.name+"/"+version, func(t *testing.T) {
				clients := map[string]polClient{}
				for name, tk := range polTokens {
					clients[name] = pc.dial(t, pg.url, tk, version)
				}
				for i, row := range polCalls {
					c := clients[row.caller]
					callable := serverOf(row.tool) + "__" + row.tool
					text, code, err := c.call(callable, row.args)
					if row.rule == "" {
						if err != nil || strings.Contains(text, `"isError":true`) {
							t.Errorf("row %d: %s by %s refused: %v %s", i, callable, row.caller, err, text)
						}
					} else {
						want := fmt.Sprintf("Forbidden by policy rule %q", row.rule)
						if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), row.msg) {
							t.Errorf("row %d: %s by %s: %v %s, want the JSON-RPC error %s: %s", i, callable, row.caller, err, text, want, row.msg)
						}
						if code != -1 && code != auth.CodeInsufficientScope {
							t.Errorf("row %d: code %d, want -32002", i, code)
						}
					}
					// The same call inside hangar_call.
					text, _, err = c.call("hangar_call", map[string]any{"calls": []any{map[string]any{
						"mcp_server": serverOf(row.tool), "tool": row.tool, "arguments": nonNilArgs(row.args)}}})
					if err != nil {
						t.Fatalf("row %d: hangar_call: %v", i, err)
					}
					r := firstResult(t, text)
					if row.rule == "" {
						if !r.Success {
							t.Errorf("row %d: hangar_call refused: %s", i, text)
						}
					} else if r.Success || r.ErrorType == nil || *r.ErrorType != auth.KindForbidden || r.Error == nil ||
						!strings.Contains(*r.Error, fmt.Sprintf("policy rule %q", row.rule)) {
						t.Errorf("row %d: hangar_call %s by %s: %s, want error_type forbidden naming %s", i, row.tool, row.caller, text, row.rule)
					}
				}
				// Listings: what no call of the caller could pass is left out.
				for caller, want := range map[string]map[string]bool{
					"dev":        {"ops__delete_rows": false, "ops__restart_service": false, "ops__send_email": true, "math__echo_raw": true},
					"oncall":     {"ops__delete_rows": false, "ops__restart_service": true, "ops__order": true},
					"contractor": {"ops__delete_rows": false, "math__echo_raw": true}, // time rules are decided per call
				} {
					names, err := clients[caller].tools()
					if err != nil {
						t.Fatal(err)
					}
					for name, listed := range want {
						if slices.Contains(names, name) != listed {
							t.Errorf("tools/list of %s: %s listed %v, want %v (%v)", caller, name, !listed, listed, names)
						}
					}
				}
			})
		}
	}
	// Every refusal is audited with its rule, allowed false; a rule that
	// failed leaves CEL's error in the reason.
	refusals := 0
	for _, e := range pg.audit.all() {
		if e.Rule == "" || e.Allowed {
			continue
		}
		refusals++
		if !strings.HasPrefix(e.Reason, gateway.ReasonPolicy+": Forbidden by policy rule") || e.Outcome != "denied" {
			t.Errorf("audit entry %+v", e)
		}
		if e.Rule == "mail-domain" && e.Identity == "dev" && strings.Contains(e.Reason, "rule failed") &&
			!strings.Contains(e.Reason, "no such key: to") {
			t.Errorf("the failed rule's error is not CEL's: %s", e.Reason)
		}
	}
	perRun := 0
	for _, row := range polCalls {
		if row.rule != "" {
			perRun += 2 // by name and inside hangar_call
		}
	}
	if want := perRun * len(polClients) * len(sdkVersions); refusals != want {
		t.Errorf("%d refusals audited with their rule, want %d", refusals, want)
	}
	failed := pg.entriesWhere(func(e store.AuditEntry) bool {
		return e.Rule == "mail-domain" && strings.Contains(e.Reason, "rule failed: no such key: to")
	})
	if len(failed) == 0 {
		t.Error("no audit entry carries CEL's error of the rule that failed")
	}
}

func (pg *policyGateway) entriesWhere(match func(store.AuditEntry) bool) []store.AuditEntry {
	var out []store.AuditEntry
	for _, e := range pg.audit.all() {
		if match(e) {
			out = append(out, e)
		}
	}
	return out
}

func nonNilArgs(a map[string]any) map[string]any {
	if a == nil {
		return map[string]any{}
	}
	return a
}

type batchResult struct {
	Success   bool    `json:"success"`
	Error     *string `json:"error"`
	ErrorType *string `json:"error_type"`
}

// firstResult is the first result of a hangar_call answer (its JSON).
func firstResult(t *testing.T, answer string) batchResult {
	t.Helper()
	var res struct {
		StructuredContent struct {
			Results []batchResult `json:"results"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal([]byte(answer), &res); err != nil || len(res.StructuredContent.Results) != 1 {
		t.Fatalf("hangar_call answered %s", answer)
	}
	return res.StructuredContent.Results[0]
}

// TestPolicyRawAnswers: the wire answers, byte for byte where it matters:
// a refused call by name is HTTP 200 with the -32002 error (no
// insufficient_scope: no scope would help), on both protocol versions;
// resources/read and prompts/get are refused the same way; an allowed
// read is audited with the rule that allowed it.
func TestPolicyRawAnswers(t *testing.T) {
	t.Parallel()
	spec := policy.Spec{Default: policy.Deny, Rules: []policy.Rule{
		{Name: "math-tools", Effect: policy.Allow, When: `server.id == "math" && request.method == "tools/call"`},
		{Name: "read-mine", Effect: policy.Allow, When: `request.method == "resources/read" && resource.uri == "file:///math"`},
		{Name: "no-greetings", Effect: policy.Deny, When: `prompt.name == "greet"`, Message: "no prompts today"},
	}}
	pg := newPolicyGateway(t, spec, evening, nil)
	s := &scopeGateway{url: strings.TrimSuffix(pg.url, "/mcp")}
	legacy := s.session(t, polDevTok)
	modern := bearer(polDevTok)
	modern[mcp.HeaderProtocolVersion] = mcp.LATEST_PROTOCOL_VERSION
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, tc := range []struct {
		name    string
		headers map[string]string
		body    string
		msg     string // "" allowed
	}{
		{"legacy refused by default", legacy, toolCall(1, "ops__order", nil), "Forbidden by policy: no rule allows this call (default: deny)"},
		{"legacy allowed", legacy, toolCall(2, "math__echo_raw", nil), ""},
		{"legacy read refused", legacy, rpcMsg(3, "resources/read", `{"uri":"file:///ops"}`), "Forbidden by policy: no rule allows this call (default: deny)"},
		{"legacy read allowed", legacy, rpcMsg(4, "resources/read", `{"uri":"file:///math"}`), ""},
		{"legacy prompt refused", legacy, rpcMsg(5, "prompts/get", `{"name":"math__greet","arguments":{"who":"x"}}`), `Forbidden by policy rule "no-greetings": no prompts today`},
		{"modern refused", withHeaders(modern, mcp.HeaderMethod, "tools/call", mcp.HeaderName, "ops__order"),
			`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ops__order",` + meta + `}}`, "Forbidden by policy: no rule allows this call (default: deny)"},
		{"modern allowed", withHeaders(modern, mcp.HeaderMethod, "tools/call", mcp.HeaderName, "math__echo_raw"),
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"math__echo_raw",` + meta + `}}`, ""},
	} {
		r := s.post(t, tc.headers, tc.body)
		if tc.msg == "" {
			if r.status != http.StatusOK || r.msg.Error != nil || strings.Contains(r.body, `"isError":true`) {
				t.Errorf("%s: %d %s", tc.name, r.status, r.body)
			}
			continue
		}
		if r.status != http.StatusOK || r.msg.Error == nil || r.msg.Error.Code != auth.CodeInsufficientScope || r.msg.Error.Message != tc.msg {
			t.Errorf("%s: %d %s, want 200 with -32002 %q", tc.name, r.status, r.body, tc.msg)
		}
		if h := r.header.Get("WWW-Authenticate"); h != "" {
			t.Errorf("%s: WWW-Authenticate %q on a policy refusal", tc.name, h)
		}
	}
	// Completions and subscriptions are decided on the front door's side:
	// a refusal is an error naming the rule.
	for _, tc := range []struct{ name, body, msg string }{
		{"completion", rpcMsg(8, "completion/complete", `{"ref":{"type":"ref/prompt","name":"math__greet"},"argument":{"name":"who","value":"a"}}`),
			`Forbidden by policy rule "no-greetings": no prompts today`},
		{"subscription", rpcMsg(9, "resources/subscribe", `{"uri":"file:///ops"}`), "Forbidden by policy: no rule allows this call (default: deny)"},
	} {
		r := s.post(t, legacy, tc.body)
		if r.msg.Error == nil || !strings.Contains(r.msg.Error.Message, tc.msg) {
			t.Errorf("%s: %d %s, want an error %q", tc.name, r.status, r.body, tc.msg)
		}
	}
	if es := pg.entriesWhere(func(e store.AuditEntry) bool {
		return e.Action == "completion/complete" && !e.Allowed && e.Rule == "no-greetings"
	}); len(es) != 1 {
		t.Errorf("the refused completion is audited %d times with its rule", len(es))
	}
	if es := pg.entriesWhere(func(e store.AuditEntry) bool {
		return e.Action == "resources/read" && e.Allowed && e.Rule == "read-mine" && e.Server == "math"
	}); len(es) != 1 {
		t.Errorf("the read a rule allowed is audited %d times with its rule", len(es))
	}
	if es := pg.entriesWhere(func(e store.AuditEntry) bool {
		return e.Action == "prompts/get" && !e.Allowed && e.Rule == "no-greetings" && e.Tool == "greet"
	}); len(es) != 1 {
		t.Errorf("the refused get is audited %d times with its rule", len(es))
	}
	// An allowed call's own entry names the rule that allowed it.
	if es := pg.entriesWhere(func(e store.AuditEntry) bool {
		return e.Action == "front_door" && e.Allowed && e.Rule == "math-tools" && e.Outcome == "ok"
	}); len(es) != 2 {
		t.Errorf("allowed calls audited with their rule: %d, want 2", len(es))
	}
	// Default deny: only math's tools are listed.
	r := s.post(t, legacy, listTools)
	if !strings.Contains(r.body, "math__echo_raw") || strings.Contains(r.body, "ops__") {
		t.Errorf("tools/list under default deny: %s", r.body)
	}
}

func withHeaders(h map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// TestPolicyGroupsFromOIDC: identity.groups of a JWT are its groups claim
// (auth.oidc.groups_claim); claims are identity.claims.
func TestPolicyGroupsFromOIDC(t *testing.T) {
	t.Parallel()
	spec := policy.Spec{Rules: []policy.Rule{
		{Name: "restart-oncall", Effect: policy.Deny, When: `tool.name == "restart_service" && !("oncall" in identity.groups)`},
		{Name: "sales-no-mail", Effect: policy.Deny, When: `tool.name == "send_email" && identity.claims.?dept.orValue("") == "sales"`},
		{Name: "issuer", Effect: policy.Deny, When: `tool.name == "order" && identity.issuer == ""`},
	}}
	pg := newPolicyGateway(t, spec, evening, nil)
	for _, version := range sdkVersions {
		for _, pc := range polClients {
			t.Run(pc.name+"/"+version, func(t *testing.T) {
				oncall := pc.dial(t, pg.url, pg.idp.jwtWith(t, "ann", map[string]any{"groups": []string{"dev", "oncall"}, "dept": "ops"}), version)
				sales := pc.dial(t, pg.url, pg.idp.jwtWith(t, "bob", map[string]any{"groups": []string{"dev"}, "dept": "sales"}), version)
				token := pc.dial(t, pg.url, polOncallTok, version) // a static token: no issuer
				for _, c := range []struct {
					who     polClient
					tool    string
					refused string
				}{
					{oncall, "ops__restart_service", ""},
					{sales, "ops__restart_service", "restart-oncall"},
					{oncall, "ops__send_email", ""},
					{sales, "ops__send_email", "sales-no-mail"},
					{oncall, "ops__order", ""},
					{token, "ops__order", "issuer"},
				} {
					_, _, err := c.who.call(c.tool, nil)
					switch {
					case c.refused == "" && err != nil:
						t.Errorf("%s refused: %v", c.tool, err)
					case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
						t.Errorf("%s: %v, want refused by %s", c.tool, err, c.refused)
					}
				}
				names, err := sales.tools()
				if err != nil {
					t.Fatal(err)
				}
				if slices.Contains(names, "ops__restart_service") || slices.Contains(names, "ops__send_email") || !slices.Contains(names, "ops__order") {
					t.Errorf("bob's tools/list: %v", names)
				}
				names, err = oncall.tools()
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(names, "ops__restart_service") || !slices.Contains(names, "ops__send_email") {
					t.Errorf("ann's tools/list: %v", names)
				}
			})
		}
	}
}

// TestPolicyTimeRules: a time rule with the engine's clock, which tests
// set: the same call passes at 10:00 and is refused at 18:30 (Berlin).
func TestPolicyTimeRules(t *testing.T) {
	t.Parallel()
	rule := policy.Spec{Rules: []policy.Rule{
		{Name: "office-hours", Effect: policy.Deny, Message: "contractors work 9 to 17",
			When: `"contractors" in identity.groups && (request.time.getHours("Europe/Berlin") < 9 || request.time.getHours("Europe/Berlin") >= 17 || request.time.getDayOfWeek("Europe/Berlin") in [0, 6])`},
	}}
	for _, tc := range []struct {
		name    string
		now     time.Time
		refused bool
	}{
		{"Wednesday 10:00", time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC), false},
		{"Wednesday 18:30", evening, true},
		{"Saturday 11:00", time.Date(2026, 3, 7, 10, 0, 0, 0, time.UTC), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pg := newPolicyGateway(t, rule, tc.now, nil)
			c := dialPolicySDK(t, pg.url, polContractorTok, mcp.LATEST_PROTOCOL_VERSION)
			_, _, err := c.call("math__echo_raw", nil)
			if (err != nil) != tc.refused || tc.refused && !strings.Contains(err.Error(), "contractors work 9 to 17") {
				t.Errorf("%v, want refused %v", err, tc.refused)
			}
			other := dialPolicySDK(t, pg.url, polDevTok, mcp.LATEST_PROTOCOL_VERSION)
			if _, _, err := other.call("math__echo_raw", nil); err != nil {
				t.Errorf("dev refused: %v", err)
			}
		})
	}
}

// TestPolicyReload: rules are compiled at hangar_reload_config; a broken
// rule fails the reload with its key path and CEL's message and leaves the
// running policy in force; a good one replaces it, and the listings with
// it.
func TestPolicyReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	write := func(rules string) {
		t.Helper()
		yaml := "mcp_servers:\n  ops: {mode: docker, image: example/ops}\n  math: {mode: docker, image: example/math}\n" +
			"auth:\n  tokens:\n    - {name: dev, token: " + polDevTok + ", scopes: [hangar:read, hangar:call, hangar:admin], groups: [dev]}\n" +
			"policy:\n  rules:\n" + rules
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("    - {name: no-deletes, effect: deny, when: 'tool.name.startsWith(\"delete_\")'}\n")
	loaded, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	pg := newPolicyGateway(t, loaded.Policy, evening, func(c *config.Config) {
		// The file's servers, so that a reload changes the policy only.
		c.Source, c.Servers = path, loaded.Servers
	})
	// The harness's own tokens replace the file's; the reload reads the file's.
	c := dialPolicySDK(t, pg.url, polDevTok, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	changed := make(chan struct{}, 16)
	connectSDK(t, &sdk.StreamableClientTransport{Endpoint: pg.url, HTTPClient: &http.Client{Transport: bearerTransport(polDevTok)}},
		mcp.LATEST_LEGACY_PROTOCOL_VERSION, &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			changed <- struct{}{}
		}})
	if _, _, err := c.call("ops__delete_rows", nil); err == nil || !strings.Contains(err.Error(), "no-deletes") {
		t.Fatalf("before the reload: %v", err)
	}

	write("    - {name: ok, effect: allow, when: 'true'}\n    - {name: broken, effect: deny, when: 'tool.nmae == \"x\"'}\n")
	text, _, err := c.call("hangar_reload_config", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, `\"status\":\"failed\"`) || !strings.Contains(text, "policy.rules[1].when: 1:5: undefined field 'nmae'") {
		t.Errorf("a broken rule reloaded: %s", text)
	}
	if _, _, err := c.call("ops__delete_rows", nil); err == nil || !strings.Contains(err.Error(), "no-deletes") {
		t.Errorf("after a failed reload the old policy is not in force: %v", err)
	}
	names, err := c.tools()
	if err != nil || slices.Contains(names, "ops__delete_rows") {
		t.Errorf("after a failed reload: %v %v", names, err)
	}

	select {
	case <-changed:
		t.Error("a reload that failed sent list_changed")
	default:
	}
	write("    - {name: no-orders, effect: deny, when: 'tool.name == \"order\"', message: closed}\n")
	if text, _, err = c.call("hangar_reload_config", nil); err != nil || !strings.Contains(text, `\"status\":\"success\"`) ||
		!strings.Contains(text, `\"mcp_servers_updated\":[]`) {
		t.Fatalf("reload: %v %s", err, text)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Error("no notifications/tools/list_changed within 5s of a reload that changed the policy")
	}
	if _, _, err := c.call("ops__delete_rows", nil); err != nil {
		t.Errorf("after the reload delete_rows is still refused: %v", err)
	}
	if _, _, err := c.call("ops__order", nil); err == nil || !strings.Contains(err.Error(), `"no-orders": closed`) {
		t.Errorf("after the reload: %v", err)
	}
	names, err = c.tools()
	if err != nil || !slices.Contains(names, "ops__delete_rows") || slices.Contains(names, "ops__order") {
		t.Errorf("the listing did not follow the reload: %v %v", names, err)
	}
}

// TestPolicyHidesFromDetailsAndSearch: hangar_details, hangar_tools and
// hangar_find_tools leave out what the policy hides from the caller.
func TestPolicyHidesFromDetailsAndSearch(t *testing.T) {
	t.Parallel()
	pg := newPolicyGateway(t, polRules, evening, func(c *config.Config) {
		c.FrontDoor.Discovery = config.DiscoverySearch
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); pg.g.FrontDoor.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer wcancel()
	if err := pg.g.FrontDoor.SearchCaughtUp(wctx); err != nil {
		t.Fatal(err)
	}
	for _, version := range sdkVersions {
		for _, pc := range polClients {
			t.Run(pc.name+"/"+version, func(t *testing.T) {
				dev := pc.dial(t, pg.url, polDevTok, version)
				oncall := pc.dial(t, pg.url, polOncallTok, version)
				text, _, err := dev.call("hangar_details", map[string]any{"mcp_server": "ops"})
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(text, "delete_rows") || strings.Contains(text, "restart_service") || !strings.Contains(text, "send_email") {
					t.Errorf("dev's hangar_details shows hidden tools, or not the others: %s", text)
				}
				text, _, err = oncall.call("hangar_details", map[string]any{"mcp_server": "ops"})
				if err != nil || strings.Contains(text, "delete_rows") || !strings.Contains(text, "ops__restart_service") {
					t.Errorf("oncall's hangar_details: %v %s", err, text)
				}
				text, _, err = dev.call("hangar_tools", map[string]any{"mcp_server": "ops"})
				if err != nil || strings.Contains(text, "delete_rows") || !strings.Contains(text, "send_email") {
					t.Errorf("dev's hangar_tools: %v %s", err, text)
				}
				for _, q := range []string{"delete rows", "restart service"} {
					text, _, err = dev.call("hangar_find_tools", map[string]any{"query": q})
					if err != nil || strings.Contains(text, "ops__delete_rows") || strings.Contains(text, "ops__restart_service") {
						t.Errorf("dev finds %q: %v %s", q, err, text)
					}
				}
				text, _, err = oncall.call("hangar_find_tools", map[string]any{"query": "restart service"})
				if err != nil || !strings.Contains(text, "ops__restart_service") {
					t.Errorf("oncall finds restart: %v %s", err, text)
				}
			})
		}
	}
}

// TestPolicyServerOwnPolicies: a config server's own rules add to the
// gateway's; an installed server's narrow them (precedence as docs say).
func TestPolicyServerOwnPolicies(t *testing.T) {
	t.Parallel()
	gw := policy.Spec{Default: policy.Deny, Rules: []policy.Rule{{Name: "math", Effect: policy.Allow, When: `server.id == "math"`}}}
	pg := newPolicyGateway(t, gw, evening, func(c *config.Config) {
		c.Servers["ops"].Policy = &policy.Spec{Rules: []policy.Rule{
			{Name: "oncall", Effect: policy.Allow, When: `"oncall" in identity.groups`},
			{Name: "no-deletes", Effect: policy.Deny, When: `tool.name == "delete_rows"`},
		}}
	})
	dev := dialPolicyMCPGo(t, pg.url, polDevTok, mcp.LATEST_PROTOCOL_VERSION)
	oncall := dialPolicyMCPGo(t, pg.url, polOncallTok, mcp.LATEST_PROTOCOL_VERSION)
	if _, _, err := dev.call("ops__order", nil); err == nil || !strings.Contains(err.Error(), "default: deny") {
		t.Errorf("dev on ops: %v", err)
	}
	if _, _, err := oncall.call("ops__order", nil); err != nil {
		t.Errorf("oncall on ops: %v", err)
	}
	if _, _, err := oncall.call("ops__delete_rows", nil); err == nil || !strings.Contains(err.Error(), `"ops/no-deletes"`) {
		t.Errorf("oncall deletes: %v", err)
	}
	names, err := dev.tools()
	if err != nil || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "ops__") }) {
		t.Errorf("dev lists %v %v", names, err)
	}
	names, err = oncall.tools()
	if err != nil || !slices.Contains(names, "ops__order") || slices.Contains(names, "ops__delete_rows") {
		t.Errorf("oncall lists %v %v", names, err)
	}
	if es := pg.entriesWhere(func(e store.AuditEntry) bool { return e.Rule == "ops/oncall" && e.Allowed }); len(es) != 1 {
		t.Errorf("the server's rule that allowed is audited %d times", len(es))
	}
}

// TestPolicyWithoutHTTP: where no guard runs before mcp-go (stdio, an
// in-process client), the call path decides: a refused call by name is a
// tool error naming the rule; what the policy hides is not listed.
func TestPolicyWithoutHTTP(t *testing.T) {
	t.Parallel()
	h := newFrontDoor(t, nil, nil, func(c *config.Config) {
		c.Policy = policy.Spec{Rules: []policy.Rule{
			{Name: "no-kitchen", Effect: policy.Deny, When: `tool.name == "kitchen_sink"`, Message: "closed"},
			{Name: "small-n", Effect: policy.Deny, When: `tool.name == "echo_raw" && args.n > 5`},
		}}
	}, server("alpha"))
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "alpha"})
	h.refresh(t)
	if got := h.fail(t, "alpha__kitchen_sink", nil); got != `Forbidden by policy rule "no-kitchen": closed` {
		t.Errorf("kitchen_sink: %q", got)
	}
	if got := h.fail(t, "alpha__echo_raw", map[string]any{"n": 7}); got != `Forbidden by policy rule "small-n"` {
		t.Errorf("echo_raw 7: %q", got)
	}
	if res := h.call(t, "alpha__echo_raw", map[string]any{"n": 3}); res.IsError {
		t.Errorf("echo_raw 3 refused: %+v", res)
	}
	res, err := h.c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	if slices.Contains(names, "alpha__kitchen_sink") || !slices.Contains(names, "alpha__echo_raw") {
		t.Errorf("tools/list: %v", names)
	}
}

// TestPolicyInstalledNarrows: an installed server's own policy is checked
// after the gateway's and can only narrow it: its allow rules open nothing
// the gateway refuses by default, its deny rules and default apply.
func TestPolicyInstalledNarrows(t *testing.T) {
	t.Parallel()
	inst := server("inst")
	inst.Origin = config.OriginInstalled
	inst.Policy = &policy.Spec{Default: policy.Deny, Rules: []policy.Rule{
		{Name: "echo-only", Effect: policy.Allow, When: `tool.name == "echo_raw"`},
	}}
	for _, tc := range []struct {
		name    string
		gateway policy.Spec
		calls   map[string]string // tool → refusing rule ("" allowed; "default" the default)
	}{
		{"under a gateway that allows", policy.Spec{Rules: []policy.Rule{{Name: "no-asking", Effect: policy.Deny, When: `tool.name == "ask"`}}},
			map[string]string{"inst__echo_raw": "", "inst__ask": "no-asking", "inst__kitchen_sink": "default"}},
		{"under a gateway that denies", policy.Spec{Default: policy.Deny, Rules: []policy.Rule{{Name: "math", Effect: policy.Allow, When: `server.id == "math"`}}},
			map[string]string{"inst__echo_raw": "default", "math__echo_raw": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pg := newPolicyGateway(t, tc.gateway, evening, nil)
			if err := pg.g.Catalog.Put(t.Context(), catalog.SourceInstalled, inst, "test"); err != nil {
				t.Fatal(err)
			}
			s := &scopeGateway{url: strings.TrimSuffix(pg.url, "/mcp")}
			if r := s.post(t, s.session(t, adminTok), toolCall(1, "hangar_start", map[string]any{"mcp_server": "inst"})); r.msg.Error != nil {
				t.Fatalf("start: %s", r.body)
			}
			pg.g.FrontDoor.Refresh(t.Context())
			c := dialPolicySDK(t, pg.url, polDevTok, mcp.LATEST_PROTOCOL_VERSION)
			for tool, rule := range tc.calls {
				_, _, err := c.call(tool, nil)
				switch {
				case rule == "" && err != nil:
					t.Errorf("%s refused: %v", tool, err)
				case rule == "default" && (err == nil || !strings.Contains(err.Error(), "default: deny")):
					t.Errorf("%s: %v, want refused by a default", tool, err)
				case rule != "" && rule != "default" && (err == nil || !strings.Contains(err.Error(), `"`+rule+`"`)):
					t.Errorf("%s: %v, want refused by %s", tool, err, rule)
				}
			}
		})
	}
}

// CEL's error in the audit keeps no value of the arguments.
func TestPolicyErrorsKeepNoValues(t *testing.T) {
	t.Parallel()
	pg := newPolicyGateway(t, policy.Spec{Rules: []policy.Rule{
		{Name: "pin", Effect: policy.Deny, When: `tool.name == "order" && int(args.pin) == 1234`},
	}}, evening, nil)
	c := dialPolicySDK(t, pg.url, polDevTok, mcp.LATEST_PROTOCOL_VERSION)
	if _, _, err := c.call("ops__order", map[string]any{"pin": "s3cret-value"}); err == nil || !strings.Contains(err.Error(), `"pin"`) {
		t.Fatalf("%v", err)
	}
	es := pg.entriesWhere(func(e store.AuditEntry) bool { return e.Rule == "pin" })
	if len(es) != 1 || !strings.Contains(es[0].Reason, "rule failed: ") || strings.Contains(es[0].Reason, "s3cret") {
		t.Errorf("audit %+v", es)
	}
	t.Logf("reason: %s", es[0].Reason)
}
