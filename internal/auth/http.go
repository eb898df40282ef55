package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/config"
)

// MetadataPath is where the Protected Resource Metadata (RFC 9728) is
// served; the path-suffixed form for the /mcp resource is served too.
const MetadataPath = server.WellKnownProtectedResourcePath

// maxIDScan bounds how much of a refused request's body is read to find
// its JSON-RPC id; a refused request costs no more than that.
const maxIDScan = 64 << 10

// HTTP authenticates and rate-limits requests to the MCP endpoint.
type HTTP struct {
	Auth    *Authenticator
	Limiter *Limiter // nil: no rate limiting
	// RateLimit is the default bucket; a token may override it.
	RateLimit    config.RateLimit
	APIKeyHeader string
	// Loopback is true when the endpoint listens on loopback only: with no
	// credentials configured, callers are then trusted as local.
	Loopback bool
	// AllowAnonymous serves requests without credentials on any address,
	// rate-limited per client address: with every scope when no
	// credentials are configured, else with hangar:read only.
	AllowAnonymous bool
	// Resource is this endpoint's resource URL (auth.oidc.audience);
	// "" derives it from the request's Host.
	Resource string
	// AuthorizationServers go into the metadata document.
	AuthorizationServers []string
	Log                  *slog.Logger

	// Forwarded, when set, tells a request another gateway replica
	// forwarded here, proven (forward.Router.Check): that replica counted
	// it against the caller's rate limit, so it is not counted again. A
	// request marked as forwarded whose proof does not hold gets a
	// refusal (why, never the proof): it is answered 403 and audited.
	Forwarded func(*http.Request) (forwarded bool, refusal string)

	// Audit, when set, records a refused request: the 401s and 429s
	// answered here (callers of Forbid record their 403s themselves). Set
	// it before serving.
	Audit func(r *http.Request, f Refusal)

	// reloaded replaces what a config reload changes, so a token removed
	// from the config stops working without a restart.
	reloaded atomic.Pointer[Settings]

	holdMu sync.Mutex
	holds  map[*hold]struct{} // streams held open by a credential (Hold)
	// shutdown ends every held stream when endStreams is called
	// (EndStreams); made on first use.
	shutdown   context.Context
	endStreams context.CancelFunc
}

// Settings are what a config reload changes of the endpoint's
// authentication: the credentials, the default rate limit, the header an
// API key comes in, and anonymous access.
type Settings struct {
	Auth           *Authenticator
	RateLimit      config.RateLimit
	APIKeyHeader   string
	AllowAnonymous bool
}

// Reload swaps in the settings of a reloaded config; requests already past
// the middleware are unaffected.
func (h *HTTP) Reload(s Settings) {
	h.reloaded.Store(&s)
	h.recheck(s)
}

func (h *HTTP) current() Settings {
	if s := h.reloaded.Load(); s != nil {
		return *s
	}
	return Settings{Auth: h.Auth, RateLimit: h.RateLimit, APIKeyHeader: h.APIKeyHeader, AllowAnonymous: h.AllowAnonymous}
}

// Refusal is one request the endpoint refused before serving it, for the
// audit trail: never the credential, only why.
type Refusal struct {
	Status int
	// Identity is who was refused; zero when no credential was accepted.
	Identity Identity
	Reason   string
}

// Middleware puts the caller's Identity in r.Context(), or answers 401
// (missing, bad or expired credential) or 429 (over its rate limit)
// without calling next, so no session is ever created for such a request.
func (h *HTTP) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cur := h.current()
		id, rl, reason, presented := h.authenticate(r.Context(), r.Header, cur)
		if reason != "" {
			h.refuse(w, r, reason, presented)
			return
		}
		forwarded := false
		if h.Forwarded != nil {
			var why string
			if forwarded, why = h.Forwarded(r); why != "" {
				h.log().Warn("forwarded request refused", "reason", why, "identity", id.Name, "remote", clientAddr(r))
				h.audit(r, Refusal{Status: http.StatusForbidden, Identity: id, Reason: ForwardRefusedReason + why})
				WriteError(w, http.StatusForbidden, requestID(r), ForwardRefused(why))
				return
			}
		}
		if h.Limiter != nil && id.Kind != KindLocal && !forwarded {
			if rl == nil {
				rl = &cur.RateLimit
			}
			if allowed, wait := h.Limiter.Allow(bucketKey(id, r), *rl); !allowed {
				secs := RetryAfterSeconds(wait)
				w.Header().Set("Retry-After", strconv.Itoa(secs))
				h.log().Info("request refused", "reason", "rate limited", "identity", id.Name, "retry_after_s", secs)
				h.audit(r, Refusal{Status: http.StatusTooManyRequests, Identity: id, Reason: "rate_limited"})
				WriteError(w, http.StatusTooManyRequests, requestID(r), RateLimited(secs))
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(WithIdentity(r.Context(), id)))
	})
}

// The identities of callers without a credential, built once: an
// Identity is read-only once built, so every request may share one.
var (
	localCaller     = Local(KindLocal)
	anonymousCaller = NewIdentity(KindAnonymous, KindAnonymous, AllScopes, nil)
	anonymousReader = NewIdentity(KindAnonymous, KindAnonymous, []string{ScopeRead}, nil)
)

// authenticate is who the credential in hdr makes a caller under cur; a
// non-empty reason refuses it (presented: a credential was sent).
func (h *HTTP) authenticate(ctx context.Context, hdr http.Header, cur Settings) (id Identity, rl *config.RateLimit, reason string, presented bool) {
	authn := cur.Auth
	if !authn.HasCredentials() {
		// Nothing to check a credential against, so one that is sent is
		// ignored rather than refused: clients that always send a token
		// keep working against a local gateway.
		switch {
		case h.Loopback:
			return localCaller, nil, "", false
		case cur.AllowAnonymous:
			return anonymousCaller, nil, "", false
		}
		return Identity{}, nil, "no credentials are configured and anonymous access is off", false
	}
	cred, err := Credential(hdr, cur.APIKeyHeader)
	if err == ErrNoCredential && cur.AllowAnonymous {
		// Beside configured credentials, anonymous callers may only look:
		// anything more would make the tokens' scopes pointless.
		return anonymousReader, nil, "", false
	}
	if err != nil {
		return Identity{}, nil, err.Error(), err != ErrNoCredential
	}
	id, rl, err = authn.Authenticate(ctx, cred)
	if err != nil {
		return Identity{}, nil, err.Error(), true
	}
	return id, rl, "", false
}

func (h *HTTP) refuse(w http.ResponseWriter, r *http.Request, reason string, presented bool) {
	h.log().Info("request refused", "reason", reason, "remote", clientAddr(r))
	h.audit(r, Refusal{Status: http.StatusUnauthorized, Reason: "unauthenticated: " + reason})
	challenge := `Bearer resource_metadata="` + h.metadataURL(r) + `"`
	if presented {
		challenge += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	WriteError(w, http.StatusUnauthorized, requestID(r), ErrUnauthenticated)
}

func (h *HTTP) audit(r *http.Request, f Refusal) {
	if h.Audit != nil {
		h.Audit(r, f)
	}
}

// Forbid answers a request refused for a scope before it reached JSON-RPC
// processing: 403 with insufficient_scope (RFC 6750) and the -32002 body.
func (h *HTTP) Forbid(w http.ResponseWriter, r *http.Request, id json.RawMessage, e *Error) {
	scope := strings.TrimPrefix(e.Message, MissingScope("").Message)
	w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+scope+`", resource_metadata="`+h.metadataURL(r)+`"`)
	WriteError(w, http.StatusForbidden, id, e)
}

func (h *HTTP) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.Default()
}

// bucketKey separates kinds so a token named like an address never
// shares its bucket.
func bucketKey(id Identity, r *http.Request) string {
	if id.Kind == KindAnonymous {
		return "addr:" + clientAddr(r)
	}
	return id.Kind + ":" + id.Name
}

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// resourceURL is the endpoint's resource identifier.
func (h *HTTP) resourceURL(r *http.Request) string {
	if h.Resource != "" {
		return h.Resource
	}
	return h.origin(r) + "/mcp"
}

func (h *HTTP) origin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (h *HTTP) metadataURL(r *http.Request) string { return h.origin(r) + MetadataPath }

// MetadataHandler serves the Protected Resource Metadata document.
func (h *HTTP) MetadataHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		server.NewProtectedResourceMetadataHandler(server.ProtectedResourceMetadataConfig{
			Resource:               h.resourceURL(r),
			AuthorizationServers:   h.AuthorizationServers,
			ScopesSupported:        AllScopes,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "hangar MCP gateway",
		}).ServeHTTP(w, r)
	})
}

// WriteError writes a seed 004 refusal as a JSON-RPC error response.
func WriteError(w http.ResponseWriter, status int, id json.RawMessage, e *Error) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{e.Code, e.Message}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// requestID is the JSON-RPC id of a refused POST, when its body is a
// single request with a string or number id; otherwise null.
func requestID(r *http.Request) json.RawMessage {
	if r.Method != http.MethodPost || r.Body == nil {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxIDScan))
	if err != nil {
		return nil
	}
	return EnvelopeID(b)
}

// EnvelopeID returns the id of a single JSON-RPC request if it is a string
// or a number, else nil.
func EnvelopeID(b []byte) json.RawMessage {
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &env) != nil {
		return nil
	}
	return ScalarID(env.ID)
}

// ScalarID returns raw if it is a valid JSON-RPC request id (a string or a
// number), else nil (written as null).
func ScalarID(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	switch raw[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return raw
	}
	return nil
}
