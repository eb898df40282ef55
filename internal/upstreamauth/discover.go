package upstreamauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	goauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/redact"
)

// discovered is what the gateway learned of a server's authorization:
// its authorization server's metadata, the resource its tokens are for
// and the scopes to ask.
type discovered struct {
	key      string // what it was learned for (discoveryKey)
	meta     *oauthex.AuthServerMeta
	resource string
	scopes   []string
	at       time.Time
}

// discoveryTTL bounds how long discovered metadata is used before it is
// read again.
const discoveryTTL = time.Hour

// discoveryKey changes whenever what discovery depends on changes.
func discoveryKey(spec *config.Server) string {
	ua := spec.UpstreamAuth
	return strings.Join([]string{spec.Endpoint, ua.AuthorizationServer, ua.Resource, ua.TokenEndpoint, strings.Join(ua.Scopes, " ")}, "\x00")
}

// discover returns spec's authorization server, from the cache or found
// afresh: the configured authorization_server, else the one the
// upstream's 401 names.
func (m *Manager) discover(ctx context.Context, spec *config.Server) (*discovered, error) {
	key := discoveryKey(spec)
	m.mu.Lock()
	d, ok := m.servers[spec.ID]
	m.mu.Unlock()
	if ok && d.key == key && m.o.Now().Sub(d.at) < discoveryTTL {
		return d, nil
	}
	d, err := m.discoverNow(ctx, spec)
	if err != nil {
		// What was tried names endpoints, which may carry credentials.
		return nil, fmt.Errorf("upstream_auth: discovery for %s: %s", spec.ID, redact.Text(err.Error()))
	}
	d.key, d.at = key, m.o.Now()
	m.mu.Lock()
	m.servers[spec.ID] = d
	m.mu.Unlock()
	return d, nil
}

// forgetDiscovery makes the next flow discover again (after a failure
// that stale metadata may explain).
func (m *Manager) forgetDiscovery(server string) {
	m.mu.Lock()
	delete(m.servers, server)
	m.mu.Unlock()
}

func (m *Manager) discoverNow(ctx context.Context, spec *config.Server) (*discovered, error) {
	ua := spec.UpstreamAuth
	d := &discovered{resource: ua.Resource, scopes: ua.Scopes}
	if d.resource == "" {
		d.resource = spec.Endpoint
	}
	issuer := ua.AuthorizationServer
	if issuer == "" {
		if spec.Endpoint == "" {
			return nil, errors.New("no endpoint to discover the authorization server from: set upstream_auth.authorization_server")
		}
		prm, challengeScopes, err := m.protectedResource(ctx, spec.Endpoint)
		if err != nil {
			return nil, err
		}
		issuer = prm.AuthorizationServers[0]
		d.resource = prm.Resource
		if len(d.scopes) == 0 {
			// The scopes the 401 asked for, else those the resource
			// lists (the specification's scope selection).
			d.scopes = challengeScopes
			if len(d.scopes) == 0 {
				d.scopes = prm.ScopesSupported
			}
		}
	}
	if ua.Type == config.UpstreamTokenExchange {
		return d, nil // its token endpoint is configured
	}
	if ua.Type == config.UpstreamClientCredentials && ua.TokenEndpoint != "" {
		d.meta = &oauthex.AuthServerMeta{Issuer: issuer, TokenEndpoint: ua.TokenEndpoint}
		return d, nil
	}
	meta, err := goauth.GetAuthServerMetadata(ctx, issuer, m.o.HTTP)
	if err != nil {
		return nil, fmt.Errorf("authorization server metadata of %s: %w", issuer, err)
	}
	if meta == nil {
		return nil, fmt.Errorf("authorization server %s publishes no metadata (RFC 8414 or OpenID discovery)", issuer)
	}
	if ua.Type == config.UpstreamOAuth && !slices.Contains(meta.CodeChallengeMethodsSupported, "S256") {
		// The specification: without PKCE S256 the client must refuse.
		return nil, fmt.Errorf("authorization server %s does not support PKCE with S256", issuer)
	}
	d.meta = meta
	return d, nil
}

// protectedResource finds the upstream's Protected Resource Metadata: an
// unauthenticated request draws a 401 whose WWW-Authenticate names it
// (resource_metadata), else the well-known URLs (path-suffixed, then the
// root) are tried. The document must be for endpoint itself (RFC 9728
// §3.3) and name an authorization server.
func (m *Manager) protectedResource(ctx context.Context, endpoint string) (*oauthex.ProtectedResourceMetadata, []string, error) {
	challenges, err := m.challenge(ctx, endpoint)
	if err != nil {
		return nil, nil, err
	}
	var named string
	var scopes []string
	for _, c := range challenges {
		if c.Scheme != "bearer" {
			continue
		}
		if named == "" {
			named = c.Params["resource_metadata"]
		}
		if scopes == nil && c.Params["scope"] != "" {
			scopes = strings.Fields(c.Params["scope"])
		}
	}
	var tried []string
	for _, u := range metadataURLs(named, endpoint) {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, u, endpoint, m.o.HTTP)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", u, err))
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, nil, fmt.Errorf("protected resource metadata at %s names no authorization server", u)
		}
		return prm, scopes, nil
	}
	return nil, nil, fmt.Errorf("no protected resource metadata for %s (%s)", endpoint, strings.Join(tried, "; "))
}

// metadataURLs are where the metadata of endpoint may be: the URL its
// 401 named, then the well-known URLs.
func metadataURLs(named, endpoint string) []string {
	var out []string
	if named != "" {
		out = append(out, named)
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return out
	}
	u.RawQuery, u.Fragment = "", ""
	path := strings.TrimSuffix(u.Path, "/")
	if path != "" {
		u.Path = "/.well-known/oauth-protected-resource" + path
		out = append(out, u.String())
	}
	u.Path = "/.well-known/oauth-protected-resource"
	return append(out, u.String())
}

// initializeProbe is the request that draws the upstream's 401: an MCP
// initialize without credentials.
const initializeProbe = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hangar","version":"discovery"}}}`

// challenge sends the probe and returns the 401's challenges (none for
// another answer).
func (m *Manager) challenge(ctx context.Context, endpoint string) ([]oauthex.Challenge, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader([]byte(initializeProbe)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := m.o.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("probe of the upstream: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		return nil, nil
	}
	return oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
}
