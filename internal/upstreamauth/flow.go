package upstreamauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/markup"
	"github.com/mcp-hangar/hangar/internal/redact"
)

// A login goes: a call finds no token → Login stores a link record and
// answers LoginRequired with its URL → the user opens the link: a page
// says what will be connected for whom (GET; link scanners that fetch
// URLs do not use it up) → its button (POST) takes the link, stores the
// flow (PKCE verifier, state) and sets a cookie in that browser, then
// sends it to the authorization server → the callback takes the flow by
// its state, checks the cookie, iss and the code's exchange, and seals
// the token. Links and flows are taken once (store.TakeSecret), and their
// refs carry their expiry, so Sweep removes abandoned ones unopened.

// linkRecord is a login link, sealed under its ref.
type linkRecord struct {
	Subject       Subject   `json:"subject"`
	Server        string    `json:"server"`
	Session       string    `json:"session,omitempty"`
	ElicitationID string    `json:"elicitation_id"`
	Expires       time.Time `json:"expires"`
}

// flowRecord is an authorization code flow between the link and the
// callback.
type flowRecord struct {
	Subject       Subject          `json:"subject"`
	Server        string           `json:"server"`
	Session       string           `json:"session,omitempty"`
	ElicitationID string           `json:"elicitation_id"`
	Verifier      string           `json:"verifier"`
	Browser       string           `json:"browser"` // sha256 of the cookie's value
	Issuer        string           `json:"issuer"`
	IssRequired   bool             `json:"iss_required"`
	TokenURL      string           `json:"token_url"`
	AuthStyle     oauth2.AuthStyle `json:"auth_style"`
	ClientID      string           `json:"client_id"`
	ClientKind    string           `json:"client_kind"`
	Resource      string           `json:"resource"`
	RedirectURI   string           `json:"redirect_uri"`
	Expires       time.Time        `json:"expires"`
}

// secretToken is a random, URL-safe, unguessable string prefixed by its
// expiry (Unix seconds): the ref it is kept under says when it may go.
func secretToken(expires time.Time) string {
	return strconv.FormatInt(expires.Unix(), 10) + "." + rand.Text()
}

// refFor is the keystore ref of a link id or a state: its expiry and a
// hash, never the value itself (someone reading the store's refs cannot
// use them).
func refFor(prefix, tok string) (string, bool) {
	exp, rnd, ok := strings.Cut(tok, ".")
	if !ok || rnd == "" || len(tok) > 128 {
		return "", false
	}
	if _, err := strconv.ParseInt(exp, 10, 64); err != nil {
		return "", false
	}
	return prefix + exp + "/" + hashHex(tok), true
}

// Login makes a login link for the caller and spec: the answer to a call
// that found no token. session is the caller's MCP session (told when
// the login completes; "" for none).
func (m *Manager) Login(ctx context.Context, spec *config.Server, caller auth.Identity, session string) (*LoginRequired, error) {
	subj, err := SubjectOf(caller)
	if err != nil {
		return nil, err
	}
	base, err := m.publicURL()
	if err != nil {
		return nil, err
	}
	m.sweepSometimes(ctx)
	exp := m.o.Now().Add(LinkTTL)
	id := secretToken(exp)
	ref, _ := refFor(refStarts, id)
	rec := linkRecord{Subject: subj, Server: spec.ID, Session: session, ElicitationID: rand.Text(), Expires: exp}
	if err := m.putSealed(ctx, ref, rec); err != nil {
		return nil, fmt.Errorf("upstream_auth: keep the login link: %w", err)
	}
	return &LoginRequired{
		Server:        spec.ID,
		URL:           base + StartPath + id,
		ElicitationID: rec.ElicitationID,
		Message:       fmt.Sprintf("hangar needs you to connect your %s account (log in once; hangar keeps and refreshes the token for you, as %s).", spec.ID, caller.Name),
	}, nil
}

// Handler serves the flow's paths: StartPath, CallbackPath and
// ClientMetadataPath. None needs a bearer token: a browser brings none.
func (m *Manager) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+StartPath+"{id}", m.startPage)
	mux.HandleFunc("POST "+StartPath+"{id}", m.start)
	mux.HandleFunc("GET "+CallbackPath, m.callback)
	mux.HandleFunc("GET "+ClientMetadataPath, m.clientMetadata)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' https: http:")
		w.Header().Set("Referrer-Policy", "no-referrer")
		mux.ServeHTTP(w, r)
	})
}

// pageData is what a page of the flow says; Link, when set, is the login
// link whose button (a POST) starts the login.
type pageData struct{ Title, Text, Link string }

// render writes the flow's page (markup.Writer: every value escaped).
func (m *Manager) render(w http.ResponseWriter, status int, d pageData) {
	var p markup.Writer
	p.M(`<!doctype html>
<html><head><meta charset="utf-8"><title>hangar: `)
	p.Text(d.Title)
	p.M(`</title>
<style>body{font-family:system-ui,sans-serif;max-width:36em;margin:4em auto;padding:0 1em}button{font-size:1em;padding:.5em 1.2em}</style>
</head><body><h1>`)
	p.Text(d.Title)
	p.M(`</h1><p>`)
	p.Text(d.Text)
	p.M("</p>\n")
	if d.Link != "" {
		p.M(`<form method="post" action="`)
		p.M(StartPath)
		p.URLPart(d.Link)
		p.M(`"><button type="submit">Continue to log in</button></form>`)
	}
	p.M("\n</body></html>\n")
	_ = p.Serve(w, status)
}

// deadLink is the one answer for a link that is unknown, used or expired.
const deadLink = "This login link is unknown, was used already or has expired. Call the tool again for a new one."

// startPage says what the link will connect, for whom, and waits for the
// user's click: reading it does not use the link up.
func (m *Manager) startPage(w http.ResponseWriter, r *http.Request) {
	var rec linkRecord
	ref, ok := refFor(refStarts, r.PathValue("id"))
	if !ok || m.getSealed(r.Context(), ref, &rec) != nil || !m.o.Now().Before(rec.Expires) {
		m.render(w, http.StatusNotFound, pageData{Title: "Link not valid", Text: deadLink})
		return
	}
	m.render(w, http.StatusOK, pageData{
		Title: "Connect " + rec.Server,
		Text:  fmt.Sprintf("You are about to log in to %s's authorization server. hangar will keep the token for hangar identity %q and use it only for that identity's calls to %s. Continue only if you asked your agent for this.", rec.Server, rec.Subject.Name, rec.Server),
		Link:  r.PathValue("id"),
	})
}

// start takes the link and sends the browser to the authorization server.
func (m *Manager) start(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var link linkRecord
	ref, ok := refFor(refStarts, r.PathValue("id"))
	if !ok || m.takeSealed(ctx, ref, &link) != nil {
		m.event(ctx, "", "", EventLogin, OutcomeDenied, "unknown or used login link")
		m.render(w, http.StatusNotFound, pageData{Title: "Link not valid", Text: deadLink})
		return
	}
	if !m.o.Now().Before(link.Expires) {
		m.event(ctx, link.Server, link.Subject.Name, EventLogin, OutcomeDenied, "login link expired")
		m.render(w, http.StatusGone, pageData{Title: "Link expired", Text: deadLink})
		return
	}
	authURL, cookie, err := m.begin(ctx, link)
	if err != nil {
		// The log, the audit and the page: no endpoint's credentials.
		why := redact.Text(err.Error())
		m.o.Log.Warn("upstream_auth: login not started", "mcp_server", link.Server, "identity", link.Subject.Name, "error", why)
		m.event(ctx, link.Server, link.Subject.Name, EventLogin, OutcomeError, "not started: "+why)
		m.render(w, http.StatusBadGateway, pageData{Title: "Login not started", Text: "hangar could not start the login to " + link.Server + ": " + why})
		return
	}
	http.SetCookie(w, cookie)
	http.Redirect(w, r, authURL, http.StatusSeeOther)
}

// begin stores the flow of link and returns where the browser goes and
// the cookie that binds the callback to it.
func (m *Manager) begin(ctx context.Context, link linkRecord) (string, *http.Cookie, error) {
	spec, ok := m.o.Spec(link.Server)
	if !ok || spec.UpstreamAuth == nil || spec.UpstreamAuth.Type != config.UpstreamOAuth {
		return "", nil, errors.New("the server no longer has upstream_auth type oauth")
	}
	d, err := m.discover(ctx, spec)
	if err != nil {
		return "", nil, err
	}
	ci, err := m.client(ctx, spec, d)
	if err != nil {
		return "", nil, err
	}
	redirect, err := m.redirectURI()
	if err != nil {
		return "", nil, err
	}
	exp := m.o.Now().Add(FlowTTL)
	state := secretToken(exp)
	ref, _ := refFor(refFlows, state)
	browser := rand.Text()
	flow := flowRecord{
		Subject: link.Subject, Server: link.Server, Session: link.Session, ElicitationID: link.ElicitationID,
		Verifier: oauth2.GenerateVerifier(), Browser: hashHex(browser),
		Issuer: d.meta.Issuer, IssRequired: d.meta.AuthorizationResponseIssParameterSupported,
		TokenURL: d.meta.TokenEndpoint, AuthStyle: ci.AuthStyle, ClientID: ci.ID, ClientKind: ci.Kind,
		Resource: d.resource, RedirectURI: redirect, Expires: exp,
	}
	if err := m.putSealed(ctx, ref, flow); err != nil {
		return "", nil, fmt.Errorf("keep the flow: %w", err)
	}
	cfg := oauth2.Config{ClientID: ci.ID, Endpoint: oauth2.Endpoint{AuthURL: d.meta.AuthorizationEndpoint}, RedirectURL: redirect, Scopes: d.scopes}
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(flow.Verifier), oauth2.SetAuthURLParam("resource", d.resource))
	m.event(ctx, link.Server, link.Subject.Name, EventLoginStarted, OutcomeOK, ci.Kind+" client")
	return authURL, &http.Cookie{
		Name: cookieName(state), Value: browser, Path: CallbackPath, MaxAge: int(FlowTTL / time.Second),
		HttpOnly: true, Secure: m.secure(), SameSite: http.SameSiteLaxMode,
	}, nil
}

// cookieName is per flow, so two logins in one browser do not collide.
func cookieName(state string) string { return "hangar_login_" + hashHex(state)[:16] }

// callback completes a flow. Whatever is wrong with it is a 4xx that
// changes nothing but using up the flow, and is audited.
func (m *Manager) callback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	state := q.Get("state")
	var flow flowRecord
	ref, ok := refFor(refFlows, state)
	if !ok || m.takeSealed(ctx, ref, &flow) != nil {
		m.event(ctx, "", "", EventCallback, OutcomeDenied, "unknown, used or forged state")
		m.render(w, http.StatusBadRequest, pageData{Title: "Login not accepted", Text: "This login is unknown or was completed already. Start again from your agent."})
		return
	}
	deny := func(status int, reason, text string) {
		m.event(ctx, flow.Server, flow.Subject.Name, EventLogin, OutcomeDenied, reason)
		m.render(w, status, pageData{Title: "Login not accepted", Text: text})
	}
	if !m.o.Now().Before(flow.Expires) {
		deny(http.StatusBadRequest, "flow expired", "This login took too long. Start again from your agent.")
		return
	}
	c, err := r.Cookie(cookieName(state))
	if err != nil || subtle.ConstantTimeCompare([]byte(hashHex(c.Value)), []byte(flow.Browser)) != 1 {
		deny(http.StatusBadRequest, "callback from another browser than the one that started the login",
			"This login was started in another browser. Start again from your agent, in this browser.")
		return
	}
	// RFC 9207: a server that says it sends iss must send its own.
	iss := q.Get("iss")
	if (flow.IssRequired && iss == "") || (iss != "" && iss != flow.Issuer) {
		deny(http.StatusBadRequest, "iss does not name the authorization server the login went to (RFC 9207)",
			"The answer did not come from the authorization server the login went to.")
		return
	}
	if e := q.Get("error"); e != "" {
		deny(http.StatusBadRequest, "authorization server: "+shortCode(e), "The authorization server did not grant access ("+shortCode(e)+").")
		return
	}
	code := q.Get("code")
	if code == "" {
		deny(http.StatusBadRequest, "no code", "The answer carried no authorization code.")
		return
	}
	spec, ok := m.o.Spec(flow.Server)
	if !ok || spec.UpstreamAuth == nil || spec.UpstreamAuth.Type != config.UpstreamOAuth {
		deny(http.StatusBadRequest, "the server no longer has upstream_auth type oauth", "The server is no longer configured for this login.")
		return
	}
	secret, err := m.secretOf(ctx, spec, &tokenRecord{ClientKind: flow.ClientKind, Issuer: flow.Issuer})
	if err != nil {
		deny(http.StatusBadGateway, "client secret: "+err.Error(), "hangar could not complete the login.")
		return
	}
	cfg := oauth2.Config{ClientID: flow.ClientID, ClientSecret: secret, RedirectURL: flow.RedirectURI,
		Endpoint: oauth2.Endpoint{TokenURL: flow.TokenURL, AuthStyle: flow.AuthStyle}}
	tok, err := cfg.Exchange(m.withClient(ctx), code, oauth2.VerifierOption(flow.Verifier), oauth2.SetAuthURLParam("resource", flow.Resource))
	if err != nil {
		m.forgetDiscovery(flow.Server)
		deny(http.StatusBadGateway, "code exchange: "+oauthErrorCode(err), "The authorization server did not exchange the code ("+oauthErrorCode(err)+").")
		return
	}
	now := m.o.Now()
	rec := tokenRecord{Access: tok.AccessToken, Refresh: tok.RefreshToken, Type: tok.TokenType, Expiry: tok.Expiry,
		Issued: now, LoggedIn: now, Issuer: flow.Issuer, TokenURL: flow.TokenURL, AuthStyle: flow.AuthStyle,
		ClientID: flow.ClientID, ClientKind: flow.ClientKind, Resource: flow.Resource}
	tref := tokenRef(flow.Subject, flow.Server)
	if err := m.putSealed(ctx, tref, rec); err != nil {
		deny(http.StatusInternalServerError, "token not kept: "+err.Error(), "hangar could not keep the token.")
		return
	}
	m.stored(tref)
	m.event(ctx, flow.Server, flow.Subject.Name, EventLogin, OutcomeOK, "connected")
	if m.o.Completed != nil && flow.Session != "" {
		m.o.Completed(flow.Session, flow.ElicitationID)
	}
	m.render(w, http.StatusOK, pageData{Title: "Connected " + flow.Server,
		Text: "hangar identity " + strconv.Quote(flow.Subject.Name) + " is connected to " + flow.Server + ". You can close this window and go back to your agent."})
}

// shortCode keeps an OAuth error code printable and short: it is the
// authorization server's word, shown and audited, never its description.
func shortCode(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 64 {
			break
		}
		if r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// oauthErrorCode is an OAuth error's code, or a generic word: the
// error's text may quote the server's body.
func oauthErrorCode(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return shortCode(re.ErrorCode)
		}
		if re.Response != nil {
			return "http " + strconv.Itoa(re.Response.StatusCode)
		}
	}
	return "request failed"
}

// sweepEvery bounds how often Login looks for abandoned links and flows.
const sweepEvery = time.Minute

func (m *Manager) sweepSometimes(ctx context.Context) {
	m.mu.Lock()
	due := m.o.Now().Sub(m.lastSweep) > sweepEvery
	if due {
		m.lastSweep = m.o.Now()
	}
	m.mu.Unlock()
	if due {
		if n, err := m.Sweep(ctx); err != nil {
			m.o.Log.Warn("upstream_auth: sweep of abandoned logins", "error", err)
		} else if n > 0 {
			m.o.Log.Debug("upstream_auth: removed abandoned logins", "count", n)
		}
	}
}

// Sweep removes expired links and flows, by their refs alone.
func (m *Manager) Sweep(ctx context.Context) (int, error) {
	now := m.o.Now().Unix()
	n := 0
	for _, prefix := range []string{refStarts, refFlows} {
		refs, err := m.o.Secrets.SecretRefs(ctx, prefix)
		if err != nil {
			return n, err
		}
		for _, ref := range refs {
			exp, _, _ := strings.Cut(strings.TrimPrefix(ref, prefix), "/")
			if t, err := strconv.ParseInt(exp, 10, 64); err == nil && t < now {
				if err := m.o.Secrets.DeleteSecret(ctx, ref); err != nil {
					return n, err
				}
				n++
			}
		}
	}
	return n, nil
}
