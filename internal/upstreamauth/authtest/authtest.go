// Package authtest runs, inside a test process, an OAuth 2.1
// authorization server (github.com/ory/fosite) and an MCP server it
// protects, as an upstream with upstream_auth sees them: PKCE S256 and
// the RFC 8707 resource parameter are required on every authorization and
// token request, access tokens live AccessTokenTTL, refresh tokens are
// issued and rotated, clients register dynamically (RFC 7591) or by a
// Client ID Metadata Document, and the MCP server answers 401 with its
// Protected Resource Metadata (RFC 9728) until it gets a token, then
// answers whoami with the token's user.
//
// A Browser plays the user: it opens a login link, logs in as a named
// user and follows the redirects back to the gateway's callback.
package authtest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	"github.com/ory/fosite/storage"
)

// AccessTokenTTL is how long the server's access tokens live.
const AccessTokenTTL = 5 * time.Second

// Scope is the scope the protected server asks for.
const Scope = "mcp:tools"

// Options choose how the authorization server lets clients identify
// themselves.
type Options struct {
	// DCR serves a registration endpoint (RFC 7591).
	DCR bool
	// CIMD accepts Client ID Metadata Documents.
	CIMD bool
	// Clients are registered beforehand: id → secret ("" for a public
	// client).
	Clients map[string]string
	// RedirectURI is the pre-registered Clients' redirect URI.
	RedirectURI string
	// SubjectKey verifies the JWTs a token exchange (RFC 8693) is asked
	// for; nil: no token exchange.
	SubjectKey *rsa.PublicKey
}

// Server is the authorization server and the protected MCP server.
type Server struct {
	// AS is the authorization server (its URL is the issuer).
	AS *httptest.Server
	// MCP is the protected MCP server; its endpoint is MCP.URL + "/mcp".
	MCP *httptest.Server

	provider fosite.OAuth2Provider
	store    *clientStore
	opts     Options

	// Counters for assertions.
	Registrations   atomic.Int32 // dynamic registrations
	MetadataFetches atomic.Int32 // client ID metadata documents fetched
	Refreshes       atomic.Int32 // refresh grants served
	Exchanges       atomic.Int32 // authorization codes exchanged
	MissingResource atomic.Int32 // requests refused for a missing or wrong resource
	Unauthorized    atomic.Int32 // MCP requests answered 401

	mu        sync.Mutex
	seen      map[string]string // access token → user, as the MCP server saw them
	revoked   map[string]bool   // users whose tokens are refused
	exchanged map[string]exchangedToken
}

// exchangedToken is a token a token exchange issued.
type exchangedToken struct {
	user    string
	expires time.Time
}

// Endpoint is the protected MCP server's URL.
func (s *Server) Endpoint() string { return s.MCP.URL + "/mcp" }

// Issuer is the authorization server's issuer.
func (s *Server) Issuer() string { return s.AS.URL }

// clientStore is fosite's memory store with clients added at run time
// under a lock of its own.
type clientStore struct {
	*storage.MemoryStore
	resource string // every client's tokens are for it
	mu       sync.RWMutex
	clients  map[string]fosite.Client
}

func (c *clientStore) GetClient(_ context.Context, id string) (fosite.Client, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if cl, ok := c.clients[id]; ok {
		return cl, nil
	}
	return nil, fosite.ErrNotFound
}

func (c *clientStore) add(cl *fosite.DefaultClient) {
	cl.Audience = []string{c.resource}
	c.mu.Lock()
	c.clients[cl.ID] = cl
	c.mu.Unlock()
}

func (c *clientStore) has(id string) bool {
	_, err := c.GetClient(context.Background(), id)
	return err == nil
}

// New starts both servers; Close stops them.
func New(o Options) *Server {
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	s := &Server{opts: o, seen: map[string]string{}, revoked: map[string]bool{}, exchanged: map[string]exchangedToken{},
		store: &clientStore{MemoryStore: storage.NewMemoryStore(), clients: map[string]fosite.Client{}}}
	s.AS = httptest.NewUnstartedServer(nil)
	s.AS.Start()
	s.MCP = httptest.NewUnstartedServer(nil)
	s.MCP.Start()
	s.MCP.Config.Handler = s.mcpHandler()
	s.store.resource = s.Resource()
	cfg := &fosite.Config{
		AccessTokenLifespan:            AccessTokenTTL,
		RefreshTokenLifespan:           time.Hour,
		AuthorizeCodeLifespan:          time.Minute,
		EnforcePKCE:                    true,
		EnablePKCEPlainChallengeMethod: false,
		RefreshTokenScopes:             []string{}, // every code grant gets a refresh token
		GlobalSecret:                   secret,
		HashCost:                       4, // bcrypt's least: test clients' secrets
		AccessTokenIssuer:              s.AS.URL,
		TokenURL:                       s.AS.URL + "/token",
		SendDebugMessagesToClients:     true,
	}
	s.provider = compose.Compose(cfg, s.store, &compose.CommonStrategy{CoreStrategy: compose.NewOAuth2HMACStrategy(cfg)},
		compose.OAuth2AuthorizeExplicitFactory, compose.OAuth2ClientCredentialsGrantFactory, compose.OAuth2RefreshTokenGrantFactory,
		compose.OAuth2TokenIntrospectionFactory, compose.OAuth2PKCEFactory)
	for id, sec := range o.Clients {
		cl := &fosite.DefaultClient{ID: id, Public: sec == "", RedirectURIs: []string{o.RedirectURI}, GrantTypes: []string{"authorization_code", "refresh_token", "client_credentials"},
			ResponseTypes: []string{"code"}, Scopes: []string{Scope}}
		if sec != "" {
			h, _ := s.provider.(*fosite.Fosite).Config.GetSecretsHasher(context.Background()).Hash(context.Background(), []byte(sec))
			cl.Secret = h
		}
		s.store.add(cl)
	}
	as := http.NewServeMux()
	as.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	as.HandleFunc("/authorize", s.authorize)
	as.HandleFunc("POST /token", s.token)
	if o.DCR {
		as.HandleFunc("POST /register", s.register)
	}
	s.AS.Config.Handler = as

	return s
}

// Close stops both servers.
func (s *Server) Close() {
	s.MCP.Close()
	s.AS.Close()
}

// Resource is what every token of this server must be for.
func (s *Server) Resource() string { return s.Endpoint() }

func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	m := map[string]any{
		"issuer":                                         s.AS.URL,
		"authorization_endpoint":                         s.AS.URL + "/authorize",
		"token_endpoint":                                 s.AS.URL + "/token",
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token", "client_credentials"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none", "client_secret_basic", "client_secret_post"},
		"scopes_supported":                               []string{Scope},
		"authorization_response_iss_parameter_supported": true,
	}
	if s.opts.DCR {
		m["registration_endpoint"] = s.AS.URL + "/register"
	}
	if s.opts.CIMD {
		m["client_id_metadata_document_supported"] = true
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(m)
}

// register is dynamic client registration: a public client with the
// redirect URIs it asks for.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil || len(req.RedirectURIs) == 0 {
		http.Error(w, `{"error":"invalid_client_metadata"}`, http.StatusBadRequest)
		return
	}
	id := "dcr-" + rand.Text()
	s.store.add(&fosite.DefaultClient{ID: id, Public: true, RedirectURIs: req.RedirectURIs,
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}, Scopes: []string{Scope}})
	s.Registrations.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{"client_id": id, "redirect_uris": req.RedirectURIs,
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}})
}

// knowClient registers a client named by its metadata document's URL on
// first sight, as a server supporting them does.
func (s *Server) knowClient(ctx context.Context, id string) error {
	if !s.opts.CIMD || !strings.HasPrefix(id, "http") || s.store.has(id) {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	s.MetadataFetches.Add(1)
	var doc struct {
		ClientID     string   `json:"client_id"`
		RedirectURIs []string `json:"redirect_uris"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&doc); err != nil {
		return err
	}
	if doc.ClientID != id {
		return fmt.Errorf("client metadata document names client_id %q, not its own URL %q", doc.ClientID, id)
	}
	s.store.add(&fosite.DefaultClient{ID: id, Public: true, RedirectURIs: doc.RedirectURIs,
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}, Scopes: []string{Scope}})
	return nil
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html><title>test login</title>
<form method="post" action="{{.}}"><input name="user"><button>Log in</button></form>`))

// authorize shows a login form (GET) and grants the code to whoever logs
// in (POST), for the resource the MCP server is, only.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	_ = r.ParseForm()
	if err := s.knowClient(ctx, r.Form.Get("client_id")); err != nil {
		http.Error(w, "client metadata document: "+err.Error(), http.StatusBadRequest)
		return
	}
	ar, err := s.provider.NewAuthorizeRequest(ctx, r)
	if err != nil {
		s.provider.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	if r.Form.Get("resource") != s.Resource() {
		s.MissingResource.Add(1)
		s.provider.WriteAuthorizeError(ctx, w, ar, fosite.ErrInvalidRequest.WithHint("resource must be "+s.Resource()+" (RFC 8707)"))
		return
	}
	if r.Method != http.MethodPost || r.PostForm.Get("user") == "" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = loginPage.Execute(w, "/authorize?"+r.URL.RawQuery)
		return
	}
	user := r.PostForm.Get("user")
	for _, sc := range ar.GetRequestedScopes() {
		ar.GrantScope(sc)
	}
	ar.GrantAudience(s.Resource())
	resp, err := s.provider.NewAuthorizeResponse(ctx, ar, &fosite.DefaultSession{Subject: user, Username: user})
	if err != nil {
		s.provider.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	resp.AddParameter("iss", s.AS.URL) // RFC 9207
	s.provider.WriteAuthorizeResponse(ctx, w, ar, resp)
}

// token serves the code, refresh and client credentials grants; the
// first two only with the resource.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	grant := r.PostForm.Get("grant_type")
	if grant == grantTokenExchange && s.opts.SubjectKey != nil {
		s.exchange(w, r)
		return
	}
	if err := s.knowClient(ctx, r.PostForm.Get("client_id")); err != nil {
		http.Error(w, `{"error":"invalid_client"}`, http.StatusBadRequest)
		return
	}
	if r.PostForm.Get("resource") != s.Resource() {
		s.MissingResource.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"invalid_target","error_description":"resource must name the MCP server (RFC 8707)"}`))
		return
	}
	session := &fosite.DefaultSession{}
	ar, err := s.provider.NewAccessRequest(ctx, r, session)
	if err != nil {
		s.provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	switch grant {
	case "client_credentials":
		for _, sc := range ar.GetRequestedScopes() {
			ar.GrantScope(sc)
		}
		ar.GrantAudience(s.Resource())
		session.Subject = "service:" + ar.GetClient().GetID()
	case "refresh_token":
		s.Refreshes.Add(1)
	case "authorization_code":
		s.Exchanges.Add(1)
	}
	resp, err := s.provider.NewAccessResponse(ctx, ar)
	if err != nil {
		s.provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	s.provider.WriteAccessResponse(ctx, w, ar, resp)
}

const grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"

// exchange is RFC 8693's token exchange: a confidential client trades a
// JWT of the configured issuer's for an access token of the MCP server.
func (s *Server) exchange(w http.ResponseWriter, r *http.Request) {
	fail := func(code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"error":%q}`, code)
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if want, known := s.opts.Clients[id]; !known || want == "" || want != secret {
		fail("invalid_client")
		return
	}
	if r.PostForm.Get("resource") != s.Resource() {
		s.MissingResource.Add(1)
		fail("invalid_target")
		return
	}
	tok, err := jwt.ParseSigned(r.PostForm.Get("subject_token"), []jose.SignatureAlgorithm{jose.RS256})
	var claims jwt.Claims
	if err != nil || tok.Claims(s.opts.SubjectKey, &claims) != nil || claims.Subject == "" ||
		claims.ValidateWithLeeway(jwt.Expected{Time: time.Now()}, 0) != nil {
		fail("invalid_grant")
		return
	}
	access := "xchg-" + rand.Text()
	s.mu.Lock()
	s.exchanged[access] = exchangedToken{user: claims.Subject, expires: time.Now().Add(AccessTokenTTL)}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "Bearer",
		"issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "expires_in": int(AccessTokenTTL / time.Second)})
}

// UserOf is whom the MCP server takes token for ("" and false: it
// refuses it).
func (s *Server) UserOf(ctx context.Context, token string) (string, bool) {
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	return s.check(r)
}

// Revoke makes the MCP server refuse every token of user from now on, as
// if the upstream revoked the grant.
func (s *Server) Revoke(user string) {
	s.mu.Lock()
	s.revoked[user] = true
	s.mu.Unlock()
}

// Unrevoke lets user's new tokens in again.
func (s *Server) Unrevoke(user string) {
	s.mu.Lock()
	delete(s.revoked, user)
	s.mu.Unlock()
}

// Tokens are the access tokens the MCP server accepted, by token, with
// their user.
func (s *Server) Tokens() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.seen))
	for k, v := range s.seen {
		out[k] = v
	}
	return out
}

type userKey struct{}

// mcpHandler is the protected MCP server: 401 with the metadata's URL
// without a valid token for its resource; whoami answers the token's
// user.
func (s *Server) mcpHandler() http.Handler {
	srv := server.NewMCPServer("protected", "1.0.0")
	srv.AddTool(mcp.NewTool("whoami", mcp.WithDescription("Who the upstream thinks you are.")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			user, _ := ctx.Value(userKey{}).(string)
			return mcp.NewToolResultText("user=" + user), nil
		})
	streamable := server.NewStreamableHTTPServer(srv, server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, userKey{}, r.Context().Value(userKey{}))
	}))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"resource": s.Resource(), "authorization_servers": []string{s.AS.URL},
			"scopes_supported": []string{Scope}, "bearer_methods_supported": []string{"header"}})
	})
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok := s.check(r)
		if !ok {
			s.Unauthorized.Add(1)
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+s.MCP.URL+`/.well-known/oauth-protected-resource/mcp", scope="`+Scope+`"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		streamable.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
	}))
	return mux
}

// check is the resource server's token check: an active access token of
// this server's authorization server, granted for this resource, of a
// user not revoked.
func (s *Server) check(r *http.Request) (string, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return "", false
	}
	s.mu.Lock()
	x, isExchanged := s.exchanged[tok]
	s.mu.Unlock()
	if isExchanged {
		if time.Now().After(x.expires) {
			return "", false
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.revoked[x.user] {
			return "", false
		}
		s.seen[tok] = x.user
		return x.user, true
	}
	_, ar, err := s.provider.IntrospectToken(r.Context(), tok, fosite.AccessToken, &fosite.DefaultSession{})
	if err != nil {
		return "", false
	}
	aud := false
	for _, a := range ar.GetGrantedAudience() {
		aud = aud || a == s.Resource()
	}
	user := ar.GetSession().GetSubject()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !aud || s.revoked[user] {
		return "", false
	}
	s.seen[tok] = user
	return user, true
}

// Browser is a user's browser: cookies kept, redirects followed.
type Browser struct {
	c    *http.Client
	last *url.URL // where the last answer came from
}

// NewBrowser returns a browser with a cookie jar of its own.
func NewBrowser() *Browser {
	jar, _ := cookiejar.New(nil)
	return &Browser{c: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

// Login opens link (the gateway's login link), confirms it, logs in as
// user at the authorization server and follows the redirect to the
// callback. It returns the callback's status and page.
func (b *Browser) Login(ctx context.Context, link, user string) (int, string, error) {
	// The link's page, then its button.
	if _, _, err := b.do(ctx, http.MethodGet, link, nil); err != nil {
		return 0, "", err
	}
	status, body, err := b.do(ctx, http.MethodPost, link, url.Values{})
	if err != nil {
		return 0, "", err
	}
	if !strings.Contains(body, `name="user"`) {
		return status, body, nil // no login form: the gateway refused
	}
	// The login form posts back to the authorize URL it came from.
	action := between(body, `action="`, `"`)
	action = html.UnescapeString(action)
	return b.do(ctx, http.MethodPost, b.last.Scheme+"://"+b.last.Host+action, url.Values{"user": {user}})
}

// Get fetches a URL in this browser.
func (b *Browser) Get(ctx context.Context, u string) (int, string, error) {
	return b.do(ctx, http.MethodGet, u, nil)
}

func (b *Browser) do(ctx context.Context, method, u string, form url.Values) (int, string, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return 0, "", err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b.last = resp.Request.URL
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(data), err
}

func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, to)
	return v
}
