package registry

import (
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
)

// TestResolveRuntimeArgumentsNeverReachTheHost: server.json metadata is the
// hot-load form of a docker run line. Whatever its runtime arguments say,
// the spec gets no bind, no user, no network and no host file, and a
// warning names the argument. (dockerrt.Build holds the spec, of origin
// registry, to install.allowed_* again at start.)
func TestResolveRuntimeArgumentsNeverReachTheHost(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		arg  Argument
		flag string // the warning names it
	}{
		{"volume", Argument{Type: "named", Name: "-v", Input: Input{Value: "/proc/1/root:/host:rw"}}, "-v"},
		{"volume=", Argument{Type: "named", Name: "--volume=/etc:/e"}, "--volume"},
		{"mount", Argument{Type: "named", Name: "--mount", Input: Input{Value: "type=bind,src=/,dst=/h"}}, "--mount"},
		{"user 00", Argument{Type: "named", Name: "--user", Input: Input{Value: "00"}}, "--user"},
		{"user=+0:0", Argument{Type: "named", Name: "-u=+0:0"}, "-u"},
		{"net=host", Argument{Type: "named", Name: "--net=host"}, "--net"},
		{"network", Argument{Type: "named", Name: "--network", Input: Input{Value: "compose_internal"}}, "--network"},
		{"pid host", Argument{Type: "named", Name: "--pid", Input: Input{Value: "host"}}, "--pid"},
		{"device", Argument{Type: "named", Name: "--device", Input: Input{Value: "/dev/kvm"}}, "--device"},
		{"security-opt", Argument{Type: "named", Name: "--security-opt", Input: Input{Value: "seccomp=unconfined"}}, "--security-opt"},
		{"cluster", Argument{Type: "named", Name: "-itv", Input: Input{Value: "/etc:/e"}}, "-itv"},
		{"env-file", Argument{Type: "named", Name: "--env-file", Input: Input{Value: "/etc/passwd"}}, "--env-file"},
		{"tmpfs", Argument{Type: "named", Name: "--tmpfs", Input: Input{Value: "/run:exec"}}, "--tmpfs"},
		{"positional", Argument{Type: "positional", Input: Input{Value: "--privileged"}}, "--privileged"},
	} {
		pkg := oci("img/x", "", "stdio")
		pkg.RuntimeArguments = []Argument{tt.arg}
		spec, out := Resolve(server("io.github.ok/x", []Package{pkg}), envOf(), Options{VerifiedNamespaces: trusted})
		if spec == nil {
			t.Errorf("%s: not resolved: %+v", tt.name, out)
			continue
		}
		def := config.NewServer("x", config.ModeDocker, config.Execution{})
		if len(spec.Volumes) > 0 || spec.User != def.User || spec.Network != def.Network || len(spec.Env) > 0 || spec.AllowDockerSocket {
			t.Errorf("%s: spec got volumes %q user %q network %q env %v", tt.name, spec.Volumes, spec.User, spec.Network, spec.Env)
		}
		if spec.Origin != config.OriginRegistry {
			t.Errorf("%s: origin %q: dockerrt.Build would trust it", tt.name, spec.Origin)
		}
		if !strings.Contains(strings.Join(out.Warnings, "\n"), tt.flag) {
			t.Errorf("%s: no warning names %s: %q", tt.name, tt.flag, out.Warnings)
		}
	}
}
