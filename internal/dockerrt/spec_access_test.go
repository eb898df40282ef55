package dockerrt

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/hostaccess"
)

// TestBuildHoldsOtherSourcesToAccess is the second line: a spec not from
// the config file that a mapper let through still cannot start with a
// host path, a root user or a network the policy does not allow.
func TestBuildHoldsOtherSourcesToAccess(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(root, "toetc")); err != nil {
		t.Fatal(err)
	}
	policy := hostaccess.Policy{BindRoots: []string{root}, Networks: []string{"tools"}, OperatorNetworks: []string{"gw-net"}}
	spec := func(f func(*Spec)) Spec {
		s := Spec{ServerID: "evil", Owner: "gw-1", Image: "img", Access: policy}
		f(&s)
		return s
	}
	for _, tt := range []struct {
		name string
		spec Spec
		want error
	}{
		{"proc root", spec(func(s *Spec) { s.Volumes = []string{"/proc/1/root:/host:rw"} }), hostaccess.ErrBind},
		{"etc", spec(func(s *Spec) { s.Volumes = []string{"/etc:/etc"} }), hostaccess.ErrBind},
		{"engine state", spec(func(s *Spec) { s.Volumes = []string{"/var/lib/docker:/d"} }), hostaccess.ErrBind},
		{"dotdot", spec(func(s *Spec) { s.Volumes = []string{root + "/../../etc:/x"} }), hostaccess.ErrBind},
		{"link out", spec(func(s *Spec) { s.Volumes = []string{root + "/toetc:/x"} }), hostaccess.ErrBind},
		{"socket", spec(func(s *Spec) { s.Volumes = []string{"/var/run/docker.sock:/s"} }), hostaccess.ErrBind},
		{"socket allowed by a non-operator", spec(func(s *Spec) {
			s.Volumes = []string{"/var/run/docker.sock:/s"}
			s.AllowDockerSocket = true
		}), ErrDockerSocket},
		{"uid 00", spec(func(s *Spec) { s.User = "00" }), hostaccess.ErrUser},
		{"uid +0:0", spec(func(s *Spec) { s.User = "+0:0" }), hostaccess.ErrUser},
		{"root", spec(func(s *Spec) { s.User = "root" }), hostaccess.ErrUser},
		{"gid 0", spec(func(s *Spec) { s.User = "1000:0" }), hostaccess.ErrUser},
		{"network", spec(func(s *Spec) { s.Network = "compose_internal" }), hostaccess.ErrNetwork},
		{"bridge", spec(func(s *Spec) { s.Network = "bridge" }), hostaccess.ErrNetwork},
		{"no policy at all", Spec{ServerID: "evil", Image: "img", Volumes: []string{root + "/data:/d"}}, hostaccess.ErrBind},
	} {
		_, _, _, err := Build(tt.spec)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), `"evil"`) {
			t.Errorf("%s: err %v, want %v naming the server", tt.name, err, tt.want)
		}
	}

	// What the policy allows builds, with the source resolved and the user
	// normalised; the operator's networks are accepted too.
	cfg, host, _, err := Build(spec(func(s *Spec) {
		s.Volumes = []string{root + "/data/../data:/d:ro"}
		s.User = "1000"
		s.Network = "gw-net"
	}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{root + "/data:/d:ro"}; !slices.Equal(host.Binds, want) || cfg.User != "1000:1000" || host.NetworkMode != "gw-net" {
		t.Errorf("binds %q user %q network %q", host.Binds, cfg.User, host.NetworkMode)
	}
	if _, _, _, err := Build(spec(func(s *Spec) { s.Network = "tools" })); err != nil {
		t.Errorf("allowed network: %v", err)
	}
	// An installed server with egress joins the internal network the
	// gateway made for its proxy, listed nowhere.
	egressNet := NetworkName("gw-1", "evil", []string{"api.example.com:443"})
	if _, host, _, err := Build(spec(func(s *Spec) { s.Network, s.EgressNetwork = egressNet, true })); err != nil || string(host.NetworkMode) != egressNet {
		t.Errorf("egress network: %v %v", host, err)
	}
	// The operator's config file keeps its own powers.
	cfgFile := Spec{ServerID: "ops", Image: "img", FromConfigFile: true, Volumes: []string{"/etc/ssl:/ssl:ro"}, User: "0", Network: "bridge"}
	if _, host, _, err := Build(cfgFile); err != nil || !slices.Equal(host.Binds, cfgFile.Volumes) {
		t.Errorf("config file spec: %v %v", host, err)
	}
}
