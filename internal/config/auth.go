package config

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Scopes a token may hold (seed 004, issue 10). internal/auth has the same
// names as constants; config only needs to reject typos.
var knownScopes = []string{"hangar:read", "hangar:call", "hangar:admin"}

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
}

// OIDC configures hangar as an OAuth 2.1 resource server.
type OIDC struct {
	Issuer   string
	Audience string // the gateway's resource URL (RFC 8707)
	JWKSURL  string
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
	tokenNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)
	headerRe    = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

func (d *decoder) auth(s *section, a *Auth) {
	s.boolean("enabled", &a.Enabled)
	d.rateLimit(s.sub("rate_limit"), &a.RateLimit)

	if s.str("api_key_header", &a.APIKeyHeader) {
		switch {
		case !headerRe.MatchString(a.APIKeyHeader):
			d.add(s.at("api_key_header"), "must be an HTTP header name (got %q)", a.APIKeyHeader)
		case strings.EqualFold(a.APIKeyHeader, "Authorization"):
			d.add(s.at("api_key_header"), "must not be Authorization (bearer tokens are read from it anyway)")
		}
		a.APIKeyHeader = http.CanonicalHeaderKey(a.APIKeyHeader)
	}
	s.boolean("allow_anonymous", &a.AllowAnonymous)

	items, _ := s.list("tokens")
	names := map[string]bool{}
	for i, item := range items {
		p := index(s.at("tokens"), i)
		if _, ok := asMap(item); !ok {
			d.add(p, "must be a mapping (got %s)", got(item))
			continue
		}
		t, ok := d.token(d.section(p, item), a.RateLimit)
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
		o := s.sub("oidc")
		for _, f := range []struct {
			key string
			dst *string
		}{{"issuer", &a.OIDC.Issuer}, {"audience", &a.OIDC.Audience}, {"jwks_url", &a.OIDC.JWKSURL}} {
			if !o.str(f.key, f.dst) || *f.dst == "" {
				d.add(o.at(f.key), "required")
				continue
			}
			if u, err := url.Parse(*f.dst); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				d.add(o.at(f.key), "must be an http(s) URL (got %q)", *f.dst)
			}
		}
		o.finish()
	}

	if s.has("generate_token") {
		g := s.sub("generate_token")
		a.GenerateToken = GenerateToken{Name: "generated", Scopes: []string{"hangar:read", "hangar:call"}}
		if !g.str("file", &a.GenerateToken.File) || a.GenerateToken.File == "" {
			d.add(g.at("file"), "required")
		}
		if g.str("name", &a.GenerateToken.Name) && !tokenNameRe.MatchString(a.GenerateToken.Name) {
			d.add(g.at("name"), "must be 1-64 letters, digits, or . _ @ - (got %q)", a.GenerateToken.Name)
		}
		if g.strList("scopes", &a.GenerateToken.Scopes) {
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
	s.floatIn("rps", &rl.RPS, 0.01, 1e6)
	s.intIn("burst", &rl.Burst, 1, 1e6)
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
	if !s.str("name", &t.Name) || t.Name == "" {
		d.add(s.at("name"), "required")
	} else if !tokenNameRe.MatchString(t.Name) {
		d.add(s.at("name"), "must be 1-64 letters, digits, or . _ @ - (got %q)", t.Name)
	}

	var given []string
	for _, k := range []string{"token_sha256", "token_file", "token"} {
		if s.has(k) {
			given = append(given, k)
		}
	}
	if len(given) != 1 {
		for _, k := range given {
			s.take(k)
		}
		d.add(s.path, "needs exactly one of token_sha256, token_file, token (got %d)", len(given))
	} else {
		var v string
		key := given[0]
		if s.str(key, &v) {
			switch key {
			case "token_sha256":
				b, err := hex.DecodeString(strings.TrimSpace(v))
				if err != nil || len(b) != sha256.Size {
					d.add(s.at(key), "must be 64 hex digits (a SHA-256)")
				} else {
					copy(t.SHA256[:], b)
				}
			case "token_file":
				tok, err := readSecretFile(v)
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

	if !s.strList("scopes", &t.Scopes) || len(t.Scopes) == 0 {
		d.add(s.at("scopes"), "required: at least one of %s", strings.Join(knownScopes, ", "))
	} else {
		d.scopes(s.at("scopes"), t.Scopes)
	}
	s.strList("servers", &t.Servers)
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
		d.rateLimit(s.sub("rate_limit"), &rl)
		t.RateLimit = &rl
	}
	s.finish()
	return t, len(d.problems) == before
}
