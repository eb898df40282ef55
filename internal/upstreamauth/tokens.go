package upstreamauth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/store"
)

// recheckStore bounds how long a token read from the keystore is used
// before the keystore is read again: a disconnect or a refusal on another
// replica takes effect here within it.
const recheckStore = 2 * time.Second

// cachedToken is one subject's token for one server, as last read; its
// lock makes one refresh at a time.
type cachedToken struct {
	mu     sync.Mutex
	rec    *tokenRecord
	readAt time.Time
}

func (m *Manager) entry(ref string) *cachedToken {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.cache[ref]
	if !ok {
		c = &cachedToken{}
		m.cache[ref] = c
	}
	return c
}

func (m *Manager) forgetCached(ref string) {
	m.mu.Lock()
	delete(m.cache, ref)
	m.mu.Unlock()
}

// Token is the access token to present to spec's upstream for caller:
// theirs (oauth: refreshed when near its end; token_exchange: exchanged
// from their own JWT) or the service's (client_credentials). An error
// for which IsNoToken holds means the caller must log in (Login).
func (m *Manager) Token(ctx context.Context, spec *config.Server, caller auth.Identity) (*oauth2.Token, error) {
	switch spec.UpstreamAuth.Type {
	case config.UpstreamOAuth:
		return m.userToken(ctx, spec, caller)
	case config.UpstreamTokenExchange:
		return m.exchangeToken(ctx, spec, caller)
	case config.UpstreamClientCredentials:
		return m.serviceToken(ctx, spec)
	}
	return nil, fmt.Errorf("upstream_auth: %s: unknown type", describe(spec))
}

func (m *Manager) userToken(ctx context.Context, spec *config.Server, caller auth.Identity) (*oauth2.Token, error) {
	subj, err := SubjectOf(caller)
	if err != nil {
		return nil, err
	}
	ref := tokenRef(subj, spec.ID)
	c := m.entry(ref)
	c.mu.Lock()
	defer c.mu.Unlock()
	now := m.o.Now()
	if c.rec != nil && now.Sub(c.readAt) < recheckStore && c.rec.fresh(now) {
		return c.rec.token(), nil
	}
	// The keystore has the latest: a login, or a refresh by another
	// replica (whose old refresh token the server may have revoked).
	var rec tokenRecord
	if err := m.getSealed(ctx, ref, &rec); errors.Is(err, store.ErrNotFound) {
		c.rec = nil
		return nil, errNoToken
	} else if err != nil {
		return nil, fmt.Errorf("upstream_auth: read the token of %s for %s: %w", caller.Name, spec.ID, err)
	}
	c.rec, c.readAt = &rec, now
	if rec.fresh(now) {
		return rec.token(), nil
	}
	if rec.Refresh == "" {
		m.drop(ctx, ref, spec.ID, caller.Name, "expired, and no refresh token")
		return nil, errNoToken
	}
	next, err := m.refresh(ctx, spec, &rec)
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && (re.ErrorCode == "invalid_grant" || re.ErrorCode == "invalid_client" || re.ErrorCode == "unauthorized_client") {
			m.drop(ctx, ref, spec.ID, caller.Name, "refresh refused by the authorization server: "+shortCode(re.ErrorCode))
			return nil, errNoToken
		}
		m.event(ctx, spec.ID, caller.Name, EventRefresh, OutcomeError, oauthErrorCode(err))
		return nil, fmt.Errorf("upstream_auth: refresh the token of %s for %s: %s", caller.Name, spec.ID, oauthErrorCode(err))
	}
	if err := m.putSealed(ctx, ref, next); err != nil {
		return nil, fmt.Errorf("upstream_auth: keep the refreshed token: %w", err)
	}
	c.rec, c.readAt = next, m.o.Now()
	m.event(ctx, spec.ID, caller.Name, EventRefresh, OutcomeOK, "")
	return next.token(), nil
}

// refresh uses rec's refresh token. It is a token request like the
// code's, so it carries the resource too (RFC 8707, as the MCP
// specification asks of every token request); a server that rotates
// refresh tokens sends a new one, else the old one stays.
func (m *Manager) refresh(ctx context.Context, spec *config.Server, rec *tokenRecord) (*tokenRecord, error) {
	secret, err := m.secretOf(ctx, spec, rec)
	if err != nil {
		return nil, err
	}
	cfg := oauth2.Config{ClientID: rec.ClientID, ClientSecret: secret,
		Endpoint: oauth2.Endpoint{TokenURL: rec.TokenURL, AuthStyle: rec.AuthStyle}}
	// Exchange with the grant type replaced is oauth2's only way to send
	// a token request with extra parameters; the empty code is ignored
	// (RFC 6749 §3.2: a parameter without a value is as if omitted).
	tok, err := cfg.Exchange(m.withClient(ctx), "",
		oauth2.SetAuthURLParam("grant_type", "refresh_token"),
		oauth2.SetAuthURLParam("refresh_token", rec.Refresh),
		oauth2.SetAuthURLParam("resource", rec.Resource))
	if err != nil {
		return nil, err
	}
	next := *rec
	next.Access, next.Type, next.Expiry, next.Issued = tok.AccessToken, tok.TokenType, tok.Expiry, m.o.Now()
	if tok.RefreshToken != "" {
		next.Refresh = tok.RefreshToken
	}
	return &next, nil
}

// drop removes a token the upstream or its server refused.
func (m *Manager) drop(ctx context.Context, ref, server, who, reason string) {
	if err := m.o.Secrets.DeleteSecret(ctx, ref); err != nil {
		m.o.Log.Warn("upstream_auth: refused token not removed", "mcp_server", server, "identity", who, "error", err)
	}
	m.forgetCached(ref)
	m.event(ctx, server, who, EventRefused, OutcomeDenied, reason)
}

// Refused is told that spec's upstream refused the token it was given for
// caller (401): the token is dropped, and the caller asked to log in
// again (oauth), or a new one is got (token_exchange, client_credentials).
func (m *Manager) Refused(ctx context.Context, spec *config.Server, caller auth.Identity) {
	switch spec.UpstreamAuth.Type {
	case config.UpstreamOAuth:
		subj, err := SubjectOf(caller)
		if err != nil {
			return
		}
		m.drop(ctx, tokenRef(subj, spec.ID), spec.ID, caller.Name, "refused by the upstream (401)")
	case config.UpstreamTokenExchange:
		if subj, err := SubjectOf(caller); err == nil {
			m.forgetExchanged(subj, spec.ID)
		}
		m.event(ctx, spec.ID, caller.Name, EventRefused, OutcomeDenied, "exchanged token refused by the upstream (401)")
	case config.UpstreamClientCredentials:
		m.mu.Lock()
		delete(m.service, spec.ID)
		m.mu.Unlock()
		m.event(ctx, spec.ID, caller.Name, EventRefused, OutcomeDenied, "service token refused by the upstream (401)")
	}
}

// exchanged is the last token_exchange result of one subject for one
// server, and the JWT it was exchanged for (hashed): a caller's new JWT is
// exchanged anew and replaces it, so there is one per subject and server.
type exchanged struct {
	jwt string
	tok *oauth2.Token
}

func exchangeKey(s Subject, server string) string { return s.key() + "\x00" + server }

func (m *Manager) forgetExchanged(s Subject, server string) {
	m.mu.Lock()
	delete(m.exchanged, exchangeKey(s, server))
	m.mu.Unlock()
}

// Subject token types of RFC 8693.
const (
	tokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
)

// exchangeToken exchanges the caller's own JWT for an upstream token (RFC
// 8693). Exchanged tokens stay in memory only, the last one per caller
// and server: any replica can exchange the caller's JWT again.
func (m *Manager) exchangeToken(ctx context.Context, spec *config.Server, caller auth.Identity) (*oauth2.Token, error) {
	jwt := caller.Bearer()
	if jwt == "" {
		return nil, errors.New("upstream_auth: token_exchange needs the caller's bearer JWT (auth.oidc); this caller has none")
	}
	subj, err := SubjectOf(caller)
	if err != nil {
		return nil, err
	}
	key, jwtHash := exchangeKey(subj, spec.ID), hashHex(jwt)
	now := m.o.Now()
	m.mu.Lock()
	if x, ok := m.exchanged[key]; ok && x.jwt == jwtHash && (x.tok.Expiry.IsZero() || now.Add(5*time.Second).Before(x.tok.Expiry)) {
		m.mu.Unlock()
		return x.tok, nil
	}
	m.mu.Unlock()
	ua := spec.UpstreamAuth
	secret, err := readSecretFile(ua.ClientSecretFile)
	if err != nil {
		return nil, err
	}
	creds := &oauthex.ClientCredentials{ClientID: ua.ClientID}
	if secret != "" {
		creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
	}
	resource := ua.Resource
	if resource == "" {
		resource = spec.Endpoint
	}
	tok, err := oauthex.ExchangeToken(ctx, ua.TokenEndpoint, &oauthex.TokenExchangeRequest{
		RequestedTokenType: tokenTypeAccessToken,
		Audience:           ua.Audience,
		Resource:           resource,
		Scope:              ua.Scopes,
		SubjectToken:       jwt,
		SubjectTokenType:   tokenTypeAccessToken,
	}, creds, m.o.HTTP)
	if err != nil {
		m.event(ctx, spec.ID, caller.Name, EventExchange, OutcomeError, oauthErrorCode(err))
		return nil, fmt.Errorf("upstream_auth: token exchange for %s: %s", spec.ID, oauthErrorCode(err))
	}
	m.mu.Lock()
	m.exchanged[key] = exchanged{jwt: jwtHash, tok: tok}
	m.mu.Unlock()
	m.event(ctx, spec.ID, caller.Name, EventExchange, OutcomeOK, "")
	return tok, nil
}

// serviceSource is a client_credentials token source and the token it
// gave last (to tell a new one, which is audited).
type serviceSource struct {
	key  string
	src  oauth2.TokenSource
	last string
}

// serviceToken is the one service token of a client_credentials server.
func (m *Manager) serviceToken(ctx context.Context, spec *config.Server) (*oauth2.Token, error) {
	ua := spec.UpstreamAuth
	key := discoveryKey(spec) + "\x00" + ua.ClientID
	m.mu.Lock()
	s, ok := m.service[spec.ID]
	m.mu.Unlock()
	if !ok || s.key != key {
		d, err := m.discover(ctx, spec)
		if err != nil {
			return nil, err
		}
		secret, err := readSecretFile(ua.ClientSecretFile)
		if err != nil {
			return nil, err
		}
		cfg := clientcredentials.Config{ClientID: ua.ClientID, ClientSecret: secret, TokenURL: d.meta.TokenEndpoint,
			Scopes: d.scopes, EndpointParams: map[string][]string{"resource": {d.resource}}}
		// The source outlives this call: its refreshes must not end with it.
		s = &serviceSource{key: key, src: cfg.TokenSource(m.withClient(context.WithoutCancel(ctx)))}
		m.mu.Lock()
		m.service[spec.ID] = s
		m.mu.Unlock()
	}
	tok, err := s.src.Token()
	if err != nil {
		m.event(ctx, spec.ID, "", EventClientCredentials, OutcomeError, oauthErrorCode(err))
		return nil, fmt.Errorf("upstream_auth: client_credentials for %s: %s", spec.ID, oauthErrorCode(err))
	}
	m.mu.Lock()
	fresh := s.last != tok.AccessToken
	s.last = tok.AccessToken
	m.mu.Unlock()
	if fresh {
		m.event(ctx, spec.ID, "", EventClientCredentials, OutcomeOK, "")
	}
	return tok, nil
}
