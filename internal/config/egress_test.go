package config

import (
	"slices"
	"strings"
	"testing"
)

func TestEgressConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		yaml      string
		wantAllow []string
		wantErrs  []string // key paths (with message fragments) that must be reported
	}{
		{
			name:      "allow-list in canonical form",
			yaml:      "mcp_servers:\n  gh:\n    mode: docker\n    image: x\n    egress: {allow: [API.github.com:443, '*.example.com', '10.1.2.3:5432']}\n",
			wantAllow: []string{"api.github.com:443", "*.example.com", "10.1.2.3:5432"},
		},
		{
			name:      "empty allow-list allows nothing",
			yaml:      "mcp_servers:\n  gh:\n    mode: docker\n    image: x\n    egress: {allow: []}\n",
			wantAllow: nil,
		},
		{
			name:     "allow is required",
			yaml:     "mcp_servers:\n  gh:\n    mode: docker\n    image: x\n    egress: {}\n",
			wantErrs: []string{"mcp_servers.gh.egress.allow: required"},
		},
		{
			name:     "every bad entry named by index",
			yaml:     "mcp_servers:\n  gh:\n    mode: docker\n    image: x\n    egress: {allow: [ok.com, 'bad host', 'a.com:99999']}\n",
			wantErrs: []string{"mcp_servers.gh.egress.allow[1]", "mcp_servers.gh.egress.allow[2]: port"},
		},
		{
			name:     "unknown key in egress",
			yaml:     "mcp_servers:\n  gh:\n    mode: docker\n    image: x\n    egress: {allow: [], deny: [x]}\n",
			wantErrs: []string{"mcp_servers.gh.egress.deny: unknown key"},
		},
		{
			name:     "network contradicts egress",
			yaml:     "mcp_servers:\n  gh:\n    mode: docker\n    image: x\n    network: bridge\n    egress: {allow: [a.com]}\n",
			wantErrs: []string{"mcp_servers.gh.network: cannot be used with egress"},
		},
		{
			name:     "an HTTP provider the gateway could not reach",
			yaml:     "mcp_servers:\n  gh:\n    mode: docker\n    image: x\n    transport: http\n    egress: {allow: [a.com]}\n",
			wantErrs: []string{"mcp_servers.gh.transport: http cannot be used with egress"},
		},
		{
			name:     "egress only for docker",
			yaml:     "mcp_servers:\n  r:\n    mode: remote\n    endpoint: http://x/mcp\n    egress: {allow: [a.com]}\n",
			wantErrs: []string{"mcp_servers.r.egress: not allowed for mode remote"},
		},
		{
			name:     "admin policy checked",
			yaml:     "install: {allowed_egress: ['*.github.com', 'bad host']}\n",
			wantErrs: []string{"install.allowed_egress[1]"},
		},
		{
			name:     "proxy network",
			yaml:     "egress_proxy: {network: host}\n",
			wantErrs: []string{"egress_proxy.network: host networking is not allowed"},
		},
		{
			name:     "proxy unknown key",
			yaml:     "egress_proxy: {imag: x}\n",
			wantErrs: []string{"egress_proxy.imag: unknown key"},
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
			e := cfg.Servers["gh"].Egress
			if e == nil {
				t.Fatal("egress not decoded")
			}
			if !slices.Equal(e.Allow, tt.wantAllow) {
				t.Errorf("allow = %q, want %q", e.Allow, tt.wantAllow)
			}
		})
	}
}

func TestInstallEgressPermitted(t *testing.T) {
	t.Parallel()
	none := Install{}
	if bad, ok := none.EgressPermitted([]string{"api.github.com:443"}); ok || bad != "api.github.com:443" {
		t.Errorf("with no allowed_egress, a host was permitted (%q, %v)", bad, ok)
	}
	if _, ok := none.EgressPermitted(nil); !ok {
		t.Error("asking for nothing was refused")
	}
	inst := Install{AllowedEgress: []string{"*.github.com:443", "10.0.0.5:5432"}}
	tests := []struct {
		ask     []string
		wantBad string
		wantOK  bool
	}{
		{[]string{"api.github.com:443"}, "", true},
		{[]string{"api.github.com:443", "10.0.0.5:5432"}, "", true},
		{[]string{"api.github.com:443", "evil.com:443"}, "evil.com:443", false},
		{[]string{"api.github.com"}, "api.github.com", false}, // port 80 is not covered
		{[]string{"10.0.0.6:5432"}, "10.0.0.6:5432", false},
	}
	for _, tt := range tests {
		bad, ok := inst.EgressPermitted(tt.ask)
		if ok != tt.wantOK || bad != tt.wantBad {
			t.Errorf("EgressPermitted(%q) = %q, %v; want %q, %v", tt.ask, bad, ok, tt.wantBad, tt.wantOK)
		}
	}
}
