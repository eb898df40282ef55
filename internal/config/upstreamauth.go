package config

import (
	"net/url"
	"strings"
)

// Upstream credential types (upstream_auth.type).
const (
	// UpstreamOAuth: each caller logs in to the upstream's authorization
	// server once (authorization code with PKCE); the gateway keeps and
	// refreshes their tokens.
	UpstreamOAuth = "oauth"
	// UpstreamTokenExchange: the caller's own bearer JWT (auth.oidc) is
	// exchanged for an upstream token (RFC 8693).
	UpstreamTokenExchange = "token_exchange"
	// UpstreamClientCredentials: one service token for every caller.
	UpstreamClientCredentials = "client_credentials"
)

// UpstreamAuth is a server's upstream_auth: how the gateway gets the token
// it presents to the upstream. nil means none (headers: decide, as before).
type UpstreamAuth struct {
	Type   string
	Scopes []string
	// ClientID and ClientSecretFile are a client registered with the
	// authorization server by hand; without them the gateway identifies
	// itself with its Client ID Metadata Document or registers itself
	// (RFC 7591), whichever the server supports.
	ClientID         string
	ClientSecretFile string
	// AuthorizationServer is the issuer URL; set, it skips discovery from
	// the upstream's 401 (RFC 9728).
	AuthorizationServer string
	// Resource is the RFC 8707 resource the token is for: the endpoint of
	// a remote server by default; required for a container
	// (env_from_upstream_auth), which has no endpoint the gateway calls.
	Resource string
	// TokenEndpoint and Audience are token_exchange's (RFC 8693); a
	// client_credentials server may name its token endpoint instead of an
	// authorization server.
	TokenEndpoint string
	Audience      string
}

// PerIdentity reports whether each caller gets credentials of their own
// (and so, for a container, a container of their own).
func (u *UpstreamAuth) PerIdentity() bool {
	return u != nil && u.Type != UpstreamClientCredentials
}

// serverUpstreamAuth decodes upstream_auth and env_from_upstream_auth.
func (d *decoder) serverUpstreamAuth(s *section, srv *Server, mode string) {
	envSet := s.str("env_from_upstream_auth", &srv.EnvFromUpstreamAuth,
		"The environment variable that receives the caller's upstream token; the server then runs one container per caller.")
	if envSet && (srv.EnvFromUpstreamAuth == "" || strings.ContainsAny(srv.EnvFromUpstreamAuth, "=\x00 ")) {
		d.add(s.at("env_from_upstream_auth"), "must be an environment variable name (got %q)", srv.EnvFromUpstreamAuth)
	}
	if !s.has("upstream_auth") {
		s.take("upstream_auth")
		if envSet {
			d.add(s.at("env_from_upstream_auth"), "needs upstream_auth: it names the variable that receives the caller's upstream token")
		}
		return
	}
	u := s.sub("upstream_auth", "How the gateway gets the token it presents to the upstream on each caller's behalf (docs/upstream-auth.md).")
	a := &UpstreamAuth{}
	srv.UpstreamAuth = a
	const typeDoc = "oauth: each caller logs in to the upstream once (authorization code with PKCE); token_exchange: the caller's JWT is exchanged for an upstream token (RFC 8693, needs auth.oidc); client_credentials: one service token for every caller."
	if !u.has("type") {
		u.def("type", typeDoc, "string")
		u.take("type")
		d.add(u.at("type"), "required (%s, %s or %s)", UpstreamOAuth, UpstreamTokenExchange, UpstreamClientCredentials)
	} else {
		u.enum("type", &a.Type, typeDoc, UpstreamOAuth, UpstreamTokenExchange, UpstreamClientCredentials)
	}
	if u.strList("scopes", &a.Scopes, "The OAuth scopes asked for.") {
		for i, sc := range a.Scopes {
			if sc == "" || strings.ContainsAny(sc, " \t\"\\") {
				d.add(index(u.at("scopes"), i), "must be one scope without spaces or quotes (got %q)", sc)
			}
		}
	}
	u.str("client_id", &a.ClientID,
		"A client registered with the authorization server by hand; without it the gateway uses its Client ID Metadata Document or registers itself (RFC 7591).")
	u.str("client_secret_file", &a.ClientSecretFile,
		"A file holding client_id's secret.")
	for _, f := range []struct {
		key, doc string
		dst      *string
	}{
		{"authorization_server", "The authorization server's issuer URL; set, it skips discovery from the upstream's 401 (RFC 9728). Required for an oauth container.", &a.AuthorizationServer},
		{"resource", "The RFC 8707 resource the token is for; default: a remote server's endpoint. Required for a container.", &a.Resource},
		{"token_endpoint", "token_exchange (required), client_credentials: the token endpoint.", &a.TokenEndpoint},
	} {
		key, dst := f.key, f.dst
		if u.str(key, dst, f.doc, format("uri")) {
			*dst = strings.TrimSuffix(*dst, "/")
			if msg := checkOAuthURL(*dst); msg != "" {
				d.add(u.at(key), "%s (got %q)", msg, *dst)
			}
		}
	}
	u.str("audience", &a.Audience, "token_exchange: the upstream the exchanged token is for (required).")
	u.finish()

	if a.ClientSecretFile != "" && a.ClientID == "" {
		d.add(u.at("client_secret_file"), "needs client_id: a secret belongs to a registered client")
	}
	container := mode == ModeDocker
	if container && !envSet {
		d.add(s.at("upstream_auth"), "a container gets its upstream token through env_from_upstream_auth: name the variable")
	}
	if container && a.Resource == "" && a.Type != UpstreamClientCredentials {
		d.add(u.at("resource"), "required for a container: the RFC 8707 resource (the API) its token is for")
	}
	switch a.Type {
	case UpstreamOAuth:
		if container && a.AuthorizationServer == "" {
			d.add(u.at("authorization_server"), "required for a container: there is no upstream 401 to discover it from")
		}
		if a.TokenEndpoint != "" || a.Audience != "" {
			d.add(u.at("token_endpoint"), "only for type token_exchange or client_credentials; type oauth finds it in the authorization server's metadata")
		}
	case UpstreamTokenExchange:
		if a.TokenEndpoint == "" {
			d.add(u.at("token_endpoint"), "required for type token_exchange")
		}
		if a.Audience == "" {
			d.add(u.at("audience"), "required for type token_exchange: the upstream the token is for")
		}
		if a.ClientID == "" {
			d.add(u.at("client_id"), "required for type token_exchange: the gateway authenticates its exchanges")
		}
	case UpstreamClientCredentials:
		if a.ClientID == "" || a.ClientSecretFile == "" {
			d.add(u.at("client_id"), "type client_credentials needs client_id and client_secret_file")
		}
		if container && a.TokenEndpoint == "" && a.AuthorizationServer == "" {
			d.add(u.at("token_endpoint"), "required for a container (or authorization_server): there is no upstream 401 to discover it from")
		}
	}
	for k := range srv.Headers {
		if strings.EqualFold(k, "Authorization") {
			d.add(join(s.at("headers"), k), "cannot be used with upstream_auth: the gateway sets Authorization to the caller's upstream token")
		}
	}
}

// checkUpstreamAuth checks what upstream_auth needs from the rest of the
// config.
func (d *decoder) checkUpstreamAuth(p string, cfg *Config) {
	for _, id := range sortedKeys(cfg.Servers) {
		srv := cfg.Servers[id]
		check := func(path string, s *Server) {
			if s.UpstreamAuth != nil && s.UpstreamAuth.Type == UpstreamTokenExchange && cfg.Auth.OIDC.Issuer == "" {
				d.add(join(path, "upstream_auth.type"), "token_exchange exchanges the caller's bearer JWT: it needs auth.oidc")
			}
		}
		check(join(p, id), srv)
		for i, m := range srv.Members {
			check(index(join(join(p, id), "members"), i), m)
		}
	}
}

// checkOAuthURL is the validation of a URL the gateway sends credentials
// to or receives them from: https, or http on loopback only.
func checkOAuthURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return "must be an https URL"
	}
	if u.Fragment != "" || u.RawQuery != "" {
		return "must not have a query or a fragment"
	}
	switch u.Scheme {
	case "https":
		return ""
	case "http":
		if IsLoopbackHost(u.Hostname()) {
			return ""
		}
		return "must be https (http only on a loopback address)"
	}
	return "must be an https URL"
}

// IsLoopbackHost reports whether h names this host's loopback (where
// plain http is accepted for OAuth URLs, as the specification allows).
func IsLoopbackHost(h string) bool {
	return h == "localhost" || strings.HasPrefix(h, "127.") || h == "::1"
}

// publicURL checks server.public_url and returns it without a trailing
// slash.
func (d *decoder) publicURL(path, raw string) string {
	v := strings.TrimSuffix(raw, "/")
	u, err := url.Parse(v)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		d.add(path, "must be an http(s) URL, e.g. https://hangar.example.com (got %q)", raw)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		d.add(path, "must have no query, fragment or user info (got %q)", raw)
	default:
		return v
	}
	return ""
}
