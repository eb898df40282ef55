package upstreamauth_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/upstreamauth"
	"github.com/mcp-hangar/hangar/internal/upstreamauth/authtest"
)

// rig is a Manager (the gateway's side, its /oauth/ paths served) on a
// SQLite store, an authorization server and the MCP server it protects.
type rig struct {
	m       *upstreamauth.Manager
	as      *authtest.Server
	gw      *httptest.Server
	spec    *config.Server
	other   *config.Server // a second server on the same upstream, its ID spec's plus "x"
	dir     string
	logs    *bytes.Buffer
	offset  atomic.Int64 // added to the manager's clock
	mu      sync.Mutex
	entries []store.AuditEntry
	counts  map[string]int
}

func newRig(t *testing.T, o authtest.Options, ua config.UpstreamAuth) *rig {
	t.Helper()
	gw := httptest.NewUnstartedServer(nil) // its address is the redirect URI's
	o.RedirectURI = "http://" + gw.Listener.Addr().String() + upstreamauth.CallbackPath
	r := &rig{as: authtest.New(o), gw: gw, dir: t.TempDir(), logs: &bytes.Buffer{}, counts: map[string]int{}}
	t.Cleanup(r.as.Close)
	st, err := store.OpenDir(r.dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	r.spec = &config.Server{ID: "gh", Mode: config.ModeRemote, Endpoint: r.as.Endpoint(), UpstreamAuth: &ua}
	r.other = &config.Server{ID: "ghx", Mode: config.ModeRemote, Endpoint: r.as.Endpoint(), UpstreamAuth: &ua}
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return r.logs.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	r.m = upstreamauth.New(upstreamauth.Options{
		Secrets:   st,
		PublicURL: func() string { return r.gw.URL },
		Spec: func(id string) (*config.Server, bool) {
			for _, spec := range []*config.Server{r.spec, r.other} {
				if id == spec.ID {
					return spec, true
				}
			}
			return nil, false
		},
		Record: func(_ context.Context, e store.AuditEntry) {
			log.Info("audit", "identity", e.Identity, "action", e.Action, "reason", e.Reason)
			r.mu.Lock()
			r.entries = append(r.entries, e)
			r.mu.Unlock()
		},
		Count: func(server, event, outcome string) {
			r.mu.Lock()
			r.counts[server+"/"+event+"/"+outcome]++
			r.mu.Unlock()
		},
		Log: log,
		Now: func() time.Time { return time.Now().Add(time.Duration(r.offset.Load())) },
	})
	r.gw.Config.Handler = r.m.Handler()
	r.gw.Start()
	t.Cleanup(r.gw.Close)
	return r
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func (r *rig) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[key]
}

func (r *rig) audited(action, outcome string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.entries {
		if e.Action == action && e.Outcome == outcome {
			n++
		}
	}
	return n
}

func caller(name string) auth.Identity {
	id := auth.NewIdentity(name, auth.KindToken, auth.AllScopes, nil)
	id.Credential = "fp-" + name
	return id
}

// login runs the whole flow for who, as user at the authorization
// server, and returns the token the manager then presents.
func (r *rig) login(t *testing.T, who auth.Identity, user string) string {
	t.Helper()
	return r.loginTo(t, r.spec, who, user)
}

// loginTo is login to spec's upstream.
func (r *rig) loginTo(t *testing.T, spec *config.Server, who auth.Identity, user string) string {
	t.Helper()
	ctx := t.Context()
	if _, err := r.m.Token(ctx, spec, who); !upstreamauth.IsNoToken(err) {
		t.Fatalf("before the login: %v, want no token", err)
	}
	le, err := r.m.Login(ctx, spec, who, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(le.URL, r.gw.URL+upstreamauth.StartPath) || le.ElicitationID == "" {
		t.Fatalf("login link %q (elicitation %q), want one under %s", le.URL, le.ElicitationID, r.gw.URL+upstreamauth.StartPath)
	}
	status, page, err := authtest.NewBrowser().Login(ctx, le.URL, user)
	if err != nil || status != http.StatusOK || !strings.Contains(page, "connected") {
		t.Fatalf("login: %d %v\n%s", status, err, page)
	}
	tok, err := r.m.Token(ctx, spec, who)
	if err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken
}

// TestDropsOnlyThatServersToken: a refusal or a disconnect on server gh
// drops the caller's token for gh, not the one for ghx, whose ID gh
// begins (a ref is not a prefix).
func TestDropsOnlyThatServersToken(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRig(t, authtest.Options{DCR: true}, config.UpstreamAuth{Type: config.UpstreamOAuth})
	bob := caller("bob")
	r.loginTo(t, r.spec, bob, "bob-upstream")
	r.loginTo(t, r.other, bob, "bob-upstream")
	r.m.Refused(ctx, r.spec, bob)
	if _, err := r.m.Token(ctx, r.spec, bob); !upstreamauth.IsNoToken(err) {
		t.Errorf("gh after its refusal: %v, want no token", err)
	}
	recheck := func() { r.offset.Add(int64(3 * time.Second)) } // past the in-memory copy: the keystore is read
	recheck()
	if _, err := r.m.Token(ctx, r.other, bob); err != nil {
		t.Fatalf("ghx's token went with gh's refusal: %v", err)
	}
	r.loginTo(t, r.spec, bob, "bob-upstream")
	if had, err := r.m.Disconnect(ctx, r.spec.ID, bob); err != nil || !had {
		t.Fatalf("disconnect gh: %v %v", had, err)
	}
	recheck()
	if _, err := r.m.Token(ctx, r.other, bob); err != nil {
		t.Errorf("ghx's token went with gh's disconnect: %v", err)
	}
}

// TestLoginPerIdentity: two callers each log in; each one's token is
// theirs at the upstream; the refresh keeps them without a new login; a
// disconnect, a refusal by the upstream and the removal of the identity
// each drop one; nothing of them is in the store or the log in plain
// text.
func TestLoginPerIdentity(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRig(t, authtest.Options{DCR: true}, config.UpstreamAuth{Type: config.UpstreamOAuth})
	alice, bob := caller("alice"), caller("bob")

	aTok := r.login(t, alice, "alice-upstream")
	bTok := r.login(t, bob, "bob-upstream")
	if aTok == bTok {
		t.Fatal("both callers got one token")
	}
	for tok, want := range map[string]string{aTok: "alice-upstream", bTok: "bob-upstream"} {
		if user, ok := r.as.UserOf(ctx, tok); !ok || user != want {
			t.Errorf("the upstream takes a token for %q (%v), want %q", user, ok, want)
		}
	}
	if n := r.as.Registrations.Load(); n != 1 {
		t.Errorf("%d dynamic registrations, want 1 (kept in the keystore for the next login)", n)
	}
	if n := r.as.Unauthorized.Load(); n != 1 {
		t.Errorf("the upstream answered %d 401s, want 1: the discovery's probe (then the metadata is kept)", n)
	}

	// Near its end the token is refreshed, with no new login.
	r.offset.Store(int64(authtest.AccessTokenTTL))
	next, err := r.m.Token(ctx, r.spec, alice)
	if err != nil {
		t.Fatal(err)
	}
	if next.AccessToken == aTok || r.as.Refreshes.Load() != 1 {
		t.Fatalf("after the token's end: same token %v, %d refreshes; want a refreshed one", next.AccessToken == aTok, r.as.Refreshes.Load())
	}
	if user, ok := r.as.UserOf(ctx, next.AccessToken); !ok || user != "alice-upstream" {
		t.Errorf("the refreshed token is %q's (%v)", user, ok)
	}
	if r.as.Exchanges.Load() != 2 {
		t.Errorf("%d code exchanges, want 2 (one login each)", r.as.Exchanges.Load())
	}
	if r.count("gh/refresh/ok") != 1 || r.audited("upstream_auth/refresh", "ok") != 1 {
		t.Error("the refresh was not counted and audited")
	}
	if r.as.MissingResource.Load() != 0 {
		t.Errorf("%d requests without the resource parameter", r.as.MissingResource.Load())
	}

	// Nothing in plain text: the database files and the log.
	secrets := []string{aTok, bTok, next.AccessToken, next.RefreshToken}
	if next.RefreshToken == "" {
		t.Fatal("no refresh token")
	}
	var files []string
	_ = filepath.Walk(r.dir, func(p string, _ os.FileInfo, _ error) error { files = append(files, p); return nil })
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s holds a token in plain text", f)
			}
		}
	}
	for _, s := range secrets {
		if strings.Contains(r.logs.String(), s) {
			t.Error("the log holds a token")
		}
	}

	st := r.m.Status(ctx, r.spec, alice)
	if !st.Connected || !st.PerIdentity || st.Since == nil || st.Expires == nil {
		t.Errorf("alice's status %+v, want connected with times", st)
	}
	if had, err := r.m.Disconnect(ctx, r.spec.ID, alice); err != nil || !had {
		t.Fatalf("disconnect: %v %v", had, err)
	}
	if _, err := r.m.Token(ctx, r.spec, alice); !upstreamauth.IsNoToken(err) {
		t.Errorf("after the disconnect: %v, want no token", err)
	}
	if r.m.Status(ctx, r.spec, alice).Connected {
		t.Error("alice still connected after the disconnect")
	}
	if _, err := r.m.Token(ctx, r.spec, bob); err != nil {
		t.Errorf("bob lost his token with alice's disconnect: %v", err)
	}

	// The upstream refuses bob's token: dropped, audited.
	r.m.Refused(ctx, r.spec, bob)
	if _, err := r.m.Token(ctx, r.spec, bob); !upstreamauth.IsNoToken(err) {
		t.Errorf("after a refusal: %v, want no token", err)
	}
	if r.audited("upstream_auth/refused", "denied") != 1 || r.audited("upstream_auth/disconnect", "ok") != 1 {
		t.Error("refusal or disconnect not audited")
	}

	// The identity's hangar token is removed: its credentials go.
	carol := caller("carol")
	r.login(t, carol, "carol-upstream")
	n, err := r.m.Prune(ctx, func(s upstreamauth.Subject) bool { return s.Name != "carol" })
	if err != nil || n != 1 {
		t.Fatalf("prune: %d, %v; want carol's one token", n, err)
	}
	if _, err := r.m.Token(ctx, r.spec, carol); !upstreamauth.IsNoToken(err) {
		t.Errorf("a removed identity's token survived: %v", err)
	}
	// A new token under carol's name is another credential.
	renamed := caller("carol")
	renamed.Credential = "another"
	if _, err := r.m.Token(ctx, r.spec, renamed); !upstreamauth.IsNoToken(err) {
		t.Errorf("a new token under an old name found a token: %v", err)
	}
}

// stopAtCallback is a browser step by step: it logs in at the
// authorization server and returns the callback URL it was sent to,
// unvisited, with its cookie jar.
func (r *rig) stopAtCallback(t *testing.T, who auth.Identity) (string, *http.Client) {
	t.Helper()
	ctx := t.Context()
	le, err := r.m.Login(ctx, r.spec, who, "")
	if err != nil {
		t.Fatal(err)
	}
	jar := newJar()
	var callback string
	c := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), r.gw.URL+upstreamauth.CallbackPath) {
			callback = req.URL.String()
			return http.ErrUseLastResponse
		}
		return nil
	}}
	post := func(u string, form url.Values) string {
		resp, err := c.PostForm(u, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	page := post(le.URL, url.Values{})
	_, rest, _ := strings.Cut(page, `action="`)
	action, _, _ := strings.Cut(rest, `"`)
	post(r.as.AS.URL+strings.ReplaceAll(action, "&amp;", "&"), url.Values{"user": {"mallory"}})
	if callback == "" {
		t.Fatalf("no redirect to the callback; last page:\n%s", page)
	}
	return callback, c
}

// TestCallbackRefusals: a forged, replayed, tampered or foreign callback
// gets a 4xx, stores nothing and is audited.
func TestCallbackRefusals(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRig(t, authtest.Options{DCR: true}, config.UpstreamAuth{Type: config.UpstreamOAuth})
	dave := caller("dave")
	get := func(c *http.Client, u string) int {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	stored := func() bool {
		_, err := r.m.Token(ctx, r.spec, dave)
		return err == nil
	}

	// A state nobody issued.
	if s := get(http.DefaultClient, r.gw.URL+upstreamauth.CallbackPath+"?code=x&state=1999999999.forged"); s != http.StatusBadRequest {
		t.Errorf("forged state: %d, want 400", s)
	}
	if s := get(http.DefaultClient, r.gw.URL+upstreamauth.CallbackPath+"?code=x"); s != http.StatusBadRequest {
		t.Errorf("no state: %d, want 400", s)
	}
	if r.audited("upstream_auth/callback", "denied") != 2 || r.count("/callback/denied") != 2 {
		t.Error("the forged callbacks were not audited and counted")
	}

	// The right state from another browser (no cookie): refused, and the
	// flow is used up.
	cb, own := r.stopAtCallback(t, dave)
	if s := get(&http.Client{}, cb); s != http.StatusBadRequest {
		t.Errorf("callback from another browser: %d, want 400", s)
	}
	if s := get(own, cb); s != http.StatusBadRequest {
		t.Errorf("the flow's own browser after the refusal: %d, want 400 (single use)", s)
	}

	// iss naming another server (a mix-up).
	cb, own = r.stopAtCallback(t, dave)
	if s := get(own, strings.Replace(cb, "iss=", "iss=https%3A%2F%2Fevil.example.com&x=", 1)); s != http.StatusBadRequest {
		t.Errorf("another iss: %d, want 400", s)
	}

	// The right callback works once; a replay is refused.
	cb, own = r.stopAtCallback(t, dave)
	if s := get(own, cb); s != http.StatusOK {
		t.Fatalf("the right callback: %d", s)
	}
	if !stored() {
		t.Fatal("no token after the right callback")
	}
	if _, err := r.m.Disconnect(ctx, r.spec.ID, dave); err != nil {
		t.Fatal(err)
	}
	if s := get(own, cb); s != http.StatusBadRequest || stored() {
		t.Errorf("replayed callback: %d, stored %v; want 400 and nothing stored", s, stored())
	}

	// An expired link, and one nobody opened.
	le, err := r.m.Login(ctx, r.spec, dave, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.Login(ctx, r.spec, dave, ""); err != nil {
		t.Fatal(err)
	}
	r.offset.Store(int64(upstreamauth.LinkTTL + time.Minute))
	resp, err := http.PostForm(le.URL, url.Values{})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGone {
		t.Errorf("expired link: %d, want 410", resp.StatusCode)
	}
	if n, err := r.m.Sweep(ctx); err != nil || n == 0 {
		t.Errorf("sweep: %d, %v; want the abandoned flows removed", n, err)
	}
	// Another browser, another iss, the expired link.
	if n := r.audited("upstream_auth/login", "denied"); n != 3 {
		t.Errorf("%d refused logins audited, want 3", n)
	}
}

// TestClientIdentity: a configured client is used as it is; a server
// supporting client ID metadata documents fetches the gateway's; the
// configured authorization server skips discovery.
func TestClientIdentity(t *testing.T) {
	t.Parallel()
	t.Run("metadata document", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, authtest.Options{CIMD: true, DCR: true}, config.UpstreamAuth{Type: config.UpstreamOAuth})
		r.login(t, caller("erin"), "erin")
		if r.as.MetadataFetches.Load() != 1 || r.as.Registrations.Load() != 0 {
			t.Errorf("%d document fetches, %d registrations; want the document and no registration",
				r.as.MetadataFetches.Load(), r.as.Registrations.Load())
		}
	})
	t.Run("configured client and server", func(t *testing.T) {
		t.Parallel()
		secret := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		as := authtest.Options{Clients: map[string]string{"hangar-test": "s3cret"}, DCR: true, CIMD: true}
		r := newRig(t, as, config.UpstreamAuth{Type: config.UpstreamOAuth, ClientID: "hangar-test", ClientSecretFile: secret})
		r.spec.UpstreamAuth.AuthorizationServer = r.as.Issuer()
		r.login(t, caller("frank"), "frank")
		if r.as.MetadataFetches.Load() != 0 || r.as.Registrations.Load() != 0 || r.as.Unauthorized.Load() != 0 {
			t.Errorf("fetches %d, registrations %d, 401s %d; want the configured client and server only",
				r.as.MetadataFetches.Load(), r.as.Registrations.Load(), r.as.Unauthorized.Load())
		}
	})
	t.Run("no way to identify", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, authtest.Options{}, config.UpstreamAuth{Type: config.UpstreamOAuth})
		le, err := r.m.Login(t.Context(), r.spec, caller("gina"), "")
		if err != nil {
			t.Fatal(err)
		}
		status, page, _ := authtest.NewBrowser().Login(t.Context(), le.URL, "gina")
		if status != http.StatusBadGateway || !strings.Contains(page, "upstream_auth.client_id") {
			t.Errorf("%d %s; want 502 naming upstream_auth.client_id", status, page)
		}
	})
}

// TestServiceAndExchangedTokens: client_credentials gets one service
// token; token_exchange trades the caller's JWT for a token of theirs.
func TestServiceAndExchangedTokens(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("svc-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	o := authtest.Options{Clients: map[string]string{"svc": "svc-secret"}, SubjectKey: &key.PublicKey}

	r := newRig(t, o, config.UpstreamAuth{Type: config.UpstreamClientCredentials, ClientID: "svc", ClientSecretFile: secret})
	tok, err := r.m.Token(ctx, r.spec, auth.Identity{})
	if err != nil {
		t.Fatal(err)
	}
	if user, ok := r.as.UserOf(ctx, tok.AccessToken); !ok || user != "service:svc" {
		t.Errorf("service token is %q's (%v)", user, ok)
	}

	x := newRig(t, o, config.UpstreamAuth{Type: config.UpstreamTokenExchange, ClientID: "svc", ClientSecretFile: secret, Audience: "upstream"})
	x.spec.UpstreamAuth.TokenEndpoint = x.as.Issuer() + "/token"
	hank := jwtCaller(t, key, "hank")
	tok, err = x.m.Token(ctx, x.spec, hank)
	if err != nil {
		t.Fatal(err)
	}
	if user, ok := x.as.UserOf(ctx, tok.AccessToken); !ok || user != "hank" {
		t.Errorf("exchanged token is %q's (%v)", user, ok)
	}
	if _, err := x.m.Token(ctx, x.spec, caller("no-jwt")); err == nil {
		t.Error("a caller without a JWT got an exchanged token")
	}
	if x.count("gh/exchange/ok") != 1 {
		t.Error("the exchange was not counted")
	}
	// The same JWT again: the exchanged token is kept. A new JWT of the
	// same caller is exchanged anew, and its token replaces the first.
	// (The test server's tokens live 5 s, the margin before their end is
	// 5 s: the manager's clock is set back for the token to be usable.)
	x.offset.Store(int64(-3 * time.Second))
	if again, err := x.m.Token(ctx, x.spec, hank); err != nil || again.AccessToken != tok.AccessToken || x.count("gh/exchange/ok") != 1 {
		t.Errorf("the same JWT again: %v, same token %v, %d exchanges; want the kept token", err, err == nil && again.AccessToken == tok.AccessToken, x.count("gh/exchange/ok"))
	}
	if renewed, err := x.m.Token(ctx, x.spec, jwtCaller(t, key, "hank")); err != nil || renewed.AccessToken == tok.AccessToken || x.count("gh/exchange/ok") != 2 {
		t.Errorf("a new JWT: %v, %d exchanges; want a new exchange", err, x.count("gh/exchange/ok"))
	}
}

// jwtCaller is the identity the gateway gives a caller with a JWT of
// key's for sub.
func jwtCaller(t *testing.T, key *rsa.PrivateKey, sub string) auth.Identity {
	t.Helper()
	const iss, aud = "https://idp.example.com", "https://hangar.example.com/mcp"
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(sig).Claims(jwt.Claims{ID: rand.Text(), Issuer: iss, Subject: sub, Audience: jwt.Audience{aud},
		Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour))}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	au := auth.NewAuthenticator(t.Context(), config.Auth{OIDC: config.OIDC{Issuer: iss, Audience: aud}},
		auth.Options{KeySet: &oidc.StaticKeySet{PublicKeys: []crypto.PublicKey{&key.PublicKey}}})
	id, _, err := au.Authenticate(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func newJar() http.CookieJar {
	jar, _ := cookiejar.New(nil)
	return jar
}

// TestStartPage: a login link's page names the server and the hangar
// identity the token will belong to, as text, and its button posts to
// the link itself; an unknown link says so.
func TestStartPage(t *testing.T) {
	t.Parallel()
	r := newRig(t, authtest.Options{DCR: true}, config.UpstreamAuth{Type: config.UpstreamOAuth})
	who := caller(`<b>eve</b> "&"`)
	le, err := r.m.Login(t.Context(), r.spec, who, "")
	if err != nil {
		t.Fatal(err)
	}
	get := func(u string) (int, string) {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	link, err := url.Parse(le.URL)
	if err != nil {
		t.Fatal(err)
	}
	status, page := get(le.URL)
	for _, want := range []string{
		"<title>hangar: Connect gh</title>", "<h1>Connect gh</h1>",
		`hangar identity &#34;&lt;b&gt;eve&lt;/b&gt; \&#34;&amp;\&#34;&#34;`,
		`<form method="post" action="` + link.Path + `"><button type="submit">Continue to log in</button></form>`,
	} {
		if status != http.StatusOK || !strings.Contains(page, want) {
			t.Errorf("the link's page (%d) lacks %s:\n%s", status, want, page)
		}
	}
	if strings.Contains(page, "<b>eve") {
		t.Errorf("the identity's name is markup:\n%s", page)
	}
	if status, page := get(r.gw.URL + upstreamauth.StartPath + "nope"); status != http.StatusNotFound || !strings.Contains(page, "<h1>Link not valid</h1>") || strings.Contains(page, "<form") {
		t.Errorf("an unknown link: %d\n%s", status, page)
	}
}

// TestLoginNotStartedHidesCredentials: a login that cannot start (the
// upstream publishes no OAuth metadata) says why on the page, in the log
// and in the audit, without the credential the endpoint's URL carries.
func TestLoginNotStartedHidesCredentials(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-key"
	r := newRig(t, authtest.Options{DCR: true}, config.UpstreamAuth{Type: config.UpstreamOAuth})
	bare := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(bare.Close)
	r.spec.Endpoint = bare.URL + "/mcp?api_key=" + secret
	le, err := r.m.Login(t.Context(), r.spec, caller("dan"), "")
	if err != nil {
		t.Fatal(err)
	}
	status, page, err := authtest.NewBrowser().Login(t.Context(), le.URL, "dan")
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusBadGateway || !strings.Contains(page, "Login not started") || !strings.Contains(page, "no protected resource metadata") {
		t.Fatalf("login to an upstream that does not answer: %d\n%s", status, page)
	}
	if strings.Contains(page, secret) || strings.Contains(r.logs.String(), secret) {
		t.Errorf("the endpoint's credential is on the page or in the log:\n%s\n%s", page, r.logs.String())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.entries {
		if strings.Contains(e.Reason, secret) {
			t.Errorf("the endpoint's credential is in the audit: %q", e.Reason)
		}
	}
}
