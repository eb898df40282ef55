package registry

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
)

// TestLoaderEgress: a hot-loaded server may ask for egress hosts in its
// _meta, and is loaded behind its proxy only when install.allowed_egress
// covers them.
func TestLoaderEgress(t *testing.T) {
	t.Parallel()
	httpPkg := Package{RegistryType: "oci", Identifier: "mcp-hangar/testkit", Version: "dev",
		Transport: Transport{Type: "streamable-http", URL: "http://localhost:8080/mcp"}}
	tests := []struct {
		name      string
		meta      string
		pkg       Package
		policy    []string
		wantAllow []string // with wantErr "": loaded with this list (nil: no egress)
		wantErr   string
	}{
		{name: "no ask", pkg: testkitPkg},
		{name: "covered", meta: `{"allow":["api.github.com:443"]}`, pkg: testkitPkg, policy: []string{"*.github.com:443"},
			wantAllow: []string{"api.github.com:443"}},
		{name: "default policy", meta: `{"allow":["api.github.com:443"]}`, pkg: testkitPkg,
			wantErr: "asks to reach api.github.com:443, which the gateway's install.allowed_egress does not allow"},
		{name: "not covered", meta: `{"allow":["api.github.com:443","evil.com:443"]}`, pkg: testkitPkg, policy: []string{"*.github.com:443"},
			wantErr: "evil.com:443"},
		{name: "bad rule", meta: `{"allow":["a b"]}`, pkg: testkitPkg, policy: []string{"*.github.com:443"}, wantErr: "allow[0]"},
		{name: "bad shape", meta: `["x"]`, pkg: testkitPkg, wantErr: "must be"},
		{name: "http container", meta: `{"allow":[]}`, pkg: httpPkg, wantErr: "stdio containers only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := catalogEntry("io.github.ok/testkit", tt.pkg)
			if tt.meta != "" {
				e.Server.Meta = map[string]json.RawMessage{MetaEgress: json.RawMessage(tt.meta)}
			}
			l, _, reg, _ := newTestLoader(t, config.Registry{}, e)
			l.AllowedEgress = tt.policy
			res := l.Load(context.Background(), call.Progress{}, "testkit", false, nil, nil)
			if tt.wantErr != "" {
				if res.Status != StatusFailed || !strings.Contains(res.Message, tt.wantErr) {
					t.Fatalf("Load = %+v, want failed with %q", res, tt.wantErr)
				}
				if reg.spec("testkit") != nil {
					t.Error("a refused server was registered")
				}
				return
			}
			if res.Status != StatusLoaded {
				t.Fatalf("Load = %+v", res)
			}
			spec := reg.spec("testkit")
			switch {
			case tt.meta == "" && spec.Egress != nil:
				t.Errorf("egress %+v without an ask", spec.Egress)
			case tt.meta != "" && (spec.Egress == nil || !slices.Equal(spec.Egress.Allow, tt.wantAllow)):
				t.Errorf("egress %+v, want allow %v", spec.Egress, tt.wantAllow)
			}
		})
	}
}
