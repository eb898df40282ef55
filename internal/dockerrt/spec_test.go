package dockerrt

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
)

// baseSpec is a spec from the operator's config file; spec_access_test.go
// covers every other source.
func baseSpec() Spec {
	return Spec{ServerID: "math", Owner: "gw-1", Image: "example/math:1", FromConfigFile: true}
}

func mustBuild(t *testing.T, s Spec) (*container.Config, *container.HostConfig, bool) {
	t.Helper()
	cfg, host, netCfg, err := Build(s)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return cfg, host, netCfg != nil
}

func TestBuildHardeningDefaults(t *testing.T) {
	t.Parallel()
	cfg, host, hasNet := mustBuild(t, baseSpec())

	if !slices.Equal(host.CapDrop, []string{"ALL"}) {
		t.Errorf("CapDrop = %v, want [ALL]", host.CapDrop)
	}
	if len(host.CapAdd) != 0 {
		t.Errorf("CapAdd = %v, want none", host.CapAdd)
	}
	if !slices.Contains(host.SecurityOpt, "no-new-privileges:true") {
		t.Errorf("SecurityOpt = %v, want no-new-privileges", host.SecurityOpt)
	}
	if host.Privileged {
		t.Error("Privileged")
	}
	if host.ReadonlyRootfs {
		t.Error("ReadonlyRootfs set although the spec did not ask for it")
	}
	tmp, ok := host.Tmpfs["/tmp"]
	if !ok || !strings.Contains(tmp, "noexec") || !strings.Contains(tmp, "nosuid") {
		t.Errorf("Tmpfs = %v, want a noexec,nosuid /tmp", host.Tmpfs)
	}
	if host.Memory != 512<<20 || host.MemorySwap != 512<<20 {
		t.Errorf("Memory %d MemorySwap %d, want 512m and no swap", host.Memory, host.MemorySwap)
	}
	if host.NanoCPUs != 1_000_000_000 {
		t.Errorf("NanoCPUs = %d, want 1e9", host.NanoCPUs)
	}
	if host.PidsLimit == nil || *host.PidsLimit != 256 {
		t.Errorf("PidsLimit = %v, want 256", host.PidsLimit)
	}
	if host.NetworkMode != "none" || hasNet {
		t.Errorf("NetworkMode %q, networking config %v; want none and no endpoint", host.NetworkMode, hasNet)
	}
	if !host.AutoRemove {
		t.Error("AutoRemove not set")
	}
	if len(host.Binds) != 0 {
		t.Errorf("Binds = %v", host.Binds)
	}
	if host.LogConfig.Type != "none" {
		t.Errorf("LogConfig = %+v", host.LogConfig)
	}

	if cfg.Image != "example/math:1" || cfg.User != "65534:65534" {
		t.Errorf("Image %q User %q", cfg.Image, cfg.User)
	}
	want := map[string]string{LabelManaged: "true", LabelServer: "math", LabelOwner: "gw-1"}
	if !reflect.DeepEqual(cfg.Labels, want) {
		t.Errorf("Labels = %v, want %v", cfg.Labels, want)
	}
	if cfg.AttachStdin || cfg.OpenStdin || cfg.StdinOnce || cfg.AttachStdout || cfg.AttachStderr || cfg.Tty {
		t.Errorf("stdio flags set for a non-stdio spec: %+v", cfg)
	}
}

func TestBuildOverrides(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		spec  func(*Spec)
		check func(t *testing.T, cfg *container.Config, host *container.HostConfig, hasNet bool)
	}{
		{"read-only root", func(s *Spec) { s.ReadOnly = true }, func(t *testing.T, _ *container.Config, h *container.HostConfig, _ bool) {
			if !h.ReadonlyRootfs {
				t.Error("ReadonlyRootfs not set")
			}
			if _, ok := h.Tmpfs["/tmp"]; !ok {
				t.Error("no tmpfs /tmp with a read-only root")
			}
		}},
		{"memory", func(s *Spec) { s.MemoryBytes = 1 << 30 }, func(t *testing.T, _ *container.Config, h *container.HostConfig, _ bool) {
			if h.Memory != 1<<30 || h.MemorySwap != 1<<30 {
				t.Errorf("Memory %d MemorySwap %d", h.Memory, h.MemorySwap)
			}
		}},
		{"cpus", func(s *Spec) { s.NanoCPUs = 250_000_000 }, func(t *testing.T, _ *container.Config, h *container.HostConfig, _ bool) {
			if h.NanoCPUs != 250_000_000 {
				t.Errorf("NanoCPUs %d", h.NanoCPUs)
			}
		}},
		{"pids", func(s *Spec) { s.PidsLimit = 32 }, func(t *testing.T, _ *container.Config, h *container.HostConfig, _ bool) {
			if *h.PidsLimit != 32 {
				t.Errorf("PidsLimit %d", *h.PidsLimit)
			}
		}},
		{"negative limits take the defaults", func(s *Spec) { s.MemoryBytes, s.NanoCPUs, s.PidsLimit = -1, -1, -1 }, func(t *testing.T, _ *container.Config, h *container.HostConfig, _ bool) {
			if h.Memory != DefaultMemoryBytes || h.NanoCPUs != DefaultNanoCPUs || *h.PidsLimit != DefaultPidsLimit {
				t.Errorf("Memory %d NanoCPUs %d Pids %d", h.Memory, h.NanoCPUs, *h.PidsLimit)
			}
		}},
		{"user", func(s *Spec) { s.User = "1000:1000" }, func(t *testing.T, c *container.Config, _ *container.HostConfig, _ bool) {
			if c.User != "1000:1000" {
				t.Errorf("User %q", c.User)
			}
		}},
		{"explicit none network", func(s *Spec) { s.Network = "none" }, func(t *testing.T, _ *container.Config, h *container.HostConfig, hasNet bool) {
			if h.NetworkMode != "none" || hasNet {
				t.Errorf("NetworkMode %q net %v", h.NetworkMode, hasNet)
			}
		}},
		{"named network", func(s *Spec) { s.Network = "mcp-net" }, func(t *testing.T, _ *container.Config, h *container.HostConfig, hasNet bool) {
			if h.NetworkMode != "mcp-net" || !hasNet {
				t.Errorf("NetworkMode %q net %v", h.NetworkMode, hasNet)
			}
		}},
		{"bridge", func(s *Spec) { s.Network = "bridge" }, func(t *testing.T, _ *container.Config, h *container.HostConfig, hasNet bool) {
			if h.NetworkMode != "bridge" || hasNet {
				t.Errorf("NetworkMode %q net %v", h.NetworkMode, hasNet)
			}
		}},
		{"args and env", func(s *Spec) {
			s.Args = []string{"--port", "1"}
			s.Env = map[string]string{"Z": "last", "A": "first", "M": "a=b"}
		}, func(t *testing.T, c *container.Config, _ *container.HostConfig, _ bool) {
			if !slices.Equal(c.Cmd, []string{"--port", "1"}) {
				t.Errorf("Cmd %v", c.Cmd)
			}
			if !slices.Equal(c.Env, []string{"A=first", "M=a=b", "Z=last"}) {
				t.Errorf("Env %v, want sorted KEY=value", c.Env)
			}
		}},
		{"volumes", func(s *Spec) { s.Volumes = []string{"/data:/data:ro", "/cache:/cache"} }, func(t *testing.T, _ *container.Config, h *container.HostConfig, _ bool) {
			if !slices.Equal(h.Binds, []string{"/data:/data:ro", "/cache:/cache"}) {
				t.Errorf("Binds %v", h.Binds)
			}
		}},
		{"stdio", func(s *Spec) { s.Stdio = true }, func(t *testing.T, c *container.Config, _ *container.HostConfig, _ bool) {
			if !c.AttachStdin || !c.AttachStdout || !c.AttachStderr || !c.OpenStdin || !c.StdinOnce {
				t.Errorf("stdio flags: %+v", c)
			}
			if c.Tty {
				t.Error("Tty set: the stream would not be multiplexed")
			}
		}},
		{"extra labels never override ours", func(s *Spec) {
			s.ExtraLabels = map[string]string{
				LabelManaged:                 "false",
				LabelServer:                  "other",
				LabelOwner:                   "someone-else",
				"io.mcp-hangar.anything":     "x",
				"com.example.team":           "infra",
				"io.mcp-hangar":              "no dot after the prefix",
				"org.opencontainers.version": "1",
			}
		}, func(t *testing.T, c *container.Config, _ *container.HostConfig, _ bool) {
			want := map[string]string{
				LabelManaged: "true", LabelServer: "math", LabelOwner: "gw-1",
				"com.example.team": "infra", "io.mcp-hangar": "no dot after the prefix", "org.opencontainers.version": "1",
			}
			if !reflect.DeepEqual(c.Labels, want) {
				t.Errorf("Labels = %v, want %v", c.Labels, want)
			}
		}},
		{"hardening survives every option", func(s *Spec) {
			s.ReadOnly, s.Stdio, s.Network, s.User = true, true, "mcp-net", "0:0"
			s.Volumes = []string{"/a:/a:rw"}
		}, func(t *testing.T, _ *container.Config, h *container.HostConfig, _ bool) {
			if !slices.Equal(h.CapDrop, []string{"ALL"}) || !slices.Contains(h.SecurityOpt, "no-new-privileges:true") || h.Privileged || !h.AutoRemove {
				t.Errorf("hardening lost: %+v", h)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := baseSpec()
			tt.spec(&s)
			cfg, host, hasNet := mustBuild(t, s)
			tt.check(t, cfg, host, hasNet)
		})
	}
}

func TestBuildRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec func(*Spec)
		msg  string
	}{
		{"empty image", func(s *Spec) { s.Image = "" }, "image is empty"},
		{"host network", func(s *Spec) { s.Network = "host" }, "host networking"},
		{"relative host path", func(s *Spec) { s.Volumes = []string{"data:/data"} }, "absolute"},
		{"relative container path", func(s *Spec) { s.Volumes = []string{"/data:data"} }, "absolute"},
		{"no container path", func(s *Spec) { s.Volumes = []string{"/data"} }, "host:container"},
		{"too many parts", func(s *Spec) { s.Volumes = []string{"/a:/b:ro:z"} }, "host:container"},
		{"bad mode", func(s *Spec) { s.Volumes = []string{"/a:/b:rx"} }, "ro or rw"},
		{"empty mode", func(s *Spec) { s.Volumes = []string{"/a:/b:"} }, "ro or rw"},
		{"docker socket", func(s *Spec) { s.Volumes = []string{"/var/run/docker.sock:/var/run/docker.sock"} }, "Docker socket"},
		{"docker socket read-only", func(s *Spec) { s.Volumes = []string{"/run/docker.sock:/sock:ro"} }, "Docker socket"},
		{"docker socket elsewhere", func(s *Spec) { s.Volumes = []string{"/home/u/.docker/run/docker.sock:/d"} }, "Docker socket"},
		{"one bad volume among good ones", func(s *Spec) { s.Volumes = []string{"/ok:/ok", "/var/run/docker.sock:/x"} }, "Docker socket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := baseSpec()
			tt.spec(&s)
			cfg, host, netCfg, err := Build(s)
			if err == nil {
				t.Fatalf("Build accepted the spec: %+v", host)
			}
			if cfg != nil || host != nil || netCfg != nil {
				t.Error("Build returned a config with an error")
			}
			if !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), `"math"`) {
				t.Errorf("error %q, want it to name the server and contain %q", err, tt.msg)
			}
		})
	}
}

func TestBuildDoesNotAliasSpec(t *testing.T) {
	t.Parallel()
	s := baseSpec()
	s.Volumes = []string{"/a:/a"}
	s.ExtraLabels = map[string]string{"k": "v"}
	cfg, host, _ := mustBuild(t, s)
	s.Volumes[0] = "/var/run/docker.sock:/a"
	s.ExtraLabels["k"] = "changed"
	if host.Binds[0] != "/a:/a" {
		t.Errorf("Binds follow the spec after Build: %v", host.Binds)
	}
	if cfg.Labels["k"] != "v" {
		t.Errorf("Labels follow the spec after Build: %v", cfg.Labels)
	}
}

// TestBuildRefusesDockerSocketSpellings: the engine cleans a bind source
// (path.Clean in moby's linux mount parser) before mounting it, so these
// all mount /var/run/docker.sock. checkVolume only tests
// strings.HasSuffix(host, "docker.sock") on the raw text and lets them
// through.
func TestBuildRefusesDockerSocketSpellings(t *testing.T) {
	t.Parallel()
	for _, v := range []string{
		"/var/run/docker.sock/:/sock",
		"/var/run/docker.sock/.:/sock",
		"/var/run/docker.sock//:/sock:ro",
		"/var/run/docker.sock/./:/sock",
	} {
		s := baseSpec()
		s.Volumes = []string{v}
		if _, host, _, err := Build(s); err == nil {
			t.Errorf("volume %q accepted (Binds %v)", v, host.Binds)
		}
	}
}

// TestBuildAllowsDockerSocketWhenAsked: allow_docker_socket lifts exactly
// the socket refusal, whatever the spelling, and nothing else.
func TestBuildAllowsDockerSocketWhenAsked(t *testing.T) {
	t.Parallel()
	for _, v := range []string{
		"/var/run/docker.sock:/var/run/docker.sock",
		"/run/docker.sock:/sock:ro",
		"/var/run/docker.sock/./:/sock",
		"/var/run:/host-run",
	} {
		s := baseSpec()
		s.Volumes = []string{v}
		if _, _, _, err := Build(s); !errors.Is(err, ErrDockerSocket) {
			t.Errorf("volume %q without allow_docker_socket: error %v, want ErrDockerSocket", v, err)
		}
		s.AllowDockerSocket = true
		_, host, _, err := Build(s)
		if err != nil {
			t.Errorf("volume %q with allow_docker_socket: %v", v, err)
			continue
		}
		if len(host.Binds) != 1 || host.Binds[0] != v || host.Privileged || len(host.CapDrop) != 1 {
			t.Errorf("volume %q: binds %v, privileged %v, cap drop %v", v, host.Binds, host.Privileged, host.CapDrop)
		}
	}
	s := baseSpec()
	s.AllowDockerSocket = true
	s.Volumes = []string{"/var/run/docker.sock:sock"}
	if _, _, _, err := Build(s); err == nil {
		t.Error("allow_docker_socket let a malformed volume through")
	}
}

func TestMountsEngineSocket(t *testing.T) {
	t.Parallel()
	tests := []struct {
		volume string
		want   bool
	}{
		{"/var/run/docker.sock:/var/run/docker.sock", true},
		{"/run/docker.sock:/s:ro", true},
		{"/var/run/docker.sock//:/s", true},
		{"/var/run:/r", true},
		{"/run:/r", true},
		{"/var:/v", true},
		{"/:/host", true},
		{"/home/u/.docker/run/docker.sock:/d", true},
		{"/srv/data:/data", false},
		{"/var/lib/data:/data", false},
		{"/runner:/r", false},
		{"/var/run/docker.sockets:/s", false},
		{"relative/docker.sock:/s", false},
		{"/only-host-part", false},
	}
	for _, tt := range tests {
		if got := MountsEngineSocket(tt.volume); got != tt.want {
			t.Errorf("MountsEngineSocket(%q) = %v, want %v", tt.volume, got, tt.want)
		}
	}
}
