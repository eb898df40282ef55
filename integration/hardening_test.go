package integration

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A provider that fails because of a hardening default gets an error that
// names the config key lifting it, and setting that key makes it start.
func TestStartFailureNamesHardeningKey(t *testing.T) {
	g := startGateway(t, `
mcp_servers:
  ro-root:
    mode: docker
    image: mcp-hangar/testkit:dev
    args: ["--write-on-start", "/state.txt"]
    start_timeout_s: 10
  nobody:
    mode: docker
    image: mcp-hangar/testkit:dev
    args: ["--write-on-start", "/state.txt"]
    read_only: false
    start_timeout_s: 10
  fixed:
    mode: docker
    image: mcp-hangar/testkit:dev
    args: ["--write-on-start", "/state.txt"]
    read_only: false
    user: "0:0"
    start_timeout_s: 10
`)
	s := connect(t, g.MCPURL)

	for _, tc := range []struct {
		server   string
		contains []string
		not      string
	}{
		// The default user (65534) could not write to / either, but the
		// read-only root refuses first (EROFS), so only read_only is named.
		{server: "ro-root", contains: []string{"read-only file system", "mcp_servers.ro-root.read_only: false"}, not: ".user"},
		{server: "nobody", contains: []string{"permission denied", "mcp_servers.nobody.user"}, not: "read_only"},
	} {
		t.Run(tc.server, func(t *testing.T) {
			_, isErr, text := s.call(t, "hangar_start", map[string]any{"mcp_server": tc.server})
			t.Logf("hangar_start %s: %s", tc.server, text)
			if !isErr || !strings.HasPrefix(text, "start_failed: "+tc.server) {
				t.Fatalf("hangar_start %s = %q (error %v), want start_failed", tc.server, text, isErr)
			}
			for _, want := range tc.contains {
				if !strings.Contains(text, want) {
					t.Errorf("error = %q, want it to name %q", text, want)
				}
			}
			if strings.Contains(text, tc.not) {
				t.Errorf("error = %q, must not name %q", text, tc.not)
			}
		})
	}
	// The hint is right: with the keys changed the same provider starts.
	if _, isErr, text := s.call(t, "hangar_start", map[string]any{"mcp_server": "fixed"}); isErr {
		t.Errorf("hangar_start fixed: %s", text)
	}
}

// hangar config check against the real engine: a missing image and a
// missing bind source are reported with their key paths and the exit
// status is 1; a config without problems passes.
func TestConfigCheckAgainstEngine(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-dir")
	bad := writeConfig(t, `
mcp_servers:
  good:
    mode: docker
    image: mcp-hangar/testkit:dev
    volumes: ["`+dir+`:/data:ro"]
  ghost:
    mode: docker
    image: 127.0.0.1:1/no-such-image:dev  # a registry nobody serves: deterministic without the internet
  fs:
    mode: docker
    image: mcp-hangar/testkit:dev
    volumes: ["`+missing+`:/data", "/var/run/docker.sock:/var/run/docker.sock"]
`)
	out, err := exec.Command(hangarBin, "config", "check", bad).CombinedOutput()
	t.Logf("hangar config check:\n%s", out)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1", err)
	}
	text := string(out)
	for _, want := range []string{
		"mcp_servers.ghost.image: cannot reach registry 127.0.0.1:1 to pull image 127.0.0.1:1/no-such-image:dev",
		"mcp_servers.fs.volumes[1]: mounts the Docker socket",
		"set mcp_servers.fs.allow_docker_socket: true",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// Bind sources are checked where the engine's host paths are visible
	// (this suite normally runs there); elsewhere the skip must be said.
	if !strings.Contains(text, "mcp_servers.fs.volumes[0]: source "+missing+" does not exist on the host; create it or fix the path") &&
		!strings.Contains(text, "skipped: bind-mount sources not checked") {
		t.Errorf("output neither reports the missing bind source nor says the check was skipped")
	}
	for _, unwanted := range []string{"mcp_servers.good", "skipped: image presence"} {
		if strings.Contains(text, unwanted) {
			t.Errorf("output mentions %q", unwanted)
		}
	}

	good := writeConfig(t, `
mcp_servers:
  good:
    mode: docker
    image: mcp-hangar/testkit:dev
    volumes: ["`+dir+`:/data:ro"]
`)
	out, err = exec.Command(hangarBin, "config", "check", good).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok (1 MCP servers)") {
		t.Errorf("clean config: %v\n%s", err, out)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("the check created the missing source %s (err %v)", missing, err)
	}
}

// The start path applies the same Docker socket rule as config check: a
// socket mount is refused naming allow_docker_socket, and allowed with it.
func TestDockerSocketNeedsAllowKey(t *testing.T) {
	g := startGateway(t, `
mcp_servers:
  sock:
    mode: docker
    image: mcp-hangar/testkit:dev
    volumes: ["/var/run/docker.sock:/var/run/docker.sock:ro"]
    start_timeout_s: 10
  sock-allowed:
    mode: docker
    image: mcp-hangar/testkit:dev
    volumes: ["/var/run/docker.sock:/var/run/docker.sock:ro"]
    allow_docker_socket: true
    start_timeout_s: 10
`)
	s := connect(t, g.MCPURL)
	_, isErr, text := s.call(t, "hangar_start", map[string]any{"mcp_server": "sock"})
	if !isErr || !strings.HasPrefix(text, "start_failed: sock") || !strings.Contains(text, "allow_docker_socket: true") {
		t.Errorf("hangar_start sock = %q (error %v), want start_failed naming allow_docker_socket", text, isErr)
	}
	if n := countContainers(t, g.Instance, "sock"); n != 0 {
		t.Errorf("%d container(s) created for the refused server", n)
	}
	if _, isErr, text := s.call(t, "hangar_start", map[string]any{"mcp_server": "sock-allowed"}); isErr {
		t.Errorf("hangar_start sock-allowed: %s", text)
	}
}
