package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/provider"
)

func testApp(t *testing.T, tune func(*config.Auth)) (*App, *bytes.Buffer) {
	t.Helper()
	cfg := config.Default()
	if tune != nil {
		tune(&cfg.Auth)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	mgr := provider.NewManager(nil, provider.Options{Log: log})
	return &App{Config: cfg, Log: log, ctx: t.Context(), Gateway: gateway.New(cfg, mgr, nil, nil, log)}, &logs
}

var (
	loopback = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	exposed  = &net.TCPAddr{IP: net.IPv4zero, Port: 8080}
)

// TestSafeByDefault: who may call /mcp, by listen address and config.
func TestSafeByDefault(t *testing.T) {
	t.Parallel()
	tok := config.Token{Name: "agent", SHA256: sha256.Sum256([]byte("hgr_agent-0123456789abc")), Scopes: []string{"hangar:read"}}
	tests := []struct {
		name    string
		addr    net.Addr
		tune    func(*config.Auth)
		refused bool   // start-up refused
		anon    int    // status of a request without a token
		warning string // in the start-up log
	}{
		{"loopback, no tokens: local dev", loopback, nil, false, http.StatusOK, ""},
		{"loopback with tokens needs them", loopback, func(a *config.Auth) { a.Tokens = []config.Token{tok} }, false, http.StatusUnauthorized, ""},
		{"exposed, no tokens: refused", exposed, nil, true, 0, ""},
		{"exposed with tokens", exposed, func(a *config.Auth) { a.Tokens = []config.Token{tok} }, false, http.StatusUnauthorized, ""},
		{"exposed, anonymous allowed", exposed, func(a *config.Auth) { a.AllowAnonymous = true }, false, http.StatusOK, "serving without authentication"},
		{"exposed with tokens and anonymous: anonymous may look", exposed, func(a *config.Auth) { a.Tokens = []config.Token{tok}; a.AllowAnonymous = true }, false, http.StatusOK, ""},
		{"exposed with oidc", exposed, func(a *config.Auth) {
			a.OIDC = config.OIDC{Issuer: "https://idp.example", Audience: "https://gw.example/mcp", JWKSURL: "https://idp.example/jwks"}
		}, false, http.StatusUnauthorized, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, logs := testApp(t, tc.tune)
			h, err := a.AuthHTTP(tc.addr)
			if tc.refused {
				if !errors.Is(err, ErrExposedWithoutAuth) {
					t.Fatalf("err = %v, want a refusal", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.warning != "" && !strings.Contains(logs.String(), tc.warning) {
				t.Errorf("no warning in %q", logs.String())
			}
			ep := a.Gateway.HTTP(a.Gateway.MCPServer(), endpoint.Options{Auth: h})
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			rec := httptest.NewRecorder()
			ep.Handler.ServeHTTP(rec, req)
			if rec.Code != tc.anon {
				t.Errorf("request without token: %d, want %d (%s)", rec.Code, tc.anon, rec.Body.String())
			}
		})
	}
}

// TestGeneratedToken: auth.generate_token makes an exposed gateway start
// authenticated, writes the token to the file and never logs it.
func TestGeneratedToken(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "token")
	a, logs := testApp(t, func(c *config.Auth) {
		c.GenerateToken = config.GenerateToken{File: file, Name: "generated", Scopes: []string{"hangar:read", "hangar:call"}}
	})
	h, err := a.AuthHTTP(exposed)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(string(b))
	if strings.Contains(logs.String(), tok) || !strings.Contains(logs.String(), file) {
		t.Errorf("log: %s", logs.String())
	}
	id, _, err := h.Auth.Authenticate(context.Background(), tok)
	if err != nil || id.Name != "generated" {
		t.Errorf("generated token: %+v %v", id, err)
	}
}

// TestReloadRevokesToken: a token removed from the file stops working at
// the next reload, and a new one starts working, without a restart.
func TestReloadRevokesToken(t *testing.T) {
	t.Parallel()
	const oldTok, newTok = "hgr_old-token-0123456789", "hgr_new-token-0123456789"
	path := filepath.Join(t.TempDir(), "config.yaml")
	write := func(tok string, more ...string) {
		y := "auth:\n  tokens:\n    - {name: t, token_sha256: \"" + hashHex(tok) + "\", scopes: [hangar:read]}\n" + strings.Join(more, "")
		if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(oldTok)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := testApp(t, nil)
	a.Config = cfg
	a.Gateway = gateway.New(cfg, provider.NewManager(nil, provider.Options{Log: a.Log}), nil, nil, a.Log)
	h, err := a.AuthHTTP(exposed)
	if err != nil {
		t.Fatal(err)
	}
	ep := a.Gateway.HTTP(a.Gateway.MCPServer(), endpoint.Options{Auth: h})
	status := func(tok string, header ...string) int {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		switch {
		case len(header) > 0:
			req.Header.Set(header[0], tok)
		case tok != "":
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		rec := httptest.NewRecorder()
		ep.Handler.ServeHTTP(rec, req)
		return rec.Code
	}
	if status(oldTok) != http.StatusOK || status(newTok) != http.StatusUnauthorized {
		t.Fatal("before reload")
	}
	write(newTok)
	if r := a.Gateway.Reload(t.Context(), true); r.Status != "success" {
		t.Fatalf("reload: %+v", r)
	}
	if s := status(oldTok); s != http.StatusUnauthorized {
		t.Errorf("revoked token: %d", s)
	}
	if s := status(newTok); s != http.StatusOK {
		t.Errorf("new token: %d", s)
	}

	// The API key header and anonymous access follow a reload too.
	if s := status(newTok, "X-Hangar-Key"); s != http.StatusUnauthorized {
		t.Errorf("key in a header not configured yet: %d", s)
	}
	if s := status(""); s != http.StatusUnauthorized {
		t.Errorf("anonymous before it is allowed: %d", s)
	}
	write(newTok, "  api_key_header: X-Hangar-Key\n  allow_anonymous: true\n")
	if r := a.Gateway.Reload(t.Context(), true); r.Status != "success" {
		t.Fatalf("reload: %+v", r)
	}
	if s := status(newTok, "X-Hangar-Key"); s != http.StatusOK {
		t.Errorf("key in the reloaded header: %d", s)
	}
	if s := status(""); s != http.StatusOK {
		t.Errorf("anonymous once allowed: %d", s)
	}
	if s := status(oldTok, "X-Hangar-Key"); s != http.StatusUnauthorized {
		t.Errorf("revoked token in the new header: %d", s)
	}
}

func hashHex(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}
