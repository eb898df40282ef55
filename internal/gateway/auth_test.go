package gateway_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/metrics"
	"github.com/mcp-hangar/hangar/internal/provider"
)

const (
	audience   = "https://gw.example/mcp"
	readTok    = "hgr_reader-0123456789abcdef"
	callTok    = "hgr_caller-0123456789abcdef"
	adminTok   = "hgr_admin-0123456789abcdefg"
	expiredTok = "hgr_expired-0123456789abcde"
	limitedTok = "hgr_limited-0123456789abcde"
)

func tok(name, secret string, scopes []string, servers ...string) config.Token {
	t := config.Token{Name: name, Scopes: scopes, Servers: servers}
	copy(t.SHA256[:], mustHash(secret))
	return t
}

func mustHash(s string) []byte {
	h := auth.HashHex(s)
	b := make([]byte, 32)
	for i := range b {
		var v byte
		for _, c := range h[2*i : 2*i+2] {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= byte(c - '0')
			default:
				v |= byte(c-'a') + 10
			}
		}
		b[i] = v
	}
	return b
}

// idp is a local OAuth authorization server: a key pair and its JWKS.
type idp struct {
	srv *httptest.Server
	key *rsa.PrivateKey
}

func newIDP(t *testing.T) *idp {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &idp{key: key}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &key.PublicKey, KeyID: "k1", Algorithm: string(jose.RS256), Use: "sig"}}})
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// token signs claims with key (the idp's own unless another is given).
func (p *idp) token(t *testing.T, key *rsa.PrivateKey, aud string, exp time.Time, scope string) string {
	t.Helper()
	if key == nil {
		key = p.key
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(sig).Claims(jwt.Claims{
		Issuer: p.srv.URL, Subject: "alice", Audience: jwt.Audience{aud},
		Expiry: jwt.NewNumericDate(exp), IssuedAt: jwt.NewNumericDate(time.Now().Add(-time.Minute)),
	}).Claims(map[string]any{"scope": scope}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// authGateway is a gateway behind the real HTTP handler with auth as a
// non-loopback deployment has it.
type authGateway struct {
	g       *gateway.Gateway
	h       http.Handler
	idp     *idp
	logs    *syncBuffer
	metrics *metrics.Metrics
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newAuthGateway(t *testing.T, tune func(*config.Config)) *authGateway {
	t.Helper()
	p := newIDP(t)
	cfg := config.Default()
	for _, id := range []string{"math", "fs-1", "secret"} {
		cfg.Servers[id] = server(id)
		// Listed by the front door without a start.
		cfg.Servers[id].Tools.Predefined = []config.ToolDef{{Name: "add", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	}
	cfg.Auth.Tokens = []config.Token{
		tok("reader", readTok, []string{auth.ScopeRead}),
		tok("caller", callTok, []string{auth.ScopeRead, auth.ScopeCall}, "math", "fs-*"),
		tok("admin", adminTok, auth.AllScopes),
		tok("expired", expiredTok, auth.AllScopes),
		tok("limited", limitedTok, auth.AllScopes),
	}
	cfg.Auth.Tokens[3].ExpiresAt = time.Now().Add(-time.Hour)
	cfg.Auth.Tokens[4].RateLimit = &config.RateLimit{RPS: 0.01, Burst: 1}
	cfg.Auth.OIDC = config.OIDC{Issuer: p.srv.URL, Audience: audience, JWKSURL: p.srv.URL}
	if tune != nil {
		tune(cfg)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m := metrics.New()
	mgr := provider.NewManager(newFakeLauncher(), provider.Options{Log: log, Events: m})
	g := gateway.New(cfg, mgr, nil, m, log)
	g.Catalog.PublishConfig(t.Context(), cfg, "test", false)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = mgr.StopAll(ctx, "test")
	})
	ah := &auth.HTTP{
		Auth:                 auth.NewAuthenticator(t.Context(), cfg.Auth, auth.Options{}),
		Limiter:              g.RateLimiter,
		RateLimit:            cfg.Auth.RateLimit,
		APIKeyHeader:         cfg.Auth.APIKeyHeader,
		AllowAnonymous:       cfg.Auth.AllowAnonymous,
		Resource:             audience,
		AuthorizationServers: []string{p.srv.URL},
		Log:                  log,
	}
	mcpSrv := g.MCPServer()
	g.FrontDoor.Refresh(t.Context())
	ep := g.HTTP(mcpSrv, endpoint.Options{Auth: ah, Metrics: promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})})
	return &authGateway{g: g, h: ep.Handler, idp: p, logs: logs, metrics: m}
}

type rpcReply struct {
	status int
	header http.Header
	body   string
	msg    struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
}

// post sends one JSON-RPC request through the real handler.
func (a *authGateway) post(t *testing.T, headers map[string]string, body string) rpcReply {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.RemoteAddr = "192.0.2.10:5555"
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	r := rpcReply{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
	b := rec.Body.Bytes()
	if i := bytes.Index(b, []byte("data: ")); i >= 0 { // an SSE-framed answer
		b = b[i+6:]
	}
	_ = json.Unmarshal(b, &r.msg)
	return r
}

// session initializes an MCP session with headers and returns them with
// its Mcp-Session-Id added.
func (a *authGateway) session(t *testing.T, headers map[string]string) map[string]string {
	t.Helper()
	r := a.post(t, headers, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	out := map[string]string{"Mcp-Session-Id": sid}
	for k, v := range headers {
		out[k] = v
	}
	return out
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

func toolCall(id int, name string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args}})
	return string(b)
}

const listTools = `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`

// TestAuthRejections runs every refusal of issue 10 against the real HTTP
// handler: status, WWW-Authenticate, the seed 004 error and its id.
func TestAuthRejections(t *testing.T) {
	t.Parallel()
	a := newAuthGateway(t, nil)
	p := a.idp
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	hour := time.Now().Add(time.Hour)
	const meta = `resource_metadata="http://example.com/.well-known/oauth-protected-resource"`
	tests := []struct {
		name      string
		headers   map[string]string
		body      string
		status    int
		code      int    // 0: no JSON-RPC error expected
		message   string // of the error
		challenge string // in WWW-Authenticate; "" for none
		id        string // the answer's id
	}{
		{"no token", nil, listTools, 401, -32001, "Invalid or missing authentication token", `Bearer ` + meta, "7"},
		{"bad token", bearer("hgr_not-a-configured-token"), listTools, 401, -32001, "Invalid or missing authentication token", `error="invalid_token"`, "7"},
		{"expired token", bearer(expiredTok), listTools, 401, -32001, "Invalid or missing authentication token", meta, "7"},
		{"token in the wrong header", map[string]string{"X-Token": readTok}, listTools, 401, -32001, "Invalid or missing authentication token", meta, "7"},
		{"basic scheme", map[string]string{"Authorization": "Basic " + readTok}, listTools, 401, -32001, "Invalid or missing authentication token", meta, "7"},
		{"bearer without token", map[string]string{"Authorization": "Bearer"}, listTools, 401, -32001, "Invalid or missing authentication token", meta, "7"},
		{"two different credentials", map[string]string{"Authorization": "Bearer " + readTok, "X-API-Key": adminTok}, listTools, 401, -32001, "Invalid or missing authentication token", meta, "7"},
		{"unparseable body gets a null id", nil, `{"id":`, 401, -32001, "Invalid or missing authentication token", meta, "null"},
		{"string id echoed", nil, `{"jsonrpc":"2.0","id":"abc","method":"ping"}`, 401, -32001, "Invalid or missing authentication token", meta, `"abc"`},
		{"api key header", map[string]string{"X-API-Key": readTok}, listTools, 200, 0, "", "", "7"},
		{"bearer scheme any case", map[string]string{"Authorization": "bearer " + readTok}, listTools, 200, 0, "", "", "7"},
		{"read scope cannot call", bearer(readTok), toolCall(3, "hangar_call", map[string]any{"calls": []any{}}), 403, -32002, "Token missing required scope: hangar:call", `error="insufficient_scope", scope="hangar:call"`, "3"},
		{"call scope cannot start", bearer(callTok), toolCall(4, "hangar_start", map[string]any{"mcp_server": "math"}), 403, -32002, "Token missing required scope: hangar:admin", `error="insufficient_scope"`, "4"},
		{"unknown hangar tool fails closed", bearer(callTok), toolCall(5, "hangar_future", nil), 403, -32002, "Token missing required scope: hangar:admin", `insufficient_scope`, "5"},
		{"management method needs admin", bearer(callTok), `{"jsonrpc":"2.0","id":6,"method":"mcp/install","params":{}}`, 403, -32002, "Token missing required scope: hangar:admin", `insufficient_scope`, "6"},
		{"server outside the filter", bearer(callTok), toolCall(8, "hangar_details", map[string]any{"mcp_server": "secret"}), 403, -32002, "Token missing required scope: server:secret", `scope="server:secret"`, "8"},
		{"front-door tool outside the filter", bearer(callTok), toolCall(9, "secret__add", nil), 403, -32002, "Token missing required scope: server:secret", `insufficient_scope`, "9"},
		{"server inside the filter", bearer(callTok), toolCall(11, "hangar_details", map[string]any{"mcp_server": "fs-1"}), 200, 0, "", "", "11"},
		{"jwt", bearer(p.token(t, nil, audience, hour, "hangar:read")), listTools, 200, 0, "", "", "7"},
		{"jwt scopes apply", bearer(p.token(t, nil, audience, hour, "hangar:read")), toolCall(12, "hangar_call", map[string]any{"calls": []any{}}), 403, -32002, "Token missing required scope: hangar:call", `insufficient_scope`, "12"},
		{"jwt bad signature", bearer(p.token(t, other, audience, hour, "hangar:read")), listTools, 401, -32001, "Invalid or missing authentication token", `error="invalid_token"`, "7"},
		{"jwt wrong audience", bearer(p.token(t, nil, "https://other.example/mcp", hour, "hangar:read")), listTools, 401, -32001, "Invalid or missing authentication token", meta, "7"},
		{"jwt expired", bearer(p.token(t, nil, audience, time.Now().Add(-10*time.Minute), "hangar:read")), listTools, 401, -32001, "Invalid or missing authentication token", meta, "7"},
		{"jwt unsigned", bearer(unsigned(t, p.srv.URL)), listTools, 401, -32001, "Invalid or missing authentication token", meta, "7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			headers := tc.headers
			if tc.status == http.StatusOK {
				headers = a.session(t, tc.headers)
			}
			r := a.post(t, headers, tc.body)
			if r.status != tc.status {
				t.Fatalf("status = %d, want %d; body %s", r.status, tc.status, r.body)
			}
			if got := r.header.Get("WWW-Authenticate"); !strings.Contains(got, tc.challenge) || (tc.challenge == "") != (got == "") {
				t.Errorf("WWW-Authenticate = %q, want it to contain %q", got, tc.challenge)
			}
			if tc.status >= 400 && r.header.Get("Mcp-Session-Id") != "" {
				t.Errorf("a refused request got a session: %s", r.header.Get("Mcp-Session-Id"))
			}
			if string(r.msg.ID) != tc.id {
				t.Errorf("id = %s, want %s (body %s)", r.msg.ID, tc.id, r.body)
			}
			if tc.code == 0 {
				if r.msg.Error != nil {
					t.Errorf("unexpected error %+v", r.msg.Error)
				}
				return
			}
			if r.msg.Error == nil || r.msg.Error.Code != tc.code || r.msg.Error.Message != tc.message {
				t.Errorf("error = %+v, want %d %q; body %s", r.msg.Error, tc.code, tc.message, r.body)
			}
		})
	}
}

// unsigned is a JWT with alg none: the classic forgery.
func unsigned(t *testing.T, iss string) string {
	t.Helper()
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "none", "typ": "JWT"}) + "." +
		enc(map[string]any{"iss": iss, "sub": "mallory", "aud": audience, "exp": time.Now().Add(time.Hour).Unix(), "scope": "hangar:admin"}) + "."
}

func (a *authGateway) tools(t *testing.T, tok string) []string {
	t.Helper()
	r := a.post(t, a.session(t, bearer(tok)), listTools)
	var res struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal(r.msg.Result, &res); err != nil {
		t.Fatalf("tools/list: %v: %s", err, r.body)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// structured returns a tools/call answer's structured content.
func (a *authGateway) structured(t *testing.T, tok, tool string, args map[string]any) map[string]any {
	t.Helper()
	r := a.post(t, a.session(t, bearer(tok)), toolCall(1, tool, args))
	var res struct {
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.msg.Result, &res) != nil || res.IsError {
		t.Fatalf("%s: %d %s", tool, r.status, r.body)
	}
	return res.StructuredContent
}

func TestAuthFiltersWhatIsListed(t *testing.T) {
	t.Parallel()
	a := newAuthGateway(t, nil)
	has := func(names []string, n string) bool {
		for _, x := range names {
			if x == n {
				return true
			}
		}
		return false
	}
	reader := a.tools(t, readTok)
	for _, n := range []string{"hangar_list", "hangar_status", "hangar_details", "hangar_health", "hangar_group_list"} {
		if !has(reader, n) {
			t.Errorf("reader does not see %s", n)
		}
	}
	for _, n := range []string{"hangar_call", "hangar_start", "hangar_load", "hangar_approve", "hangar_fetch_continuation"} {
		if has(reader, n) {
			t.Errorf("reader sees %s", n)
		}
	}
	caller := a.tools(t, callTok)
	if !has(caller, "hangar_call") || !has(caller, "hangar_fetch_continuation") || has(caller, "hangar_stop") {
		t.Errorf("caller sees %v", caller)
	}
	if admin := a.tools(t, adminTok); len(admin) != 22+3 {
		t.Errorf("admin sees %d tools, want all 22 hangar_* and the 3 provider tools", len(admin))
	}
	// Provider tools by callable name: only the servers the token may reach.
	if !has(caller, "math__add") || !has(caller, "fs-1__add") || has(caller, "secret__add") {
		t.Errorf("caller sees %v, want math__add and fs-1__add, not secret__add", caller)
	}
	if has(reader, "math__add") {
		t.Error("a reader without hangar:call sees a provider tool")
	}

	var listed []string
	for _, s := range a.structured(t, callTok, "hangar_list", nil)["mcp_servers"].([]any) {
		listed = append(listed, s.(map[string]any)["mcp_server"].(string))
	}
	if strings.Join(listed, ",") != "fs-1,math" {
		t.Errorf("caller's hangar_list = %v, want fs-1 and math only", listed)
	}
	status := a.structured(t, callTok, "hangar_status", nil)
	if n := len(status["mcp_servers"].([]any)); n != 2 || strings.Contains(status["formatted"].(string), "secret") {
		t.Errorf("caller's hangar_status shows %d servers: %v", n, status["formatted"])
	}

	res := a.structured(t, callTok, "hangar_call", map[string]any{"calls": []any{
		map[string]any{"mcp_server": "math", "tool": "add", "arguments": map[string]any{"a": 1, "b": 2}},
		map[string]any{"mcp_server": "secret", "tool": "add", "arguments": map[string]any{"a": 1, "b": 2}},
	}})
	results := res["results"].([]any)
	if r := results[0].(map[string]any); r["success"] != true {
		t.Errorf("call on math: %v", r)
	}
	if r := results[1].(map[string]any); r["success"] != false || r["error"] != "Token missing required scope: server:secret" {
		t.Errorf("call on secret: %v", r)
	}
	if p, _ := a.g.Providers.Get("secret"); p.State() != provider.Cold {
		t.Errorf("secret was started: %s", p.State())
	}

	warm := a.structured(t, adminTok, "hangar_warm", map[string]any{"mcp_servers": "fs-1"})
	if w := warm["warmed"].([]any); len(w) != 1 || w[0] != "fs-1" {
		t.Errorf("admin warm: %v", warm)
	}
}

func TestRateLimited(t *testing.T) {
	t.Parallel()
	a := newAuthGateway(t, nil)
	h := a.session(t, bearer(limitedTok)) // takes the one token of the bucket
	r := a.post(t, h, listTools)
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "100" {
		t.Fatalf("over the limit: %d Retry-After %q", r.status, r.header.Get("Retry-After"))
	}
	if r.msg.Error == nil || r.msg.Error.Code != -32003 || r.msg.Error.Message != "Rate limit exceeded. Try again in 100 seconds." || string(r.msg.ID) != "7" {
		t.Errorf("body = %s", r.body)
	}
	// Other identities have buckets of their own.
	if r := a.post(t, a.session(t, bearer(readTok)), listTools); r.status != http.StatusOK {
		t.Errorf("reader after limited: %d", r.status)
	}
	health := a.structured(t, adminTok, "hangar_health", nil)
	rl := health["security"].(map[string]any)["rate_limiting"].(map[string]any)
	if rl["active_buckets"] != 3.0 || rl["enabled"] != true {
		t.Errorf("rate_limiting = %v, want 3 active buckets (limited, reader, admin)", rl)
	}
	if c := rl["config"].(map[string]any); c["rps"] != 10.0 || c["burst"] != 20.0 {
		t.Errorf("rate_limiting.config = %v", c)
	}
}

func TestProtectedResourceMetadata(t *testing.T) {
	t.Parallel()
	a := newAuthGateway(t, nil)
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		rec := httptest.NewRecorder()
		a.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		var doc map[string]any
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &doc) != nil {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body.String())
		}
		want := map[string]any{
			"resource":                 audience,
			"authorization_servers":    []any{a.idp.srv.URL},
			"scopes_supported":         []any{"hangar:read", "hangar:call", "hangar:admin"},
			"bearer_methods_supported": []any{"header"},
		}
		for k, v := range want {
			if got, _ := json.Marshal(doc[k]); string(got) != string(mustMarshal(v)) {
				t.Errorf("%s: %s = %s, want %s", path, k, got, mustMarshal(v))
			}
		}
	}
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestSecretsNeverShown puts a canary token and a canary env secret into
// the gateway and looks for them in every answer, the log and /metrics.
func TestSecretsNeverShown(t *testing.T) {
	t.Parallel()
	const canaryTok = "hgr_CANARY-token-7f3a9b2c1d"
	const canaryEnv = "CANARY-env-secret-5e8d"
	a := newAuthGateway(t, func(c *config.Config) {
		c.Auth.Tokens = append(c.Auth.Tokens, tok("canary", canaryTok, auth.AllScopes))
		c.Servers["math"].Env = map[string]string{"API_KEY": canaryEnv}
	})
	var answers []string
	collect := func(r rpcReply) { answers = append(answers, r.body) }
	h := a.session(t, bearer(canaryTok))
	for _, tool := range []string{"hangar_list", "hangar_status", "hangar_health", "hangar_metrics", "hangar_tools", "hangar_details", "hangar_start"} {
		collect(a.post(t, h, toolCall(1, tool, map[string]any{"mcp_server": "math"})))
	}
	collect(a.post(t, h, toolCall(2, "hangar_metrics", map[string]any{"format": "prometheus"})))
	collect(a.post(t, h, toolCall(3, "hangar_call", map[string]any{"calls": []any{
		map[string]any{"mcp_server": "math", "tool": "echo", "arguments": map[string]any{}}}})))
	// Refusals: a near miss of the canary, and the canary in a bad header.
	collect(a.post(t, bearer(canaryTok+"x"), listTools))
	collect(a.post(t, map[string]string{"Authorization": "Basic " + canaryTok}, listTools))
	collect(a.post(t, map[string]string{"Authorization": "Bearer " + canaryTok, "X-API-Key": canaryTok + "y"}, listTools))
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("/metrics without a token: %d, want 401", rec.Code)
	}
	rec = httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+readTok)
	a.h.ServeHTTP(rec, req)
	answers = append(answers, rec.Body.String())
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	answers = append(answers, a.logs.String())
	if !strings.Contains(a.logs.String(), "request refused") {
		t.Fatal("the refusals were not logged, so the log check proves nothing")
	}
	for i, text := range answers {
		for _, secret := range []string{canaryTok, canaryEnv, auth.HashHex(canaryTok)} {
			if strings.Contains(text, secret) {
				t.Errorf("answer %d contains a secret: %.300s", i, text)
			}
		}
	}
}

// TestAnonymousBesideTokens: with allow_anonymous and tokens, a caller
// without a token may look but not call, and has a bucket per address.
func TestAnonymousBesideTokens(t *testing.T) {
	t.Parallel()
	a := newAuthGateway(t, func(c *config.Config) { c.Auth.AllowAnonymous = true })
	if r := a.post(t, a.session(t, nil), listTools); r.status != http.StatusOK {
		t.Fatalf("anonymous tools/list: %d %s", r.status, r.body)
	}
	r := a.post(t, nil, toolCall(1, "hangar_call", map[string]any{"calls": []any{}}))
	if r.status != http.StatusForbidden || r.msg.Error == nil || r.msg.Error.Message != "Token missing required scope: hangar:call" {
		t.Errorf("anonymous hangar_call: %d %s", r.status, r.body)
	}
	if r := a.post(t, bearer("hgr_wrong-token-0123456789"), listTools); r.status != http.StatusUnauthorized {
		t.Errorf("a bad token is not anonymous: %d", r.status)
	}
	if n := a.g.RateLimiter.Active(); n != 1 {
		t.Errorf("buckets = %d, want one for the address", n)
	}
}
