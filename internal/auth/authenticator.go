package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/mcp-hangar/hangar/internal/config"
)

// Why a presented credential was refused; for logs only.
var (
	ErrUnknownToken = errors.New("unknown token")
	ErrExpiredToken = errors.New("token expired")
	ErrInvalidJWT   = errors.New("invalid JWT")
)

// token is a configured static token: only its hash is held.
type token struct {
	hash      [32]byte
	identity  Identity
	expiresAt time.Time
	rate      *config.RateLimit
}

// Authenticator turns credentials into identities.
type Authenticator struct {
	tokens   []token
	verifier *oidc.IDTokenVerifier // nil without auth.oidc
	// groupsClaim is the JWT claim read as the caller's groups.
	groupsClaim string
	now         func() time.Time
}

// Options tune an Authenticator; the zero value is fine.
type Options struct {
	// KeySet overrides the JWKS fetched from auth.oidc.jwks_url (tests).
	KeySet oidc.KeySet
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// Extra are tokens added besides auth.tokens: the generated token.
	Extra []config.Token
}

// NewAuthenticator builds the token table and, with auth.oidc, a JWT
// verifier whose key set is fetched lazily from jwks_url (and refetched
// when a token names an unknown key), so start-up does not depend on the
// identity provider being up. ctx bounds the key set's fetches.
func NewAuthenticator(ctx context.Context, a config.Auth, o Options) *Authenticator {
	au := &Authenticator{now: o.Now}
	if au.now == nil {
		au.now = time.Now
	}
	for _, t := range append(append([]config.Token(nil), a.Tokens...), o.Extra...) {
		id := NewIdentity(t.Name, KindToken, t.Scopes, t.Servers)
		id.Expires = t.ExpiresAt
		id.Credential = TokenFingerprint(t.SHA256)
		id.who = &who{subject: t.Name, groups: slices.Clone(t.Groups)}
		au.tokens = append(au.tokens, token{
			hash:      t.SHA256,
			identity:  id,
			expiresAt: t.ExpiresAt,
			rate:      t.RateLimit,
		})
	}
	if a.OIDC.Issuer != "" {
		au.groupsClaim = a.OIDC.GroupsClaim
		if au.groupsClaim == "" {
			au.groupsClaim = config.DefaultGroupsClaim
		}
		ks := o.KeySet
		if ks == nil {
			ks = oidc.NewRemoteKeySet(ctx, a.OIDC.JWKSURL)
		}
		au.verifier = oidc.NewVerifier(a.OIDC.Issuer, ks, &oidc.Config{
			ClientID: a.OIDC.Audience,
			Now:      au.now,
			// Asymmetric algorithms only: "none" and HMAC with a public key
			// are the classic JWT forgeries.
			SupportedSigningAlgs: []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA},
		})
	}
	return au
}

// HasToken reports whether a static token of that name and credential
// (Identity.Credential) is configured: what belongs to a removed token
// can be dropped.
func (au *Authenticator) HasToken(name, credential string) bool {
	for _, t := range au.tokens {
		if t.identity.Name == name && t.identity.Credential == credential {
			return true
		}
	}
	return false
}

// HasCredentials reports whether any credential is configured; without
// one the endpoint serves anonymously (where that is allowed).
func (au *Authenticator) HasCredentials() bool { return len(au.tokens) > 0 || au.verifier != nil }

// Authenticate returns the identity of cred and the rate limit that
// applies to it (nil: the global one). The error says why a credential
// was refused, for the log; it never contains the credential.
func (au *Authenticator) Authenticate(ctx context.Context, cred string) (Identity, *config.RateLimit, error) {
	sum := sha256.Sum256([]byte(cred))
	// Every hash is compared, whatever matches, so the time taken says
	// nothing about which token (or how much of one) was right.
	match := -1
	for i := range au.tokens {
		if subtle.ConstantTimeCompare(sum[:], au.tokens[i].hash[:]) == 1 {
			match = i
		}
	}
	if match >= 0 {
		t := au.tokens[match]
		if !t.expiresAt.IsZero() && !au.now().Before(t.expiresAt) {
			return Identity{}, nil, fmt.Errorf("%w: %s", ErrExpiredToken, t.identity.Name)
		}
		return t.identity, t.rate, nil
	}
	if au.verifier != nil && strings.Count(cred, ".") == 2 {
		id, err := au.verifyJWT(ctx, cred)
		return id, nil, err
	}
	return Identity{}, nil, ErrUnknownToken
}

func (au *Authenticator) verifyJWT(ctx context.Context, raw string) (Identity, error) {
	tok, err := au.verifier.Verify(ctx, raw)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrInvalidJWT, err)
	}
	var claims struct {
		Scope string `json:"scope"`
		Exp   *int64 `json:"exp"`
	}
	if err := tok.Claims(&claims); err != nil {
		return Identity{}, fmt.Errorf("%w: claims: %v", ErrInvalidJWT, err)
	}
	if claims.Exp == nil {
		// An access token without exp would be valid forever.
		return Identity{}, fmt.Errorf("%w: no exp claim", ErrInvalidJWT)
	}
	if tok.Subject == "" {
		return Identity{}, fmt.Errorf("%w: no sub claim", ErrInvalidJWT)
	}
	id := NewIdentity(tok.Subject, KindJWT, strings.Fields(claims.Scope), nil)
	id.Expires = tok.Expiry
	id.Issuer = tok.Issuer
	id.bearer = &raw
	w := &who{subject: tok.Subject}
	if err := tok.Claims(&w.claims); err != nil {
		return Identity{}, fmt.Errorf("%w: claims: %v", ErrInvalidJWT, err)
	}
	w.groups = groupsOf(w.claims[au.groupsClaim])
	id.who = w
	return id, nil
}

// groupsOf reads a groups claim: a list of strings (Keycloak, Okta,
// Entra ID), or one string of names separated by spaces or commas. Other
// values hold no groups.
func groupsOf(v any) []string {
	var out []string
	switch g := v.(type) {
	case []any:
		for _, e := range g {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
	case string:
		out = strings.FieldsFunc(g, func(r rune) bool { return r == ',' || r == ' ' })
	}
	return out
}
