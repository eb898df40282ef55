package config

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Scopes a token may hold (seed 004, issue 10). internal/auth has the same
// names as constants; config only needs to reject typos.
var knownScopes = []string{"hangar:read", "hangar:call", "hangar:admin"}

// DefaultGroupsClaim is the JWT claim read as the caller's groups.
const DefaultGroupsClaim = "groups"

// MinTokenLength is the shortest plain token (token, token_file) accepted:
// anything shorter is guessable.
const MinTokenLength = 16

// Token is a static bearer token. Only its SHA-256 is kept: the token
// itself, read from token or token_file, is hashed while loading and
// dropped.
type Token struct {
	Name      string // shown in logs and audit, never the token
	SHA256    [32]byte
	Scopes    []string
	Servers   []string  // fnmatch patterns of the reachable providers; empty: all
	ExpiresAt time.Time // zero: never
	RateLimit *RateLimit
	// Groups are the caller's groups as policy rules see them
	// (identity.groups), as a JWT's groups claim gives them.
	Groups []string
}

// OIDC configures hangar as an OAuth 2.1 resource server.
type OIDC struct {
	Issuer   string
	Audience string // the gateway's resource URL (RFC 8707)
	JWKSURL  string
	// GroupsClaim names the claim that holds the caller's groups (a list
	// of strings, or one string of them separated by spaces or commas),
	// for policy rules (identity.groups); default "groups".
	GroupsClaim string
}

// GenerateToken makes the gateway create a token into File on first start
// (and accept whatever token the file holds afterwards), so a compose stack
// is authenticated with no setup: agents mount the same volume.
type GenerateToken struct {
	File   string
	Name   string   // default "generated"
	Scopes []string // default hangar:read, hangar:call
}

var (
	tokenNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`) })
	headerRe    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$") })
)

func (d *decoder) auth(s *section, a *Auth) {
	s.boolean("enabled", &a.Enabled,
		"false turns the rate limit off (authentication is decided by tokens, oidc and allow_anonymous).")
	d.rateLimit(s.sub("rate_limit", "The rate limit of each caller (per token, identity or client address)."), &a.RateLimit)

	if s.str("api_key_header", &a.APIKeyHeader,
		"A header that carries a token as well as Authorization: Bearer; not Authorization.",
		match(headerRe)) {
		switch {
		case !headerRe().MatchString(a.APIKeyHeader):
			d.add(s.at("api_key_header"), "must be an HTTP header name (got %q)", a.APIKeyHeader)
		case strings.EqualFold(a.APIKeyHeader, "Authorization"):
			d.add(s.at("api_key_header"), "must not be Authorization (bearer tokens are read from it anyway)")
		}
		a.APIKeyHeader = http.CanonicalHeaderKey(a.APIKeyHeader)
	}
	s.boolean("allow_anonymous", &a.AllowAnonymous,
		"Serve callers that send no credentials, rate-limited per address: with every scope when no tokens or oidc are configured, else with hangar:read only.")

	items, _ := s.list("tokens", "Static bearer tokens; make one with hangar token new.")
	names := map[string]bool{}
	for i, item := range items {
		p := index(s.at("tokens"), i)
		if _, ok := asMap(item); !ok {
			d.add(p, "must be a mapping (got %s)", got(item))
			continue
		}
		t, ok := d.token(s.item("tokens", p, item), a.RateLimit)
		if !ok {
			continue
		}
		if names[t.Name] {
			d.add(join(p, "name"), "duplicate token name %q", t.Name)
			continue
		}
		names[t.Name] = true
		a.Tokens = append(a.Tokens, t)
	}

	if s.has("oidc") {
		o := s.sub("oidc", "Accept JWTs of an OAuth 2.1 authorization server as bearer tokens: hangar is its resource server.")
		for _, f := range []struct {
			key, doc string
			dst      *string
		}{
			{"issuer", "The authorization server's issuer URL; a JWT's iss must equal it.", &a.OIDC.Issuer},
			{"audience", "The gateway's resource URL (RFC 8707); a JWT's aud must hold it.", &a.OIDC.Audience},
			{"jwks_url", "Where the issuer's signing keys are fetched.", &a.OIDC.JWKSURL},
		} {
			if !o.str(f.key, f.dst, f.doc, format("uri")) || *f.dst == "" {
				d.add(o.at(f.key), "required")
				continue
			}
			if u, err := url.Parse(*f.dst); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				d.add(o.at(f.key), "must be an http(s) URL (got %q)", *f.dst)
			}
		}
		a.OIDC.GroupsClaim = DefaultGroupsClaim
		if o.str("groups_claim", &a.OIDC.GroupsClaim,
			"The claim holding the caller's groups (a list, or one string of them) for policy rules (identity.groups).") && a.OIDC.GroupsClaim == "" {
			d.add(o.at("groups_claim"), "must not be empty (default %q)", DefaultGroupsClaim)
		}
		o.finish()
	}

	if s.has("generate_token") {
		g := s.sub("generate_token", "Create a token into a file on first start (and accept the file's token afterwards), so a compose stack is authenticated with no setup: agents mount the same volume.")
		a.GenerateToken = GenerateToken{Name: "generated", Scopes: []string{"hangar:read", "hangar:call"}}
		if !g.str("file", &a.GenerateToken.File, "The file the token is written to and read from.") || a.GenerateToken.File == "" {
			d.add(g.at("file"), "required")
		}
		if g.str("name", &a.GenerateToken.Name, "The token's name in logs and audit.",
			match(tokenNameRe)) && !tokenNameRe().MatchString(a.GenerateToken.Name) {
			d.add(g.at("name"), "must be 1-64 letters, digits, or . _ @ - (got %q)", a.GenerateToken.Name)
		}
		if g.strList("scopes", &a.GenerateToken.Scopes, "The token's scopes.", oneOf(knownScopes...)) {
			d.scopes(g.at("scopes"), a.GenerateToken.Scopes)
		}
		if names[a.GenerateToken.Name] {
			d.add(g.at("name"), "duplicate token name %q", a.GenerateToken.Name)
		}
		g.finish()
	}
	s.finish()
}

func (d *decoder) rateLimit(s *section, rl *RateLimit) {
	s.floatIn("rps", &rl.RPS, 0.01, 1e6, "Requests per second allowed on average.")
	s.intIn("burst", &rl.Burst, 1, 1e6, "Requests allowed at once above the average.")
	s.finish()
}

func (d *decoder) scopes(path string, scopes []string) {
	for i, sc := range scopes {
		if !slices.Contains(knownScopes, sc) {
			d.add(index(path, i), "unknown scope %q (known: %s)", sc, strings.Join(knownScopes, ", "))
		}
	}
}

// token decodes one auth.tokens entry. Errors never quote a token or the
// content of a token file.
func (d *decoder) token(s *section, base RateLimit) (Token, bool) {
	var t Token
	before := len(d.problems)
	if !s.str("name", &t.Name, "The token's name, shown in logs and audit (never the token).", match(tokenNameRe)) || t.Name == "" {
		d.add(s.at("name"), "required")
	} else if !tokenNameRe().MatchString(t.Name) {
		d.add(s.at("name"), "must be 1-64 letters, digits, or . _ @ - (got %q)", t.Name)
	}

	type secretKey struct{ key, doc string }
	var given []secretKey
	secretKeys := [...]secretKey{
		{"token_sha256", "The SHA-256 of the token, in hex (what hangar token new prints). One of token_sha256, token_file and token."},
		{"token_file", "A file holding the token (at least 16 characters); only its hash is kept."},
		{"token", "The token itself (at least 16 characters; ${VAR} expands); only its hash is kept."},
	}
	for _, k := range secretKeys {
		s.def(k.key, k.doc, "string")
		if s.has(k.key) {
			given = append(given, k)
		}
	}
	if k := s.node(); k != nil {
		k.prop("token_sha256").Pattern = "^\\s*[0-9a-fA-F]{64}\\s*$"
	}
	if len(given) != 1 {
		for _, k := range given {
			s.take(k.key)
		}
		d.add(s.path, "needs exactly one of token_sha256, token_file, token (got %d)", len(given))
	} else {
		var v string
		key := given[0].key
		if s.str(key, &v, given[0].doc) {
			switch key {
			case "token_sha256":
				b, err := hex.DecodeString(strings.TrimSpace(v))
				if err != nil || len(b) != sha256.Size {
					d.add(s.at(key), "must be 64 hex digits (a SHA-256)")
				} else {
					copy(t.SHA256[:], b)
				}
			case "token_file":
				tok, err := ReadSecretFile(v)
				tok = strings.TrimSpace(tok)
				switch {
				case err != nil:
					d.add(s.at(key), "%v", err)
				case len(tok) < MinTokenLength:
					d.add(s.at(key), "the token in %s is shorter than %d characters", v, MinTokenLength)
				default:
					t.SHA256 = sha256.Sum256([]byte(tok))
				}
			case "token":
				tok, err := expand(v, d.lookup)
				tok = strings.TrimSpace(tok)
				switch {
				case err != nil:
					d.add(s.at(key), "%v", err)
				case len(tok) < MinTokenLength:
					d.add(s.at(key), "must be at least %d characters", MinTokenLength)
				default:
					t.SHA256 = sha256.Sum256([]byte(tok))
				}
			}
		}
	}

	if !s.strList("scopes", &t.Scopes, "What the token may do: hangar:read, hangar:call, hangar:admin (required, at least one).",
		oneOf(knownScopes...)) || len(t.Scopes) == 0 {
		d.add(s.at("scopes"), "required: at least one of %s", strings.Join(knownScopes, ", "))
	} else {
		d.scopes(s.at("scopes"), t.Scopes)
	}
	s.strList("servers", &t.Servers, "fnmatch patterns of the servers the token reaches; none: every server.")
	if s.strList("groups", &t.Groups, "The caller's groups as policy rules see them (identity.groups).") {
		for i, g := range t.Groups {
			if g == "" {
				d.add(index(s.at("groups"), i), "must not be empty")
			}
		}
	}
	if k := s.def("expires_at", "When the token stops working: an RFC 3339 time such as 2027-01-01T00:00:00Z; none: never.", "string"); k != nil {
		k.Format = "date-time"
	}
	if v, ok := s.take("expires_at"); ok {
		switch x := v.(type) {
		case time.Time:
			t.ExpiresAt = x
		case string:
			at, err := time.Parse(time.RFC3339, x)
			if err != nil {
				d.add(s.at("expires_at"), "must be an RFC 3339 time such as 2027-01-01T00:00:00Z (got %q)", x)
			}
			t.ExpiresAt = at
		default:
			d.add(s.at("expires_at"), "must be an RFC 3339 time (got %s)", got(v))
		}
	}
	if s.has("rate_limit") {
		rl := base // a token's override inherits what it does not set
		d.rateLimit(s.sub("rate_limit", "The token's own rate limit; what it leaves out is auth.rate_limit's."), &rl)
		t.RateLimit = &rl
	}
	s.finish()
	return t, len(d.problems) == before
}
