package app

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/store/pgtest"
	"github.com/mcp-hangar/hangar/internal/upstreamauth/authtest"
)

// bearerClient is an HTTP client that presents a hangar token.
func bearerClient(t *testing.T, token string) *http.Client {
	c := &http.Client{Transport: bearerRT{token: token, next: &http.Transport{}}}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

type bearerRT struct {
	token string
	next  *http.Transport
}

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func (b bearerRT) CloseIdleConnections() { b.next.CloseIdleConnections() }

// upstreamCaller is one hangar identity with one MCP client (mcp-go's or
// the go-sdk's, on one protocol version) and the upstream account it
// logs in as.
type upstreamCaller struct {
	name, token, user string
	// call calls a tool; login is how the client was sent to log in
	// ("elicitation": asked within the call; "error": the call failed
	// with the link, and the test logged in and called again).
	call func(ctx context.Context, tool string, args map[string]any) (text string, login string, err error)
	// asked counts the URL elicitations the client got.
	asked int
	// beforeLogin, if set, runs before the next login.
	beforeLogin func()
	// completed gets the elicitation IDs of notifications/elicitation/complete.
	completed chan string
	mu        sync.Mutex
}

// loginAs is a URL-mode elicitation handler: the user opens the link in
// their browser and logs in as user.
func (u *upstreamCaller) loginAs(ctx context.Context, mode, link string) error {
	u.mu.Lock()
	u.asked++
	before := u.beforeLogin
	u.mu.Unlock()
	if before != nil {
		before()
	}
	if mode != "url" {
		return fmt.Errorf("%s: elicitation mode %q, want url", u.name, mode)
	}
	status, page, err := authtest.NewBrowser().Login(ctx, link, u.user)
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("%s: login: %d %v %s", u.name, status, err, page)
	}
	return nil
}

var urlElicitation = mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &struct{}{}}}

// mcpgoCaller connects mcp-go's client, declaring URL-mode elicitation.
func mcpgoCaller(t *testing.T, url, version string, u *upstreamCaller) {
	t.Helper()
	topts := []transport.StreamableHTTPCOption{transport.WithHTTPBasicClient(bearerClient(t, u.token))}
	copts := []mcpclient.ClientOption{mcpclient.WithClientCapabilities(urlElicitation),
		mcpclient.WithElicitationHandler(elicitFunc(func(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
			if err := u.loginAs(ctx, r.Params.Mode, r.Params.URL); err != nil {
				t.Error(err)
				return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionCancel}}, nil
			}
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}, nil
		}))}
	if version == mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		topts = append(topts, transport.WithContinuousListening())
		copts = append(copts, mcpclient.WithProtocolVersion(version))
	}
	tr, err := transport.NewStreamableHTTP(url, topts...)
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr, copts...)
	life, end := context.WithCancel(context.Background())
	t.Cleanup(func() { end(); _ = c.Close() })
	if err := c.Start(life); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{}); err != nil {
		t.Fatalf("%s: initialize: %v", u.name, err)
	}
	u.call = func(ctx context.Context, tool string, args map[string]any) (string, string, error) {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = tool, args
		r, err := c.CallTool(ctx, req)
		if err != nil {
			return "", "", err
		}
		return textOf(r.Content), "elicitation", nil
	}
}

type elicitFunc func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

func (f elicitFunc) Elicit(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, r)
}

func textOf(content []mcp.Content) string {
	var parts []string
	for _, x := range content {
		if tc, ok := mcp.AsTextContent(x); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// sdkCaller connects the go-sdk client. With urlMode it declares URL-mode
// elicitation and logs in when asked; without, it declares form mode
// only, and a call that needs a login fails with -32042 carrying the
// link: the test logs in then and calls again, as an agent's host would.
func sdkCaller(t *testing.T, url, version string, urlMode bool, u *upstreamCaller) {
	t.Helper()
	u.completed = make(chan string, 8)
	opts := &sdk.ClientOptions{ElicitationCompleteHandler: func(_ context.Context, r *sdk.ElicitationCompleteNotificationRequest) {
		u.completed <- r.Params.ElicitationID
	}, ElicitationHandler: func(ctx context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		if err := u.loginAs(ctx, r.Params.Mode, r.Params.URL); err != nil {
			t.Error(err)
			return &sdk.ElicitResult{Action: "cancel"}, nil
		}
		return &sdk.ElicitResult{Action: "accept"}, nil
	}}
	if urlMode {
		opts.Capabilities = &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}}}
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "upstream-auth", Version: "1"}, opts)
	s, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: bearerClient(t, u.token)},
		&sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("%s: connect: %v", u.name, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	u.call = func(ctx context.Context, tool string, args map[string]any) (string, string, error) {
		how := "elicitation"
		r, err := s.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		var rpc *jsonrpc.Error
		if errors.As(err, &rpc) && rpc.Code == sdk.CodeURLElicitationRequired {
			var data struct {
				Elicitations []struct {
					Mode, URL, ElicitationID, Message string
				} `json:"elicitations"`
			}
			if jerr := json.Unmarshal(rpc.Data, &data); jerr != nil || len(data.Elicitations) != 1 || data.Elicitations[0].ElicitationID == "" || data.Elicitations[0].Message == "" {
				return "", "", fmt.Errorf("-32042 data %s (%v)", rpc.Data, jerr)
			}
			if err := u.loginAs(ctx, data.Elicitations[0].Mode, data.Elicitations[0].URL); err != nil {
				return "", "", err
			}
			// The server says the login is done (notifications/elicitation/complete).
			select {
			case id := <-u.completed:
				if id != data.Elicitations[0].ElicitationID {
					return "", "", fmt.Errorf("elicitation %s completed, want %s", id, data.Elicitations[0].ElicitationID)
				}
			case <-time.After(10 * time.Second):
				return "", "", errors.New("no notifications/elicitation/complete within 10s of the login")
			}
			how = "error"
			r, err = s.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		}
		if err != nil {
			return "", "", err
		}
		var parts []string
		for _, x := range r.Content {
			if tc, ok := x.(*sdk.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		return strings.Join(parts, "\n"), how, nil
	}
}

// upstreamConfig is a config file of two callers' tokens per client and
// the protected server, on a fresh schema of the shared PostgreSQL.
func upstreamConfig(t *testing.T, as *authtest.Server, callers []*upstreamCaller, svcSecret string) (path, instance string) {
	t.Helper()
	c := pgtest.Shared(t)
	u, err := c.Schema(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "store: {url: %q, password_file: %q}\nauth:\n  tokens:\n", u, c.PasswordFile)
	for _, cl := range callers {
		sum := sha256.Sum256([]byte(cl.token))
		fmt.Fprintf(&b, "    - {name: %s, token_sha256: %q, scopes: [hangar:read, hangar:call]}\n", cl.name, hex.EncodeToString(sum[:]))
	}
	fmt.Fprintf(&b, "front_door: {prefetch: false}\nmcp_servers:\n  gh:\n    mode: remote\n    endpoint: %q\n    upstream_auth: {type: oauth}\n", as.Endpoint())
	// One service identity for every caller.
	fmt.Fprintf(&b, "  svc:\n    mode: remote\n    endpoint: %q\n    upstream_auth: {type: client_credentials, client_id: svc, client_secret_file: %q}\n", as.Endpoint(), svcSecret)
	path = filepath.Join(t.TempDir(), "hangar.yaml")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	rb := make([]byte, 4)
	_, _ = rand.Read(rb)
	return path, "test-upstream-" + hex.EncodeToString(rb)
}

// TestUpstreamLoginThroughMCP: four callers (mcp-go's and the go-sdk
// client, on 2025-11-25 and 2026-07-28) are each sent to log in through
// MCP itself (a URL-mode elicitation within the call, or -32042 with the
// link), log in once, and reach the upstream as themselves; no call is
// ever served with another's token; a replica sharing the store serves
// them without a new login; and hangar_details shows each caller
// connected, and a disconnect sends them to log in again.
func TestUpstreamLoginThroughMCP(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	as := authtest.New(authtest.Options{DCR: true, Clients: map[string]string{"svc": "svc-secret"}})
	t.Cleanup(as.Close)
	svcSecret := filepath.Join(t.TempDir(), "svc-secret")
	if err := os.WriteFile(svcSecret, []byte("svc-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	legacy, modern := mcp.LATEST_LEGACY_PROTOCOL_VERSION, mcp.LATEST_PROTOCOL_VERSION
	callers := []*upstreamCaller{
		{name: "ada", user: "ada-upstream"},   // mcp-go, 2025-11-25: elicitation/create mode url
		{name: "bert", user: "bert-upstream"}, // go-sdk, 2025-11-25, form mode only: -32042
		{name: "cleo", user: "cleo-upstream"}, // mcp-go, 2026-07-28: input_required with the elicitation
		{name: "dirk", user: "dirk-upstream"}, // go-sdk, 2026-07-28: the same
	}
	for _, c := range callers {
		c.token = "hgr_test-" + c.name + "-0123456789abcdef"
	}
	path, instance := upstreamConfig(t, as, callers, svcSecret)
	// Replicas share the keystore's key (one key file given to each).
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	var dirs [2]string
	for i := range dirs {
		dirs[i] = t.TempDir()
		if err := os.WriteFile(filepath.Join(dirs[i], store.KeyFile), []byte(base64.StdEncoding.EncodeToString(key)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var logs lockedBuffer
	r1 := startReplicaIn(t, path, instance, "r1", dirs[0], &logs)
	r2 := startReplicaIn(t, path, instance, "r2", dirs[1], &logs)

	mcpgoCaller(t, r1.URL, legacy, callers[0])
	sdkCaller(t, r1.URL, legacy, false, callers[1])
	mcpgoCaller(t, r1.URL, modern, callers[2])
	sdkCaller(t, r1.URL, modern, true, callers[3])

	// The protected server lists its tools to nobody without a token: the
	// first caller reaches it through hangar_call, and its session's
	// tools become the server's.
	text, how, err := callers[0].call(ctx, "hangar_call", map[string]any{"calls": []any{map[string]any{"mcp_server": "gh", "tool": "whoami"}}})
	if err != nil || !strings.Contains(text, "user=ada-upstream") || how != "elicitation" || callers[0].asked != 1 {
		t.Fatalf("ada through hangar_call: %q via %s (asked %d): %v", text, how, callers[0].asked, err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for !slicesContains(r1.listed(t), "gh__whoami") {
		if time.Now().After(deadline) {
			t.Fatalf("the learned tool is not listed: %v", r1.listed(t))
		}
		time.Sleep(50 * time.Millisecond)
	}

	wantHow := []string{"elicitation", "error", "elicitation", "elicitation"}
	for i, c := range callers {
		text, how, err := c.call(ctx, "gh__whoami", nil)
		if err != nil || text != "user="+c.user {
			t.Fatalf("%s: %q, %v; want user=%s", c.name, text, err, c.user)
		}
		if i > 0 && (how != wantHow[i] || c.asked != 1) {
			t.Errorf("%s was sent to log in by %s, asked %d times; want %s, once", c.name, how, c.asked, wantHow[i])
		}
		// Logged in once: the next call needs nothing.
		if text, _, err := c.call(ctx, "gh__whoami", nil); err != nil || text != "user="+c.user || c.asked != 1 {
			t.Errorf("%s again: %q, %v, asked %d", c.name, text, err, c.asked)
		}
	}
	// Every token the upstream saw belongs to one user, and every user
	// got tokens of their own only (a call served with another's token
	// would have answered with the other's user above).
	byUser := map[string]int{}
	for _, user := range as.Tokens() {
		byUser[user]++
	}
	for _, c := range callers {
		if byUser[c.user] == 0 {
			t.Errorf("the upstream never saw a token of %s", c.user)
		}
	}
	if len(byUser) != len(callers) {
		t.Errorf("the upstream saw users %v, want exactly the four callers'", byUser)
	}

	// Replica r2 shares the store: the callers are connected there too.
	for _, c := range callers[:2] {
		other := &upstreamCaller{name: c.name, token: c.token, user: c.user}
		sdkCaller(t, r2.URL, legacy, true, other)
		if text, _, err := other.call(ctx, "hangar_call", map[string]any{"calls": []any{map[string]any{"mcp_server": "gh", "tool": "whoami"}}}); err != nil ||
			!strings.Contains(text, "user="+c.user) || other.asked != 0 {
			t.Errorf("%s on the other replica: %q, %v, asked to log in %d times", c.name, text, err, other.asked)
		}
	}

	// hangar_details shows the caller theirs; mcp/server/disconnect drops
	// it, and the next call asks again.
	details, _, err := callers[3].call(ctx, "hangar_details", map[string]any{"mcp_server": "gh"})
	if err != nil || !strings.Contains(details, `"connected":true`) || !strings.Contains(details, `"mcp/server/disconnect"`) {
		t.Fatalf("details: %v\n%s", err, details)
	}
	res := manageCallAs(t, r1.URL, callers[3].token, "mcp/server/disconnect", map[string]any{"name": "gh"})
	if res["disconnected"] != true {
		t.Fatalf("disconnect: %v", res)
	}
	if details, _, _ := callers[3].call(ctx, "hangar_details", map[string]any{"mcp_server": "gh"}); !strings.Contains(details, `"connected":false`) {
		t.Errorf("after the disconnect: %s", details)
	}
	if text, _, err := callers[3].call(ctx, "gh__whoami", nil); err != nil || text != "user="+callers[3].user || callers[3].asked != 2 {
		t.Errorf("after the disconnect: %q, %v, asked %d times; want a second login", text, err, callers[3].asked)
	}

	// client_credentials: every caller reaches the upstream as the one
	// service identity, with no login.
	for _, c := range callers[:2] {
		text, _, err := c.call(ctx, "hangar_call", map[string]any{"calls": []any{map[string]any{"mcp_server": "svc", "tool": "whoami"}}})
		if err != nil || !strings.Contains(text, "user=service:svc") || c.asked != 1 {
			t.Errorf("%s through the service identity: %q, %v (asked %d)", c.name, text, err, c.asked)
		}
	}

	// Logins, refusals and disconnects are audited (identity and server)
	// and counted; no token is in the log or the data dirs.
	entries, err := r1.Store.RecentAudit(ctx, "gh", 200)
	if err != nil {
		t.Fatal(err)
	}
	logins := map[string]bool{}
	for _, e := range entries {
		if e.Action == "upstream_auth/login" && e.Outcome == "ok" && e.Reason == "connected" {
			logins[e.Identity] = true
		}
	}
	if len(logins) != len(callers) {
		t.Errorf("audited logins of %v, want the four callers'", logins)
	}
	for _, ev := range []string{"login_started", "login"} {
		if n := counter(t, r1, "hangar_upstream_auth_events_total", `mcp_server="gh"`, `event="`+ev+`"`, `outcome="ok"`); n != 5 {
			t.Errorf("hangar_upstream_auth_events_total %s ok = %v, want 5 (one per caller, dirk's again after his disconnect)", ev, n)
		}
	}
	if strings.Contains(logs.String(), "/oauth/start/") {
		t.Error("a login link is in the log: it is the caller's alone")
	}
	for tok := range as.Tokens() {
		if strings.Contains(logs.String(), tok) {
			t.Fatal("a token is in the log")
		}
		for _, d := range dirs {
			_ = filepath.Walk(d, func(p string, _ os.FileInfo, _ error) error {
				if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(tok)) {
					t.Errorf("%s holds a token", p)
				}
				return nil
			})
		}
	}

	// Cleo's hangar token is removed from the config: her upstream
	// credential goes with it at the reload.
	cleo := auth.NewIdentity("cleo", auth.KindToken, nil, nil)
	cleo.Credential = auth.TokenFingerprint(sha256.Sum256([]byte(callers[2].token)))
	gh, _ := r1.Providers.Get("gh")
	if !r1.UpstreamAuth.Status(ctx, gh.Spec(), cleo).Connected {
		t.Fatal("cleo is not connected before the reload")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.Contains(line, "name: cleo,") {
			kept = append(kept, line)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(kept, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := r1.Gateway.Reload(ctx, true); res.Status != "success" {
		t.Fatalf("reload: %+v", res)
	}
	deadline = time.Now().Add(10 * time.Second)
	for r1.UpstreamAuth.Status(ctx, gh.Spec(), cleo).Connected {
		if time.Now().After(deadline) {
			t.Fatal("a removed token's upstream credential survived the reload")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The upstream revokes ada's grant: her next call is refused there,
	// the token dropped, and she is asked to log in again (and is let in
	// again by then).
	as.Revoke("ada-upstream")
	callers[0].beforeLogin = func() { as.Unrevoke("ada-upstream") }
	if text, _, err := callers[0].call(ctx, "gh__whoami", nil); err != nil || text != "user=ada-upstream" || callers[0].asked != 2 {
		t.Errorf("after the upstream refused her token: %q, %v, asked %d times; want a second login", text, err, callers[0].asked)
	}
}

// listed is the tool names r's MCP server lists.
func (r *replica) listed(*testing.T) []string {
	var out []string
	for name := range r.MCP.ListTools() {
		out = append(out, name)
	}
	return out
}

func slicesContains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// manageCallAs sends one management request with a hangar token.
func manageCallAs(t *testing.T, url, token, method string, params any) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	var env struct {
		Result map[string]any `json:"result"`
		Error  any            `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || env.Error != nil {
		t.Fatalf("%s: %d %v %v", method, resp.StatusCode, env.Error, err)
	}
	return env.Result
}

// lockedBuffer is a log the replicas write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// counter is the value of the series of name whose labels contain every
// one of labels (name="value" each), from r's /metrics.
func counter(t *testing.T, r *replica, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := r.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]bool{}
			for _, lp := range m.GetLabel() {
				have[fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue())] = true
			}
			for _, l := range labels {
				if !have[l] {
					continue next
				}
			}
			total += m.GetCounter().GetValue()
		}
	}
	return total
}
