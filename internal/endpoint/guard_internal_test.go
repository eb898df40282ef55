package endpoint

import (
	"testing"

	"github.com/mcp-hangar/hangar/internal/auth"
)

// The guard skips decoding only for identities it could refuse nothing.
func TestUnlimited(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		id   auth.Identity
		want bool
	}{
		{"local", auth.Local(auth.KindLocal), true},
		{"token with every scope", auth.NewIdentity("t", auth.KindToken, auth.AllScopes, nil), true},
		{"token without admin", auth.NewIdentity("t", auth.KindToken, []string{auth.ScopeRead, auth.ScopeCall}, nil), false},
		{"read only anonymous", auth.NewIdentity("a", auth.KindAnonymous, []string{auth.ScopeRead}, nil), false},
		{"every scope, some servers", auth.NewIdentity("t", auth.KindToken, auth.AllScopes, []string{"math"}), false},
		{"no scopes", auth.Identity{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := unlimited(tt.id); got != tt.want {
				t.Errorf("unlimited = %v, want %v", got, tt.want)
			}
		})
	}
}
