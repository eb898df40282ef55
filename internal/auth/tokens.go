package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcp-hangar/hangar/internal/config"
)

// TokenPrefix marks hangar tokens, so secret scanners and people recognise
// one in a paste or a log.
const TokenPrefix = "hgr_"

// NewToken returns a fresh random token: 32 bytes from crypto/rand.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// HashHex is the token_sha256 value of a token.
func HashHex(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

// TokenEntryYAML is the auth.tokens entry for a token: its hash only.
func TokenEntryYAML(name, tok string, scopes, servers []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "auth:\n  tokens:\n    - name: %s\n      token_sha256: %q\n      scopes: [%s]\n", name, HashHex(tok), strings.Join(scopes, ", "))
	if len(servers) > 0 {
		q := make([]string, len(servers))
		for i, s := range servers {
			q[i] = fmt.Sprintf("%q", s)
		}
		fmt.Fprintf(&b, "      servers: [%s]\n", strings.Join(q, ", "))
	}
	return b.String()
}

// EnsureTokenFile returns the token entry for auth.generate_token: the
// token already in g.File, or a new one written there (created true). The
// file is created exclusively, so two gateways starting on the same
// volume cannot write different tokens. It is readable by every user of
// the volume (0644): mounting the volume is what grants access, and agent
// containers rarely run as the gateway's user.
func EnsureTokenFile(g config.GenerateToken) (t config.Token, created bool, err error) {
	t = config.Token{Name: g.Name, Scopes: g.Scopes}
	if b, rerr := os.ReadFile(g.File); rerr == nil {
		tok := strings.TrimSpace(string(b))
		if len(tok) < config.MinTokenLength {
			return t, false, fmt.Errorf("token file %s: holds no usable token (shorter than %d characters)", g.File, config.MinTokenLength)
		}
		t.SHA256 = sha256.Sum256([]byte(tok))
		return t, false, nil
	} else if !errors.Is(rerr, fs.ErrNotExist) {
		return t, false, fmt.Errorf("token file: %w", rerr)
	}
	tok, err := NewToken()
	if err != nil {
		return t, false, err
	}
	if err := os.MkdirAll(filepath.Dir(g.File), 0o755); err != nil {
		return t, false, fmt.Errorf("token file: %w", err)
	}
	// Written whole to a temporary file, then linked into place: a link
	// fails if the name exists, so of gateways starting together on one
	// volume exactly one creates the file, and nobody ever reads it half
	// written.
	tmp, err := os.CreateTemp(filepath.Dir(g.File), ".token-*")
	if err != nil {
		return t, false, fmt.Errorf("token file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return t, false, fmt.Errorf("token file: %w", err)
	}
	if _, err := tmp.WriteString(tok + "\n"); err != nil {
		tmp.Close()
		return t, false, fmt.Errorf("token file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return t, false, fmt.Errorf("token file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return t, false, fmt.Errorf("token file: %w", err)
	}
	if err := os.Link(tmp.Name(), g.File); errors.Is(err, fs.ErrExist) {
		return EnsureTokenFile(g) // another gateway won the race
	} else if err != nil {
		return t, false, fmt.Errorf("token file: %w", err)
	}
	t.SHA256 = sha256.Sum256([]byte(tok))
	return t, true, nil
}
