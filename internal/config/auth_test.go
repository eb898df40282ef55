package config

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const canaryToken = "hgr_canary-secret-0123456789abcdef"

func TestParseAuth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "agent_token")
	if err := os.WriteFile(tokFile, []byte(canaryToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hash := sha256.Sum256([]byte(canaryToken))
	yaml := `
auth:
  rate_limit: {rps: 5, burst: 7}
  api_key_header: x-hangar-key
  allow_anonymous: true
  tokens:
    - name: byhash
      token_sha256: "` + strings.Repeat("ab", 32) + `"
      scopes: [hangar:read]
      servers: [math, "fs-*"]
      expires_at: 2027-01-01T00:00:00Z
    - name: byfile
      token_file: ` + tokFile + `
      scopes: [hangar:read, hangar:call]
      rate_limit: {rps: 1}
    - name: byenv
      token: ${AGENT_TOKEN}
      scopes: [hangar:admin]
  oidc: {issuer: "https://idp.example", audience: "https://gw.example/mcp", jwks_url: "https://idp.example/jwks"}
  generate_token: {file: /run/hangar/token}
`
	cfg, err := Parse([]byte(yaml), []string{"AGENT_TOKEN=" + canaryToken})
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Auth
	var want [32]byte
	for i := range want {
		want[i] = 0xab
	}
	if len(a.Tokens) != 3 {
		t.Fatalf("tokens = %d, want 3", len(a.Tokens))
	}
	if a.Tokens[0].SHA256 != want || !reflect.DeepEqual(a.Tokens[0].Servers, []string{"math", "fs-*"}) ||
		!a.Tokens[0].ExpiresAt.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) || a.Tokens[0].RateLimit != nil {
		t.Errorf("byhash = %+v", a.Tokens[0])
	}
	if a.Tokens[1].SHA256 != hash || a.Tokens[2].SHA256 != hash {
		t.Errorf("token_file and token must hash the trimmed token")
	}
	if rl := a.Tokens[1].RateLimit; rl == nil || *rl != (RateLimit{RPS: 1, Burst: 7}) {
		t.Errorf("per-token rate limit = %+v, want rps 1 and the global burst 7", rl)
	}
	if a.APIKeyHeader != "X-Hangar-Key" || !a.AllowAnonymous || a.OIDC.Audience != "https://gw.example/mcp" {
		t.Errorf("auth = %+v", a)
	}
	if g := a.GenerateToken; g.File != "/run/hangar/token" || g.Name != "generated" || !reflect.DeepEqual(g.Scopes, []string{"hangar:read", "hangar:call"}) {
		t.Errorf("generate_token = %+v", g)
	}
}

func TestParseAuthProblems(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("tiny\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, yaml string
		env        []string
		want       []string
	}{
		{"no credential", "auth: {tokens: [{name: a, scopes: [hangar:read]}]}\n", nil,
			[]string{"auth.tokens[0]: needs exactly one of token_sha256, token_file, token (got 0)"}},
		{"two credentials", "auth: {tokens: [{name: a, token: " + canaryToken + ", token_sha256: x, scopes: [hangar:read]}]}\n", nil,
			[]string{"auth.tokens[0]: needs exactly one of token_sha256, token_file, token (got 2)"}},
		{"bad hash", "auth: {tokens: [{name: a, token_sha256: abc, scopes: [hangar:read]}]}\n", nil,
			[]string{"auth.tokens[0].token_sha256: must be 64 hex digits (a SHA-256)"}},
		{"short token", "auth: {tokens: [{name: a, token: short, scopes: [hangar:read]}]}\n", nil,
			[]string{"auth.tokens[0].token: must be at least 16 characters"}},
		{"short token file", "auth: {tokens: [{name: a, token_file: " + short + ", scopes: [hangar:read]}]}\n", nil,
			[]string{"auth.tokens[0].token_file: the token in " + short + " is shorter than 16 characters"}},
		{"missing token file", "auth: {tokens: [{name: a, token_file: " + dir + "/nope, scopes: [hangar:read]}]}\n", nil,
			[]string{"auth.tokens[0].token_file: cannot read " + dir + "/nope: no such file or directory"}},
		{"unset env", "auth: {tokens: [{name: a, token: '${NOPE}', scopes: [hangar:read]}]}\n", nil,
			[]string{"auth.tokens[0].token: environment variable NOPE is not set"}},
		{"no scopes", "auth: {tokens: [{name: a, token: " + canaryToken + "}]}\n", nil,
			[]string{"auth.tokens[0].scopes: required: at least one of hangar:read, hangar:call, hangar:admin"}},
		{"unknown scope", "auth: {tokens: [{name: a, token: " + canaryToken + ", scopes: [hangar:write]}]}\n", nil,
			[]string{`auth.tokens[0].scopes[0]: unknown scope "hangar:write" (known: hangar:read, hangar:call, hangar:admin)`}},
		{"no name", "auth: {tokens: [{token: " + canaryToken + ", scopes: [hangar:read]}]}\n", nil,
			[]string{"auth.tokens[0].name: required"}},
		{"duplicate name", "auth: {tokens: [{name: a, token: " + canaryToken + ", scopes: [hangar:read]}, {name: a, token: " + canaryToken + "x, scopes: [hangar:read]}]}\n", nil,
			[]string{`auth.tokens[1].name: duplicate token name "a"`}},
		{"bad expiry", "auth: {tokens: [{name: a, token: " + canaryToken + ", scopes: [hangar:read], expires_at: soon}]}\n", nil,
			[]string{`auth.tokens[0].expires_at: must be an RFC 3339 time such as 2027-01-01T00:00:00Z (got "soon")`}},
		{"unknown token key", "auth: {tokens: [{name: a, token: " + canaryToken + ", scopes: [hangar:read], role: x}]}\n", nil,
			[]string{"auth.tokens[0].role: unknown key"}},
		{"api key header", "auth: {api_key_header: authorization}\n", nil,
			[]string{"auth.api_key_header: must not be Authorization (bearer tokens are read from it anyway)"}},
		{"oidc incomplete", "auth: {oidc: {issuer: 'ftp://x'}}\n", nil,
			[]string{"auth.oidc.audience: required", `auth.oidc.issuer: must be an http(s) URL (got "ftp://x")`, "auth.oidc.jwks_url: required"}},
		{"generate without file", "auth: {generate_token: {scopes: [nope]}}\n", nil,
			[]string{"auth.generate_token.file: required", `auth.generate_token.scopes[0]: unknown scope "nope" (known: hangar:read, hangar:call, hangar:admin)`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.yaml), tc.env)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a ValidationError", err)
			}
			var got []string
			for _, p := range ve.Problems {
				got = append(got, p.Path+": "+p.Message)
				if strings.Contains(p.Message, canaryToken) {
					t.Errorf("problem quotes the token: %s", p.Message)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n got  %q\n want %q", got, tc.want)
			}
		})
	}
}

func TestSecretsFromFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := filepath.Join(dir, "api_key")
	envFile := filepath.Join(dir, "math.env")
	if err := os.WriteFile(secret, []byte("s3cret-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(envFile, []byte("# comment\nexport A=1\nB=\"two words\"\nC=from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := dockerMath + "    env: {API_KEY: '${API_KEY}', C: from-env}\n    env_files: [" + envFile + "]\n"
	cfg, err := Parse([]byte(yaml), []string{"API_KEY_FILE=" + secret})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"API_KEY": "s3cret-from-file", "A": "1", "B": "two words", "C": "from-env"}
	if got := cfg.Servers["math"].Env; !reflect.DeepEqual(got, want) {
		t.Errorf("env = %v, want %v", got, want)
	}

	bad := filepath.Join(dir, "bad.env")
	if err := os.WriteFile(bad, []byte("OK=1\nnot a pair s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Parse([]byte(dockerMath+"    env: {X: '${X}'}\n    env_files: ["+bad+"]\n"), []string{"X_FILE=" + dir + "/missing"})
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	msg := ve.Error()
	for _, w := range []string{"mcp_servers.math.env.X: environment variable X_FILE: cannot read " + dir + "/missing",
		"mcp_servers.math.env_files[0]: " + bad + ": line 2: want KEY=VALUE"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q lacks %q", msg, w)
		}
	}
	if strings.Contains(msg, "s3cret") {
		t.Errorf("error quotes a secret: %s", msg)
	}
}
