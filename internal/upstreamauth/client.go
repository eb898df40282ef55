package upstreamauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/store"
)

// How the gateway identified itself to an authorization server.
const (
	clientConfigured = "configured" // upstream_auth.client_id
	clientCIMD       = "cimd"       // the Client ID Metadata Document's URL
	clientDCR        = "dcr"        // registered dynamically (RFC 7591)
)

// clientInfo is the gateway as a client of one authorization server. Its
// secret, when it has one, is read when a token request needs it
// (secretOf), never kept here.
type clientInfo struct {
	ID        string
	AuthStyle oauth2.AuthStyle
	Kind      string
}

// registration is a dynamic registration, sealed in the keystore.
type registration struct {
	ClientID    string           `json:"client_id"`
	Secret      string           `json:"client_secret,omitempty"`
	AuthStyle   oauth2.AuthStyle `json:"auth_style"`
	RedirectURI string           `json:"redirect_uri"`
}

func clientRef(server, issuer string) string { return refClient + server + "/" + hashHex(issuer) }

// client identifies the gateway to d's authorization server, in the
// specification's order: a configured client, else the Client ID Metadata
// Document where the server supports them, else dynamic registration.
func (m *Manager) client(ctx context.Context, spec *config.Server, d *discovered) (clientInfo, error) {
	ua := spec.UpstreamAuth
	if ua.ClientID != "" {
		secret, err := readSecretFile(ua.ClientSecretFile)
		if err != nil {
			return clientInfo{}, err
		}
		style := oauth2.AuthStyleAutoDetect
		if secret == "" {
			style = oauth2.AuthStyleInParams
		}
		return clientInfo{ID: ua.ClientID, AuthStyle: style, Kind: clientConfigured}, nil
	}
	redirect, err := m.redirectURI()
	if err != nil {
		return clientInfo{}, err
	}
	if d.meta.ClientIDMetadataDocumentSupported && cimdUsable(redirect) {
		base, _ := m.publicURL()
		return clientInfo{ID: base + ClientMetadataPath, AuthStyle: oauth2.AuthStyleInParams, Kind: clientCIMD}, nil
	}
	if d.meta.RegistrationEndpoint == "" {
		return clientInfo{}, fmt.Errorf("upstream_auth: the authorization server of %s supports neither client ID metadata documents nor dynamic registration: register hangar there with redirect URI %s and set upstream_auth.client_id", spec.ID, redirect)
	}
	ref := clientRef(spec.ID, d.meta.Issuer)
	var reg registration
	err = m.getSealed(ctx, ref, &reg)
	if err == nil && reg.RedirectURI == redirect && reg.ClientID != "" {
		return clientInfo{ID: reg.ClientID, AuthStyle: reg.AuthStyle, Kind: clientDCR}, nil
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		m.o.Log.Warn("upstream_auth: stored client registration unreadable, registering again", "mcp_server", spec.ID, "error", err)
	}
	resp, err := oauthex.RegisterClient(ctx, d.meta.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs:            []string{redirect},
		TokenEndpointAuthMethod: "none", // a public client: PKCE protects the code
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		ClientName:              "hangar MCP gateway",
		Scope:                   strings.Join(d.scopes, " "),
	}, m.o.HTTP)
	if err != nil {
		return clientInfo{}, fmt.Errorf("upstream_auth: dynamic registration with %s: %w", d.meta.Issuer, err)
	}
	reg = registration{ClientID: resp.ClientID, Secret: resp.ClientSecret, AuthStyle: styleOf(resp.TokenEndpointAuthMethod), RedirectURI: redirect}
	if err := m.putSealed(ctx, ref, reg); err != nil {
		return clientInfo{}, fmt.Errorf("upstream_auth: keep the client registration: %w", err)
	}
	m.o.Log.Info("upstream_auth: registered with the authorization server", "mcp_server", spec.ID, "issuer", d.meta.Issuer)
	return clientInfo{ID: reg.ClientID, AuthStyle: reg.AuthStyle, Kind: clientDCR}, nil
}

// secretOf is the client secret a stored token's refresh needs.
func (m *Manager) secretOf(ctx context.Context, spec *config.Server, rec *tokenRecord) (string, error) {
	switch rec.ClientKind {
	case clientConfigured:
		return readSecretFile(spec.UpstreamAuth.ClientSecretFile)
	case clientDCR:
		var reg registration
		if err := m.getSealed(ctx, clientRef(spec.ID, rec.Issuer), &reg); err != nil {
			return "", fmt.Errorf("upstream_auth: client registration of %s: %w", spec.ID, err)
		}
		return reg.Secret, nil
	}
	return "", nil
}

// cimdUsable: an authorization server fetches the document from the
// client_id URL, so the URL must be https with a path (the draft's rule),
// or a loopback URL a server on the same host can fetch.
func cimdUsable(redirect string) bool {
	u, err := url.Parse(redirect)
	if err != nil {
		return false
	}
	return u.Scheme == "https" || (u.Scheme == "http" && config.IsLoopbackHost(u.Hostname()))
}

func styleOf(method string) oauth2.AuthStyle {
	switch method {
	case "client_secret_basic":
		return oauth2.AuthStyleInHeader
	case "client_secret_post", "none", "":
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleAutoDetect
}

// readSecretFile reads a client secret file ("" names none).
func readSecretFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	s, err := config.ReadSecretFile(path)
	if err != nil {
		return "", fmt.Errorf("upstream_auth: client_secret_file: %w", err)
	}
	if s == "" {
		return "", fmt.Errorf("upstream_auth: client_secret_file %s is empty", path)
	}
	return s, nil
}

// clientMetadata serves the Client ID Metadata Document: the gateway as
// an OAuth client, with its client_id the document's own URL.
func (m *Manager) clientMetadata(w http.ResponseWriter, _ *http.Request) {
	base, err := m.publicURL()
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=300")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"client_id":                  base + ClientMetadataPath,
		"client_name":                "hangar MCP gateway",
		"client_uri":                 base,
		"redirect_uris":              []string{base + CallbackPath},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	})
}
