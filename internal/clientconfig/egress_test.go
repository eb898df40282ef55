package clientconfig

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/hostaccess"
)

// TestMapEgress: an installed entry may ask for egress hosts, and gets
// only those the admin's install.allowed_egress covers.
func TestMapEgress(t *testing.T) {
	t.Parallel()
	policy := Options{
		Runtimes:      map[string]config.Runtime{"npx": {Image: "node:22", Network: "bridge"}},
		AllowedEgress: []string{"*.github.com:443", "registry.npmjs.org:443"},
		// mynet is allowed, so that the case below shows egress replacing it.
		Access: hostaccess.Policy{Networks: []string{"mynet"}},
	}
	noPolicy := policy
	noPolicy.AllowedEgress = nil

	tests := []struct {
		name      string
		entry     string
		opts      Options
		wantAllow []string // nil with wantCode: refused
		wantCode  string
		wantField string
	}{
		{name: "docker run within policy", opts: policy,
			entry:     `{"command":"docker","args":["run","-i","--network","mynet","img"],"egress":{"allow":["API.github.com:443"]}}`,
			wantAllow: []string{"api.github.com:443"}},
		{name: "runner within policy", opts: policy,
			entry:     `{"command":"npx","args":["-y","@x/server"],"egress":{"allow":["registry.npmjs.org:443","api.github.com:443"]}}`,
			wantAllow: []string{"registry.npmjs.org:443", "api.github.com:443"}},
		{name: "nothing asked, nothing allowed", opts: noPolicy,
			entry:     `{"command":"docker","args":["run","-i","img"],"egress":{"allow":[]}}`,
			wantAllow: []string{}},
		{name: "default policy allows no host", opts: noPolicy,
			entry:    `{"command":"docker","args":["run","-i","img"],"egress":{"allow":["api.github.com:443"]}}`,
			wantCode: CodeWidensHardening, wantField: "mcpServers.x.egress.allow[0]"},
		{name: "host outside the policy", opts: policy,
			entry:    `{"command":"docker","args":["run","-i","img"],"egress":{"allow":["api.github.com:443","evil.com:443"]}}`,
			wantCode: CodeWidensHardening, wantField: "mcpServers.x.egress.allow[1]"},
		{name: "wider port than the policy", opts: policy,
			entry:    `{"command":"docker","args":["run","-i","img"],"egress":{"allow":["api.github.com:*"]}}`,
			wantCode: CodeWidensHardening, wantField: "mcpServers.x.egress.allow[0]"},
		{name: "bad rule", opts: policy,
			entry:    `{"command":"docker","args":["run","-i","img"],"egress":{"allow":["http://api.github.com"]}}`,
			wantCode: CodeInvalidValue, wantField: "mcpServers.x.egress.allow[0]"},
		{name: "remote server", opts: policy,
			entry:    `{"url":"https://example.com/mcp","egress":{"allow":["api.github.com:443"]}}`,
			wantCode: CodeInvalidValue, wantField: "mcpServers.x.egress"},
		{name: "egress of the wrong type", opts: policy,
			entry:    `{"command":"docker","args":["run","-i","img"],"egress":["api.github.com:443"]}`,
			wantCode: CodeInvalidValue, wantField: "mcpServers.x.egress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, diags := DecodeEntry("mcpServers.x", json.RawMessage(tt.entry))
			var s *config.Server
			if !diags.HasError() {
				var more Diagnostics
				s, more = Map("x", e, "mcpServers.x", tt.opts)
				diags = append(diags, more...)
			}
			if tt.wantCode != "" {
				if s != nil {
					t.Fatalf("mapped to %+v; want refusal %s", s.Egress, tt.wantCode)
				}
				found := slices.ContainsFunc(diags, func(d Diagnostic) bool {
					return d.Code == tt.wantCode && d.FieldPath == tt.wantField && d.Level == LevelError
				})
				if !found {
					t.Fatalf("diagnostics %+v; want %s at %s", diags, tt.wantCode, tt.wantField)
				}
				return
			}
			if s == nil {
				t.Fatalf("refused: %+v", diags)
			}
			if s.Egress == nil {
				t.Fatal("no egress on the spec")
			}
			want := tt.wantAllow
			if len(want) == 0 {
				want = nil
			}
			if !slices.Equal(s.Egress.Allow, want) {
				t.Errorf("allow = %q, want %q", s.Egress.Allow, want)
			}
			if s.Network != "" {
				t.Errorf("network = %q; the egress network must replace it", s.Network)
			}
		})
	}
}
