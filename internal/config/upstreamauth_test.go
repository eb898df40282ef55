package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestUpstreamAuthConfig(t *testing.T) {
	t.Parallel()
	const remote = "mcp_servers:\n  gh:\n    mode: remote\n    endpoint: https://api.example.com/mcp\n"
	const docker = "mcp_servers:\n  gh:\n    mode: docker\n    image: x\n"
	tests := []struct {
		name     string
		yaml     string
		want     *UpstreamAuth
		wantEnv  string
		wantErrs []string
	}{
		{
			name: "oauth with discovery",
			yaml: remote + "    upstream_auth: {type: oauth, scopes: [repo, read:org]}\n",
			want: &UpstreamAuth{Type: UpstreamOAuth, Scopes: []string{"repo", "read:org"}},
		},
		{
			name: "oauth with a configured client and server",
			yaml: remote + "    upstream_auth: {type: OAuth, client_id: hangar, client_secret_file: /run/secrets/gh, authorization_server: 'https://login.example.com/'}\n",
			want: &UpstreamAuth{Type: UpstreamOAuth, ClientID: "hangar", ClientSecretFile: "/run/secrets/gh", AuthorizationServer: "https://login.example.com"},
		},
		{
			name: "token exchange",
			yaml: remote + "    upstream_auth: {type: token_exchange, token_endpoint: https://sts.example.com/token, audience: api, client_id: hangar}\n" +
				"auth: {oidc: {issuer: https://idp.example.com, audience: https://hangar.example.com/mcp, jwks_url: https://idp.example.com/jwks}}\n",
			want: &UpstreamAuth{Type: UpstreamTokenExchange, TokenEndpoint: "https://sts.example.com/token", Audience: "api", ClientID: "hangar"},
		},
		{
			name: "client credentials",
			yaml: remote + "    upstream_auth: {type: client_credentials, client_id: svc, client_secret_file: /s}\n",
			want: &UpstreamAuth{Type: UpstreamClientCredentials, ClientID: "svc", ClientSecretFile: "/s"},
		},
		{
			name:    "a container per identity",
			yaml:    docker + "    env_from_upstream_auth: GITHUB_TOKEN\n    upstream_auth: {type: oauth, authorization_server: https://github.example.com, resource: https://api.github.example.com, client_id: c}\n",
			want:    &UpstreamAuth{Type: UpstreamOAuth, AuthorizationServer: "https://github.example.com", Resource: "https://api.github.example.com", ClientID: "c"},
			wantEnv: "GITHUB_TOKEN",
		},
		{
			name:     "type is required",
			yaml:     remote + "    upstream_auth: {scopes: [a]}\n",
			wantErrs: []string{"mcp_servers.gh.upstream_auth.type: required"},
		},
		{
			name:     "unknown type",
			yaml:     remote + "    upstream_auth: {type: basic}\n",
			wantErrs: []string{"mcp_servers.gh.upstream_auth.type: must be one of oauth, token_exchange, client_credentials"},
		},
		{
			name:     "unknown key suggests nothing silently",
			yaml:     remote + "    upstream_auth: {type: oauth, scope: [a]}\n",
			wantErrs: []string{"mcp_servers.gh.upstream_auth.scope: unknown key"},
		},
		{
			name:     "secret without client",
			yaml:     remote + "    upstream_auth: {type: oauth, client_secret_file: /s}\n",
			wantErrs: []string{"mcp_servers.gh.upstream_auth.client_secret_file: needs client_id"},
		},
		{
			name:     "plain http to a remote host",
			yaml:     remote + "    upstream_auth: {type: oauth, authorization_server: http://login.example.com}\n",
			wantErrs: []string{"mcp_servers.gh.upstream_auth.authorization_server: must be https (http only on a loopback address)"},
		},
		{
			name:     "a scope with a space",
			yaml:     remote + "    upstream_auth: {type: oauth, scopes: ['a b']}\n",
			wantErrs: []string{"mcp_servers.gh.upstream_auth.scopes[0]: must be one scope"},
		},
		{
			name:     "token exchange needs its endpoint, audience, client and auth.oidc",
			yaml:     remote + "    upstream_auth: {type: token_exchange}\n",
			wantErrs: []string{"upstream_auth.token_endpoint: required", "upstream_auth.audience: required", "upstream_auth.client_id: required", "mcp_servers.gh.upstream_auth.type: token_exchange exchanges the caller's bearer JWT: it needs auth.oidc"},
		},
		{
			name:     "client credentials needs a client",
			yaml:     remote + "    upstream_auth: {type: client_credentials}\n",
			wantErrs: []string{"mcp_servers.gh.upstream_auth.client_id: type client_credentials needs client_id and client_secret_file"},
		},
		{
			name:     "Authorization header beside upstream_auth",
			yaml:     remote + "    headers: {Authorization: Bearer x}\n    upstream_auth: {type: oauth}\n",
			wantErrs: []string{"mcp_servers.gh.headers.Authorization: cannot be used with upstream_auth"},
		},
		{
			name:     "env without upstream_auth",
			yaml:     docker + "    env_from_upstream_auth: TOKEN\n",
			wantErrs: []string{"mcp_servers.gh.env_from_upstream_auth: needs upstream_auth"},
		},
		{
			name:     "container without env, resource or server",
			yaml:     docker + "    upstream_auth: {type: oauth}\n",
			wantErrs: []string{"mcp_servers.gh.upstream_auth: a container gets its upstream token through env_from_upstream_auth", "upstream_auth.resource: required for a container", "upstream_auth.authorization_server: required for a container"},
		},
		{
			name:     "not for subprocesses",
			yaml:     "mcp_servers:\n  p:\n    mode: subprocess\n    command: x\n    upstream_auth: {type: oauth}\n",
			wantErrs: []string{"mcp_servers.p.upstream_auth: not allowed for mode subprocess"},
		},
		{
			name:     "env only for containers",
			yaml:     remote + "    env_from_upstream_auth: T\n    upstream_auth: {type: oauth}\n",
			wantErrs: []string{"mcp_servers.gh.env_from_upstream_auth: not allowed for mode remote"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(tt.yaml), nil)
			if len(tt.wantErrs) > 0 {
				if err == nil {
					t.Fatalf("loaded; want errors %v", tt.wantErrs)
				}
				for _, w := range tt.wantErrs {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.Servers["gh"].UpstreamAuth
			if got == nil {
				t.Fatal("upstream_auth not decoded")
			}
			if got.Type != tt.want.Type || !slices.Equal(got.Scopes, tt.want.Scopes) || got.ClientID != tt.want.ClientID ||
				got.ClientSecretFile != tt.want.ClientSecretFile || got.AuthorizationServer != tt.want.AuthorizationServer ||
				got.Resource != tt.want.Resource || got.TokenEndpoint != tt.want.TokenEndpoint || got.Audience != tt.want.Audience {
				t.Errorf("upstream_auth = %+v, want %+v", *got, *tt.want)
			}
			if e := cfg.Servers["gh"].EnvFromUpstreamAuth; e != tt.wantEnv {
				t.Errorf("env_from_upstream_auth = %q, want %q", e, tt.wantEnv)
			}
		})
	}
}

func TestPublicURL(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("server: {public_url: 'https://hangar.example.com/'}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTP.PublicURL != "https://hangar.example.com" {
		t.Errorf("public_url = %q, want it without the trailing slash", cfg.HTTP.PublicURL)
	}
	cfg, err = Parse([]byte("{}\n"), []string{"HANGAR_SERVER__PUBLIC_URL=http://127.0.0.1:9000"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTP.PublicURL != "http://127.0.0.1:9000" {
		t.Errorf("from HANGAR_SERVER__PUBLIC_URL: public_url = %q", cfg.HTTP.PublicURL)
	}
	for _, bad := range []string{"hangar.example.com", "ftp://x", "https://x/?a=b", "https://u:p@x"} {
		if _, err := Parse([]byte("server: {public_url: '"+bad+"'}\n"), nil); err == nil || !strings.Contains(err.Error(), "server.public_url: must") {
			t.Errorf("public_url %q: error %v, want one naming server.public_url", bad, err)
		}
	}
}

// TestUpstreamAuthDocs: every YAML sample of docs/upstream-auth.md loads
// as it is written.
func TestUpstreamAuthDocs(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "upstream-auth.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(doc), "```yaml\n")[1:]
	if len(blocks) < 3 {
		t.Fatalf("%d yaml samples, want at least 3", len(blocks))
	}
	for i, b := range blocks {
		sample, _, _ := strings.Cut(b, "```")
		if _, err := Parse([]byte(sample), nil); err != nil {
			t.Errorf("sample %d does not load: %v\n%s", i+1, err, sample)
		}
	}
}
