// Package upstreamauth is hangar's OAuth client towards upstream MCP
// servers and the vault of the tokens it gets: each caller (a Subject)
// logs in to an upstream once, and the gateway keeps, refreshes and
// presents that caller's token, never another's.
//
// It follows the MCP authorization specification (2025-11-25): the
// authorization server is discovered from the upstream's 401
// (WWW-Authenticate resource_metadata, RFC 9728) and its metadata (RFC
// 8414, OpenID discovery); the gateway identifies itself with a
// configured client, else the Client ID Metadata Document it serves,
// else dynamic registration (RFC 7591); the authorization code flow uses
// PKCE S256 and the RFC 8707 resource parameter on every authorization
// and token request, and the callback checks state and iss (RFC 9207).
// token_exchange (RFC 8693) and client_credentials are the two other
// ways to an upstream token.
//
// A call that needs a login the caller has not done gets a
// *LoginRequired: the gateway's own short-lived link (StartPath) that
// starts the flow. The link and the pending flow are sealed in the
// keystore and taken once; the callback (CallbackPath) needs no bearer
// token, since its single-use, expiring state and a cookie of the
// browser that opened the link bind it to the subject and server.
// Tokens are sealed in the keystore under the subject and the server, so
// replicas sharing a store share them and nothing is in plain text
// there; they are never logged.
package upstreamauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/oauth2"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/store"
)

// Events, as audit actions (audit.ActionUpstreamAuth + event) and as the
// event label of hangar_upstream_auth_events_total.
const (
	EventLoginStarted      = "login_started" // a login link was used: off to the authorization server
	EventLogin             = "login"         // a login completed, or was refused
	EventRefresh           = "refresh"       // a refresh token was used
	EventRefused           = "refused"       // the upstream or its server refused the credential: dropped
	EventDisconnect        = "disconnect"    // the caller dropped their credential
	EventDropped           = "dropped"       // the identity is gone (its hangar token removed)
	EventExchange          = "exchange"      // a token exchange (RFC 8693)
	EventClientCredentials = "client_credentials"
	EventCallback          = "callback" // a callback refused before it named anyone
)

// Outcomes of events.
const (
	OutcomeOK     = audit.OutcomeOK
	OutcomeError  = audit.OutcomeError
	OutcomeDenied = audit.OutcomeDenied
)

// Paths the gateway serves for the flow, beside /mcp.
const (
	// StartPath + <link id> is the login link a caller is sent to.
	StartPath = "/oauth/start/"
	// CallbackPath is the redirect URI registered with authorization
	// servers.
	CallbackPath = "/oauth/callback"
	// ClientMetadataPath is the gateway's Client ID Metadata Document;
	// its URL is the client_id where a server supports them.
	ClientMetadataPath = "/oauth/client-metadata.json"
)

// Lifetimes of what a login leaves in the keystore.
const (
	// LinkTTL bounds a login link between the call that made it and its
	// use.
	LinkTTL = 10 * time.Minute
	// FlowTTL bounds a flow between the link's use and the callback.
	FlowTTL = 10 * time.Minute
)

// Options configure a Manager.
type Options struct {
	// Secrets is the keystore: tokens, pending links and flows, client
	// registrations.
	Secrets store.Secrets
	// PublicURL is where browsers reach the gateway (server.public_url,
	// else the listen address), read at each use.
	PublicURL func() string
	// Spec returns the configuration of a server by ID (the flow's
	// handlers know only the ID).
	Spec func(id string) (*config.Server, bool)
	// HTTP sends the gateway's requests to authorization servers and
	// upstreams (discovery); nil: a pooled client with timeouts.
	HTTP *http.Client
	// Record writes an audit entry (audit.Record); nil: none.
	Record func(ctx context.Context, e store.AuditEntry)
	// Count counts an event (metrics.UpstreamAuth); nil: none.
	Count func(server, event, outcome string)
	// Completed hears of a completed login: the client session that was
	// sent the link, and the elicitation ID it was sent under
	// (notifications/elicitation/complete). nil: nobody.
	Completed func(session, elicitationID string)
	Log       *slog.Logger
	Now       func() time.Time
}

// Manager is the OAuth client and token vault of one gateway.
type Manager struct {
	o Options

	mu        sync.Mutex
	servers   map[string]*discovered  // by server ID
	cache     map[string]*cachedToken // by token ref
	signals   map[string]chan struct{}
	exchanged map[string]exchanged // token_exchange results, one per subject and server
	service   map[string]*serviceSource
	lastSweep time.Time
}

// New returns a Manager.
func New(o Options) *Manager {
	if o.HTTP == nil {
		c := cleanhttp.DefaultPooledClient()
		c.Timeout = 30 * time.Second
		o.HTTP = c
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Manager{o: o, servers: map[string]*discovered{}, cache: map[string]*cachedToken{},
		signals: map[string]chan struct{}{}, exchanged: map[string]exchanged{}, service: map[string]*serviceSource{}}
}

// LoginRequired is the answer to a call that needs a login the caller
// has not done: the link that starts it, as a URL-mode elicitation.
type LoginRequired struct {
	Server        string
	URL           string
	ElicitationID string
	Message       string
}

// Error has no link: errors are logged, and the link is the caller's
// alone (whoever opens it logs in for them).
func (e *LoginRequired) Error() string {
	return provider.KindAuthRequired + ": " + e.Server + " (this caller has not logged in to " + e.Server + " yet)"
}

// CallerText is the error as the caller gets it: with the link. Never
// log it.
func (e *LoginRequired) CallerText() string {
	return provider.KindAuthRequired + ": " + e.Server + " (" + e.Message + " Open " + e.URL +
		" in a browser to log in, then call again.)"
}

// ErrorKind is the wire kind (hangar_call's error_type).
func (e *LoginRequired) ErrorKind() string { return provider.KindAuthRequired }

// Params are the URL-mode elicitation that sends the user to the link.
func (e *LoginRequired) Params() mcp.ElicitationParams {
	return mcp.ElicitationParams{Mode: mcp.ElicitationModeURL, Message: e.Message, ElicitationID: e.ElicitationID, URL: e.URL}
}

// Elicitation is the -32042 error of a client on 2025-11-25 that cannot
// be asked within the call.
func (e *LoginRequired) Elicitation() mcp.URLElicitationRequiredError {
	return mcp.URLElicitationRequiredError{Elicitations: []mcp.ElicitationParams{e.Params()}}
}

// AsLoginRequired finds a *LoginRequired in err's chain.
func AsLoginRequired(err error) (*LoginRequired, bool) {
	var le *LoginRequired
	return le, errors.As(err, &le)
}

// errNoToken says the subject has no usable token for the server: a
// login is needed.
var errNoToken = errors.New("upstream_auth: no token for this caller")

// IsNoToken reports whether err says a login is needed.
func IsNoToken(err error) bool { return errors.Is(err, errNoToken) }

// event audits and counts one event. who is "" for a callback that named
// nobody.
func (m *Manager) event(ctx context.Context, server, who, event, outcome, reason string) {
	if m.o.Count != nil {
		m.o.Count(server, event, outcome)
	}
	if m.o.Record != nil {
		m.o.Record(ctx, store.AuditEntry{At: m.o.Now().UTC(), Server: server, Identity: who,
			Action: audit.ActionUpstreamAuth + event, Allowed: outcome != OutcomeDenied, Reason: reason, Outcome: outcome})
	}
}

// publicURL is the gateway's base URL for browsers.
func (m *Manager) publicURL() (string, error) {
	if m.o.PublicURL != nil {
		if u := m.o.PublicURL(); u != "" {
			return u, nil
		}
	}
	return "", errors.New("upstream_auth: the gateway's public URL is unknown: set server.public_url")
}

// PublicURLOf is the default public URL for a gateway listening on addr:
// an unspecified host (0.0.0.0, ::) is reached as localhost.
func PublicURLOf(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// tokenRecord is a subject's token for a server, as sealed in the
// keystore, with what refreshing it needs.
type tokenRecord struct {
	Access    string           `json:"access"`
	Refresh   string           `json:"refresh,omitempty"`
	Type      string           `json:"type,omitempty"`
	Expiry    time.Time        `json:"expiry"`
	Issued    time.Time        `json:"issued"`
	LoggedIn  time.Time        `json:"logged_in"`
	Issuer    string           `json:"issuer"`
	TokenURL  string           `json:"token_url"`
	AuthStyle oauth2.AuthStyle `json:"auth_style"`
	ClientID  string           `json:"client_id"`
	// ClientKind is how the client was identified: configured, cimd, dcr.
	ClientKind string `json:"client_kind"`
	Resource   string `json:"resource"`
}

func (r *tokenRecord) token() *oauth2.Token {
	return &oauth2.Token{AccessToken: r.Access, TokenType: r.Type, RefreshToken: r.Refresh, Expiry: r.Expiry}
}

// fresh reports whether the access token is good for a while yet: a
// fifth of its lifetime before it ends (at most 30 s), it is refreshed.
func (r *tokenRecord) fresh(now time.Time) bool {
	if r.Access == "" {
		return false
	}
	if r.Expiry.IsZero() {
		return true
	}
	margin := min(30*time.Second, r.Expiry.Sub(r.Issued)/5)
	return now.Add(margin).Before(r.Expiry)
}

// putSealed seals v under ref.
func (m *Manager) putSealed(ctx context.Context, ref string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return m.o.Secrets.PutSecret(ctx, ref, b)
}

// getSealed opens the value under ref into v.
func (m *Manager) getSealed(ctx context.Context, ref string, v any) error {
	b, err := m.o.Secrets.Secret(ctx, ref)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// takeSealed opens and removes the value under ref.
func (m *Manager) takeSealed(ctx context.Context, ref string, v any) error {
	b, err := m.o.Secrets.TakeSecret(ctx, ref)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func hashHex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// Status is what a caller sees of their credential for one server
// (hangar_details, mcp/server/details, the dashboard).
type Status struct {
	// Type is upstream_auth.type.
	Type string `json:"type"`
	// PerIdentity: each caller has a credential of their own.
	PerIdentity bool `json:"per_identity"`
	// Connected: the caller has a credential (for oauth, they logged in
	// and it was not refused since).
	Connected bool `json:"connected"`
	// Since is when the caller logged in (oauth only).
	Since *time.Time `json:"connected_at,omitempty"`
	// Expires is when the current access token ends (refreshed before).
	Expires *time.Time `json:"expires_at,omitempty"`
}

// Status is the caller's credential for spec.
func (m *Manager) Status(ctx context.Context, spec *config.Server, caller auth.Identity) Status {
	ua := spec.UpstreamAuth
	st := Status{Type: ua.Type, PerIdentity: ua.PerIdentity()}
	switch ua.Type {
	case config.UpstreamOAuth:
		subj, err := SubjectOf(caller)
		if err != nil {
			return st
		}
		var rec tokenRecord
		if err := m.getSealed(ctx, tokenRef(subj, spec.ID), &rec); err == nil {
			st.Connected = true
			since, exp := rec.LoggedIn, rec.Expiry
			st.Since = &since
			if !exp.IsZero() {
				st.Expires = &exp
			}
		}
	case config.UpstreamTokenExchange:
		st.Connected = caller.Bearer() != ""
	case config.UpstreamClientCredentials:
		st.Connected = true
	}
	return st
}

// Disconnect drops the caller's credential for server; false when they
// had none.
func (m *Manager) Disconnect(ctx context.Context, server string, caller auth.Identity) (bool, error) {
	subj, err := SubjectOf(caller)
	if err != nil {
		return false, err
	}
	ref := tokenRef(subj, server)
	had := true
	if _, err := m.o.Secrets.TakeSecret(ctx, ref); errors.Is(err, store.ErrNotFound) {
		had = false
	} else if err != nil {
		// A token that does not open (another key) is dropped all the same.
		if derr := m.o.Secrets.DeleteSecret(ctx, ref); derr != nil {
			return false, derr
		}
	}
	m.forgetCached(ref)
	m.forgetExchanged(subj, server)
	if had {
		m.event(ctx, server, caller.Name, EventDisconnect, OutcomeOK, "")
	} else {
		m.event(ctx, server, caller.Name, EventDisconnect, OutcomeError, "not connected")
	}
	return had, nil
}

// Prune drops the tokens of every subject keep refuses (an identity whose
// hangar token was removed) and returns how many.
func (m *Manager) Prune(ctx context.Context, keep func(Subject) bool) (int, error) {
	refs, err := m.o.Secrets.SecretRefs(ctx, refTokens)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ref := range refs {
		subj, server, ok := parseTokenRef(ref)
		if !ok || keep(subj) {
			continue
		}
		if err := m.o.Secrets.DeleteSecret(ctx, ref); err != nil {
			return n, err
		}
		m.forgetCached(ref)
		n++
		m.event(ctx, server, subj.Name, EventDropped, OutcomeOK, "the identity's hangar token is gone")
	}
	return n, nil
}

// signal returns the channel closed when a token for ref is stored here.
func (m *Manager) signal(ref string) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch, ok := m.signals[ref]
	if !ok {
		ch = make(chan struct{})
		m.signals[ref] = ch
	}
	return ch
}

func (m *Manager) stored(ref string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ch, ok := m.signals[ref]; ok {
		close(ch)
		delete(m.signals, ref)
	}
	delete(m.cache, ref)
}

// Wait returns once the caller has a token for spec (a login they were
// sent to completed, here or on another replica), or ctx ends.
func (m *Manager) Wait(ctx context.Context, spec *config.Server, caller auth.Identity) error {
	subj, err := SubjectOf(caller)
	if err != nil {
		return err
	}
	ref := tokenRef(subj, spec.ID)
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		ch := m.signal(ref)
		if _, err := m.o.Secrets.Secret(ctx, ref); err == nil {
			return nil
		}
		select {
		case <-ch:
		case <-t.C: // a replica's login shows only in the store
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// redirectURI is the callback's URL.
func (m *Manager) redirectURI() (string, error) {
	base, err := m.publicURL()
	if err != nil {
		return "", err
	}
	return base + CallbackPath, nil
}

// secure reports whether the public URL is https (cookies get Secure).
func (m *Manager) secure() bool {
	base, err := m.publicURL()
	if err != nil {
		return false
	}
	u, err := url.Parse(base)
	return err == nil && u.Scheme == "https"
}

// withClient is ctx carrying the gateway's HTTP client for oauth2.
func (m *Manager) withClient(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, m.o.HTTP)
}

// describe is how the manager names a spec in errors.
func describe(spec *config.Server) string {
	return fmt.Sprintf("%s (upstream_auth %s)", spec.ID, spec.UpstreamAuth.Type)
}

// Answer is the answer of a tool handler whose call needs a login it
// could not ask for within the call: on 2025-11-25, the -32042 URL
// elicitation required error (mcp-go writes it from the handler's error);
// on 2026-07-28, which reserves that code for the multi round trip, a
// tool error naming the link. ok is false when err needs no login.
func Answer(ctx context.Context, err error) (res *mcp.CallToolResult, herr error, ok bool) {
	le, found := AsLoginRequired(err)
	if !found {
		return nil, nil, false
	}
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return mcp.NewToolResultError(le.CallerText()), nil, true
	}
	return nil, le.Elicitation(), true
}
