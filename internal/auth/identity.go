// Package auth decides who a caller is and what it may do: identities from
// static tokens or JWTs, scopes, per-identity server filters, rate-limit
// buckets and session ownership. This file is the part every other package
// uses: the Identity a request carries in its context, and the wire errors
// of seed 004.
package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/mcp-hangar/hangar/internal/fnmatch"
	"github.com/mcp-hangar/hangar/internal/policy"
)

// Scopes (seed 004, issue 10).
const (
	ScopeRead  = "hangar:read"  // list, status, details, tools, health, metrics, discovered, …
	ScopeCall  = "hangar:call"  // hangar_call, continuations, provider tools
	ScopeAdmin = "hangar:admin" // start, stop, reload, load, approve, management methods
)

// AllScopes is what a local (stdio, or loopback with no tokens) caller has.
var AllScopes = []string{ScopeRead, ScopeCall, ScopeAdmin}

// Identity kinds.
const (
	KindToken     = "token"     // a static token from config
	KindJWT       = "jwt"       // an OAuth access token
	KindAnonymous = "anonymous" // no credentials, where that is allowed
	KindLocal     = "local"     // stdio: the process that started us
)

// Identity is who made a request and what it may do. The zero value may do
// nothing.
type Identity struct {
	Name   string // token name or JWT subject; shown in logs and audit, never a secret
	Kind   string
	Scopes []string
	// Servers are fnmatch patterns of the providers this identity may
	// reach; empty means all.
	Servers []string
	// Expires is when the credential stops being valid (a token's
	// expires_at, a JWT's exp); zero: never. Streams opened with it end
	// then (HTTP.Hold).
	Expires time.Time
	// Issuer is the JWT's issuer (auth.oidc.issuer) for KindJWT; "" for
	// the other kinds. A subject is unique only within its issuer.
	Issuer string
	// Credential tells apart, for KindToken, two tokens configured under
	// one name one after the other (TokenFingerprint); "" for the other
	// kinds. What belongs to a token (its upstream credentials) is keyed
	// by it too, so a new token under an old name inherits nothing.
	Credential string
	// who is what the credential says of the caller, for policy rules
	// (PolicySubject); nil for a caller it says nothing more of. Behind a
	// pointer: identities are copied into every call's request.
	who *who

	servers *fnmatch.Patterns // compiled Servers, built by NewIdentity
	// bearer is the caller's own JWT (KindJWT only), for an upstream that
	// exchanges it (RFC 8693). A pointer: fmt and slog print an address,
	// never the token, and encoding/json skips it.
	bearer *string
	view   string // ViewKey, computed by NewIdentity
}

// NewIdentity returns an identity with its server filter compiled.
func NewIdentity(name, kind string, scopes, servers []string) Identity {
	id := Identity{Name: name, Kind: kind, Scopes: slices.Clone(scopes), Servers: slices.Clone(servers)}
	if len(servers) > 0 {
		p := fnmatch.Compile(servers)
		id.servers = &p
	}
	id.view = id.viewKey()
	return id
}

// TokenFingerprint is Identity.Credential of the static token whose
// SHA-256 is sum: a hash of the hash, short, never enough to find or test
// the token.
func TokenFingerprint(sum [32]byte) string {
	f := sha256.Sum256(append([]byte("hangar-token-fingerprint:"), sum[:]...))
	return hex.EncodeToString(f[:8])
}

// Bearer is the caller's own bearer JWT, "" for every kind but KindJWT.
// Only a token exchange with an upstream's authorization server may read
// it; it is never logged nor stored.
func (id Identity) Bearer() string {
	if id.bearer == nil {
		return ""
	}
	return *id.bearer
}

// Local is the identity of a stdio client or of loopback callers when no
// credentials are configured: every scope, every server.
func Local(kind string) Identity { return NewIdentity(kind, kind, AllScopes, nil) }

// Has reports whether the identity holds scope.
func (id Identity) Has(scope string) bool { return slices.Contains(id.Scopes, scope) }

// MayReach reports whether the identity may list and call server (a
// provider or group ID).
func (id Identity) MayReach(server string) bool {
	if len(id.Servers) == 0 {
		return true
	}
	if id.servers == nil { // built without NewIdentity: fail closed
		return false
	}
	return id.servers.Match(server)
}

// ViewKey is equal for identities that Has and MayReach answer alike:
// what a caller may see of a listing filtered by scope and server depends
// on nothing else, so answers computed for one such caller can be kept
// for the others.
func (id Identity) ViewKey() string {
	if id.view != "" {
		return id.view // every request asks (sessions, the listing cache)
	}
	return id.viewKey()
}

func (id Identity) viewKey() string {
	// Quoted elements: no scope or pattern can pass for two.
	b := []byte("scopes")
	for _, s := range slices.Compact(slices.Sorted(slices.Values(id.Scopes))) {
		b = strconv.AppendQuote(append(b, ' '), s)
	}
	switch {
	case len(id.Servers) == 0:
	case id.servers == nil:
		b = append(b, " no servers"...) // built without NewIdentity: MayReach refuses all
	default:
		b = append(b, " servers"...)
		for _, s := range id.Servers {
			b = strconv.AppendQuote(append(b, ' '), s)
		}
	}
	return string(b)
}

// who is a JWT's sub and all of its claims, and the groups of a token
// (groups:) or of a JWT (its groups claim); the issuer is the identity's
// own (Identity.Issuer). Never shown in answers, logs or the audit
// (claims may be personal).
type who struct {
	subject string
	groups  []string
	claims  map[string]any
}

// PolicySubject is the identity as policy rules see it (identity.*).
func (id Identity) PolicySubject() policy.Subject {
	s := policy.Subject{Name: id.Name, Scopes: id.Scopes, Issuer: id.Issuer}
	if w := id.who; w != nil {
		s.Subject, s.Groups, s.Claims = w.subject, w.groups, w.claims
	}
	return s
}

// ctxKey carries the caller's identity from the endpoint's auth stage to
// mcp-go's hooks, filters and tool handlers: mcp-go passes them the HTTP
// request's context and nothing else. The call path takes it from there
// into call.Request.Caller (relay.NewRequest) and passes it on explicitly.
type ctxKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the identity ctx carries. A context without one (an
// in-process caller that never passed the HTTP middleware) has none: callers
// decide what that means, and on the network path it never happens.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(ctxKey{}).(Identity)
	return id, ok
}

// Caller is the identity of the request in ctx; a context without one is
// a local, unrestricted caller (stdio, in-process): the HTTP middleware
// binds an identity to every network request.
func Caller(ctx context.Context) Identity {
	if id, ok := FromContext(ctx); ok {
		return id
	}
	return Local(KindLocal)
}

// JSON-RPC error codes of seed 004.
const (
	CodeUnauthenticated   = -32001
	CodeInsufficientScope = -32002
	CodeRateLimited       = -32003
)

// Error is a seed 004 refusal, carried as a JSON-RPC error.
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string { return e.Message }

// KindForbidden is the wire kind (hangar_call's error_type) of a call
// outside the caller's scopes or servers; provider.KindOf reads it from
// ErrorKind, beside the provider's own kinds.
const KindForbidden = "forbidden"

// ErrorKind is the refusal's kind as hangar_call reports it (error_type):
// KindForbidden for a scope or server, else how it was refused.
func (e *Error) ErrorKind() string {
	switch e.Code {
	case CodeInsufficientScope:
		return KindForbidden
	case CodeRateLimited:
		return "rate_limited"
	}
	return "unauthenticated"
}

// ErrUnauthenticated is the answer to a missing or bad credential.
var ErrUnauthenticated = &Error{Code: CodeUnauthenticated, Message: "Invalid or missing authentication token"}

// MissingScope is the refusal for a scope the identity lacks; for a server
// outside its filter the scope is "server:<id>".
func MissingScope(scope string) *Error {
	return &Error{Code: CodeInsufficientScope, Message: "Token missing required scope: " + scope}
}

// ServerScope is the scope name seed 004 uses for a server outside an
// identity's filter.
func ServerScope(server string) string { return "server:" + server }

// ForwardRefusedReason starts the audit reason of a request marked as
// forwarded by another replica whose proof does not hold; the proof's
// fault follows (forward.Refused*).
const ForwardRefusedReason = "forward_refused: "

// ForwardRefused is the answer to such a request: the caller is not
// lacking a scope, but the request is forbidden all the same.
func ForwardRefused(why string) *Error {
	return &Error{Code: CodeInsufficientScope, Message: "Forwarded request refused: " + why +
		" (only a replica of this gateway instance may forward a request, once)"}
}

// RateLimited is the refusal of a request over its bucket.
func RateLimited(retryAfterSeconds int) *Error {
	return &Error{Code: CodeRateLimited, Message: fmt.Sprintf("Rate limit exceeded. Try again in %d seconds.", retryAfterSeconds)}
}
