package auth

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"reflect"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcp-hangar/hangar/internal/config"
)

// What policy rules see of a caller (identity.*): a static token's name
// and groups; a JWT's subject, issuer, claims and groups claim.
func TestPolicySubject(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	const issuer, audience = "https://idp.example", "https://hangar.example"
	sign := func(claims map[string]any) string {
		sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT"))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := jwt.Signed(sig).Claims(jwt.Claims{Issuer: issuer, Subject: "ann", Audience: jwt.Audience{audience},
			Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour))}).Claims(claims).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	tok := config.Token{Name: "ci", SHA256: sha256.Sum256([]byte("token-ci-0123456789")), Scopes: []string{ScopeCall}, Groups: []string{"deploy"}}
	for _, tc := range []struct {
		name   string
		claim  string // auth.oidc.groups_claim ("" the default)
		cred   string
		groups []string
		dept   any
	}{
		{"a static token", "", "token-ci-0123456789", []string{"deploy"}, nil},
		{"a list claim", "", sign(map[string]any{"scope": "hangar:call", "groups": []string{"dev", "oncall"}, "dept": "ops"}), []string{"dev", "oncall"}, "ops"},
		{"a string claim", "", sign(map[string]any{"scope": "hangar:call", "groups": "dev oncall,sre"}), []string{"dev", "oncall", "sre"}, nil},
		{"another claim", "roles", sign(map[string]any{"scope": "hangar:call", "groups": []string{"x"}, "roles": []string{"admin"}}), []string{"admin"}, nil},
		{"no groups", "", sign(map[string]any{"scope": "hangar:call", "groups": 7}), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			au := NewAuthenticator(context.Background(), config.Auth{Tokens: []config.Token{tok},
				OIDC: config.OIDC{Issuer: issuer, Audience: audience, JWKSURL: issuer + "/jwks", GroupsClaim: tc.claim}},
				Options{KeySet: &oidc.StaticKeySet{PublicKeys: []crypto.PublicKey{&key.PublicKey}}})
			id, _, err := au.Authenticate(context.Background(), tc.cred)
			if err != nil {
				t.Fatal(err)
			}
			s := id.PolicySubject()
			if !reflect.DeepEqual(s.Groups, tc.groups) || !reflect.DeepEqual(s.Scopes, []string{ScopeCall}) {
				t.Errorf("subject %+v", s)
			}
			if id.Kind == KindToken {
				if s.Name != "ci" || s.Subject != "ci" || s.Issuer != "" || len(s.Claims) != 0 {
					t.Errorf("a token's subject %+v", s)
				}
				return
			}
			if s.Name != "ann" || s.Subject != "ann" || s.Issuer != issuer || s.Claims["iss"] != issuer || s.Claims["dept"] != tc.dept {
				t.Errorf("a JWT's subject %+v", s)
			}
		})
	}
}
