package auth

import "testing"

func TestScopes(t *testing.T) {
	t.Parallel()
	for tool, want := range map[string]string{
		"hangar_list": ScopeRead, "hangar_group_list": ScopeRead, "hangar_metrics": ScopeRead,
		"hangar_call": ScopeCall, "hangar_fetch_continuation": ScopeCall, "math__add": ScopeCall,
		"hangar_start": ScopeAdmin, "hangar_approve": ScopeAdmin, "hangar_group_rebalance": ScopeAdmin,
		"hangar_not_yet_invented": ScopeAdmin,
	} {
		if got := ToolScope(tool); got != want {
			t.Errorf("ToolScope(%s) = %q, want %q", tool, got, want)
		}
	}
	for method, want := range map[string]string{
		"initialize": "", "tools/list": "", "notifications/initialized": "", "ping": "",
		"tools/call": ScopeCall, "resources/read": ScopeCall, "resources/list": ScopeRead,
		"mcp/install": ScopeAdmin, "mcp/anything": ScopeAdmin, "made/up": ScopeAdmin,
	} {
		if got := MethodScope(method); got != want {
			t.Errorf("MethodScope(%s) = %q, want %q", method, got, want)
		}
	}
	id := NewIdentity("agent", KindToken, []string{ScopeRead, ScopeCall}, []string{"math", "fs-*"})
	cases := []struct {
		scope, server string
		want          string
	}{
		{ScopeRead, "", ""},
		{ScopeAdmin, "", "Token missing required scope: hangar:admin"},
		{ScopeCall, "fs-home", ""},
		{ScopeCall, "secret", "Token missing required scope: server:secret"},
		{"", "mathx", "Token missing required scope: server:mathx"},
	}
	for _, c := range cases {
		got := ""
		if e := id.Check(c.scope, c.server); e != nil {
			got = e.Message
			if e.Code != CodeInsufficientScope {
				t.Errorf("code %d", e.Code)
			}
		}
		if got != c.want {
			t.Errorf("Check(%q, %q) = %q, want %q", c.scope, c.server, got, c.want)
		}
	}
	if (Identity{}).Has(ScopeRead) || (Identity{Servers: []string{"x"}}).MayReach("x") {
		t.Error("a zero or uncompiled identity may do something")
	}
}

// TestViewKey: identities get the same key exactly when Has and MayReach
// answer alike for them.
func TestViewKey(t *testing.T) {
	t.Parallel()
	base := NewIdentity("a", KindToken, []string{ScopeRead, ScopeCall}, []string{"math", "fs-*"})
	tests := []struct {
		name string
		id   Identity
		same bool
	}{
		{"another name and kind", NewIdentity("b", KindJWT, []string{ScopeRead, ScopeCall}, []string{"math", "fs-*"}), true},
		{"scopes in another order, repeated", NewIdentity("a", KindToken, []string{ScopeCall, ScopeRead, ScopeCall}, []string{"math", "fs-*"}), true},
		{"one scope more", NewIdentity("a", KindToken, []string{ScopeRead, ScopeCall, ScopeAdmin}, []string{"math", "fs-*"}), false},
		{"one scope less", NewIdentity("a", KindToken, []string{ScopeRead}, []string{"math", "fs-*"}), false},
		{"other servers", NewIdentity("a", KindToken, []string{ScopeRead, ScopeCall}, []string{"math"}), false},
		{"every server", NewIdentity("a", KindToken, []string{ScopeRead, ScopeCall}, nil), false},
		{"servers not compiled", Identity{Scopes: []string{ScopeRead, ScopeCall}, Servers: []string{"math", "fs-*"}}, false},
		{"a scope that looks like two", NewIdentity("a", KindToken, []string{ScopeCall + "\" \"" + ScopeRead}, []string{"math", "fs-*"}), false},
		{"a server pattern that looks like two", NewIdentity("a", KindToken, []string{ScopeRead, ScopeCall}, []string{"math\" \"fs-*"}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if same := tt.id.ViewKey() == base.ViewKey(); same != tt.same {
				t.Errorf("same key = %v, want %v (%q vs %q)", same, tt.same, tt.id.ViewKey(), base.ViewKey())
			}
		})
	}
}
