package auth

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcp-hangar/hangar/internal/config"
)

// TestJWTIdentityKeepsIssuerAndBearer: a JWT caller's identity names its
// issuer (a subject is unique only within it) and carries the JWT for a
// token exchange, where no print, log or JSON of the identity shows it.
func TestJWTIdentityKeepsIssuerAndBearer(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	const iss = "https://idp.example.com"
	au := NewAuthenticator(t.Context(), config.Auth{OIDC: config.OIDC{Issuer: iss, Audience: "https://hangar.example.com/mcp"}},
		Options{KeySet: &oidc.StaticKeySet{PublicKeys: []crypto.PublicKey{&key.PublicKey}}})
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(sig).Claims(jwt.Claims{Issuer: iss, Subject: "alice", Audience: jwt.Audience{"https://hangar.example.com/mcp"},
		Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour))}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := au.Authenticate(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if id.Kind != KindJWT || id.Name != "alice" || id.Issuer != iss {
		t.Errorf("identity %s/%s from %q, want jwt/alice from %q", id.Kind, id.Name, id.Issuer, iss)
	}
	if id.Bearer() != raw {
		t.Error("Bearer() is not the caller's JWT")
	}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "identity", id)
	js, _ := json.Marshal(id)
	for what, text := range map[string]string{"%+v": fmt.Sprintf("%+v", id), "%#v": fmt.Sprintf("%#v", id), "slog": logged.String(), "json": string(js)} {
		if strings.Contains(text, raw) || strings.Contains(text, strings.Split(raw, ".")[1]) {
			t.Errorf("%s of the identity shows the JWT", what)
		}
	}
	if tokID := NewIdentity("agent", KindToken, nil, nil); tokID.Bearer() != "" || tokID.Issuer != "" {
		t.Error("a static token's identity has a bearer or an issuer")
	}
}
