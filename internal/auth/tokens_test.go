package auth

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
)

func TestNewToken(t *testing.T) {
	t.Parallel()
	a, _ := NewToken()
	b, _ := NewToken()
	if a == b || !strings.HasPrefix(a, TokenPrefix) || len(a) != len(TokenPrefix)+43 {
		t.Errorf("tokens %q %q", a, b)
	}
	y := TokenEntryYAML("agent", a, []string{ScopeRead}, []string{"math"})
	if strings.Contains(y, a) || !strings.Contains(y, HashHex(a)) {
		t.Errorf("entry:\n%s", y)
	}
	cfg, err := config.Parse([]byte(y), nil)
	if err != nil {
		t.Fatalf("the entry does not load: %v", err)
	}
	if got := cfg.Auth.Tokens[0]; got.SHA256 != sha256.Sum256([]byte(a)) || got.Servers[0] != "math" {
		t.Errorf("loaded %+v", got)
	}
}

func TestEnsureTokenFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "sub", "token")
	g := config.GenerateToken{File: file, Name: "generated", Scopes: []string{ScopeRead, ScopeCall}}
	// Gateways starting together on one volume agree on one token.
	var wg sync.WaitGroup
	got := make([]config.Token, 4)
	created := make([]bool, 4)
	for i := range got {
		wg.Go(func() {
			var err error
			got[i], created[i], err = EnsureTokenFile(g)
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	n := 0
	for i := range got {
		if created[i] {
			n++
		}
		if got[i].SHA256 != got[0].SHA256 {
			t.Error("two different tokens")
		}
	}
	if n != 1 {
		t.Errorf("%d gateways created the file, want 1", n)
	}
	b, _ := os.ReadFile(file)
	tok := strings.TrimSpace(string(b))
	au := NewAuthenticator(context.Background(), config.Auth{}, Options{Extra: []config.Token{got[0]}})
	id, _, err := au.Authenticate(context.Background(), tok)
	if err != nil || id.Name != "generated" || !id.Has(ScopeCall) || id.Has(ScopeAdmin) {
		t.Errorf("the file's token: %+v %v", id, err)
	}
	if _, created, _ := EnsureTokenFile(g); created {
		t.Error("an existing file was replaced")
	}
	if err := os.WriteFile(file, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := EnsureTokenFile(g); err == nil {
		t.Error("a file with no usable token was accepted")
	}
}

func TestAuthenticateTokens(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	mk := func(name, tok string, exp time.Time) config.Token {
		return config.Token{Name: name, SHA256: sha256.Sum256([]byte(tok)), Scopes: []string{ScopeRead}, ExpiresAt: exp}
	}
	au := NewAuthenticator(context.Background(), config.Auth{Tokens: []config.Token{
		mk("a", "token-a-0123456789", time.Time{}),
		mk("b", "token-b-0123456789", now.Add(time.Second)),
		mk("c", "token-c-0123456789", now),
	}}, Options{Now: func() time.Time { return now }})
	for tok, want := range map[string]string{
		"token-a-0123456789": "a", "token-b-0123456789": "b", "token-c-0123456789": "",
		"token-a-012345678": "", "": "", "a.b.c": "",
	} {
		id, _, err := au.Authenticate(context.Background(), tok)
		if id.Name != want || (err == nil) != (want != "") {
			t.Errorf("Authenticate(%q) = %q, %v; want %q", tok, id.Name, err, want)
		}
		if err != nil && strings.Contains(err.Error(), tok) && tok != "" {
			t.Errorf("error quotes the credential: %v", err)
		}
	}
}
