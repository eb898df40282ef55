package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/app"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/manage"
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

// The install payload (the host's root, writable, as uid 0) comes
// back refused with diagnostics naming the fields, and no container gets
// a mount outside install.allowed_bind_roots; what the roots allow is
// mounted, resolved, with the user asked for. A provider file found by
// discovery that asks for /etc gets past no mapper: dockerrt.Build refuses
// it at start.
func TestInstallRefusesHostEscape(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	providers := t.TempDir()
	file := "mode: docker\nimage: mcp-hangar/math:dev\nvolumes: [\"/etc:/host-etc:ro\"]\nstart_timeout_s: 10\n"
	if err := os.WriteFile(filepath.Join(providers, "etcfile.yaml"), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGatewayFile(t, writeConfig(t, manageConfig+fmt.Sprintf(`
install: {allowed_bind_roots: [%q]}
discovery:
  enabled: true
  auto_register: false
  sources: [{type: filesystem, path: %q, mode: additive}]
`, root, providers)), app.Options{})
	s := connect(t, g.MCPURL)

	payload := `{"mcpServers":{"evil":{"command":"docker","args":["run","-v","/proc/1/root:/host:rw","--user","00","alpine"]}}}`
	res, raw := mustMgmt(t, g.MCPURL, manage.MethodInstall, map[string]any{"config_json": payload})
	if res["status"] == "ok" {
		t.Fatalf("install of the escape = %s", raw)
	}
	diags := map[string]string{}
	for _, x := range res["servers"].([]any) {
		o := x.(map[string]any)
		if o["name"] != "evil" || o["status"] != "validation_error" {
			t.Errorf("server %v: status %v, want validation_error", o["name"], o["status"])
		}
		for _, d := range o["diagnostics"].([]any) {
			d := d.(map[string]any)
			diags[d["field_path"].(string)] = d["level"].(string) + " " + d["code"].(string) + ": " + d["message"].(string)
		}
	}
	if d := diags["mcpServers.evil.args[1]"]; !strings.HasPrefix(d, "error widens_hardening") || !strings.Contains(d, "/proc") {
		t.Errorf("-v diagnostic = %q (all: %v)", d, diags)
	}
	if d := diags["mcpServers.evil.args[3]"]; !strings.Contains(d, "widens_hardening") || !strings.Contains(d, "65534:65534") {
		t.Errorf("--user diagnostic = %q (all: %v)", d, diags)
	}
	if n := countContainers(t, g.Instance, "evil"); n != 0 {
		t.Errorf("%d container(s) for the refused install", n)
	}

	allowed := fmt.Sprintf(`{"mcpServers":{"good":{"command":"docker","args":["run","-i","-v","%s/data/../data:/data:ro","--user","1000","mcp-hangar/math:dev"]}}}`, root)
	if res, raw := mustMgmt(t, g.MCPURL, manage.MethodInstall, map[string]any{"config_json": allowed}); res["status"] != "ok" {
		t.Fatalf("install within the roots = %s", raw)
	}
	if r := s.callOne(t, "good", "add", map[string]any{"a": 1, "b": 2}); !strings.Contains(jsonOf(r), "3") {
		t.Errorf("good add = %v", r)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, "data"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range containers(t, g.Instance, "good") {
		ctx, cancel := context.WithTimeout(t.Context(), dockerTimeout)
		info, err := docker.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if binds := info.Container.HostConfig.Binds; len(binds) != 1 || binds[0] != real+":/data:ro" {
			t.Errorf("good binds = %q, want %s:/data:ro", binds, real)
		}
		if u := info.Container.Config.User; u != "1000:1000" {
			t.Errorf("good user = %q", u)
		}
	}

	// The second line: a discovered provider file is no mapper's business
	// here; the container spec is refused when built.
	s.mustCall(t, "hangar_discover", nil)
	if r := s.mustCall(t, "hangar_approve", map[string]any{"mcp_server": "etcfile"}); r["approved"] != true {
		t.Fatalf("hangar_approve = %v", r)
	}
	_, isErr, text := s.call(t, "hangar_start", map[string]any{"mcp_server": "etcfile"})
	if !isErr || !strings.Contains(text, "bind mount refused") || !strings.Contains(text, "install.allowed_bind_roots") {
		t.Errorf("hangar_start etcfile = %q (error %v), want a refused bind naming install.allowed_bind_roots", text, isErr)
	}
	for _, c := range containers(t, g.Instance, "") {
		ctx, cancel := context.WithTimeout(t.Context(), dockerTimeout)
		info, err := docker.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
		cancel()
		if err != nil {
			continue // gone meanwhile
		}
		for _, b := range info.Container.HostConfig.Binds {
			if !strings.HasPrefix(b, real+":") {
				t.Errorf("container %.12s (%s) has bind %q", c.ID, c.Labels[dockerrt.LabelServer], b)
			}
		}
	}
}

// A config-file remote whose endpoint carries a secret (user-info, a
// ${SECRET} in its query) fails to start; neither hangar_details
// (meta.endpoint, last_error), the tool error nor the log shows the
// secret. An installed remote with user-info keeps it only in the
// keystore.
func TestEndpointSecretsRedacted(t *testing.T) {
	const secret = "endpoint-SECRET-71c3"
	t.Setenv("SEC_TEST_ENDPOINT_SECRET", secret)
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(newTestLog(t), logs), &slog.HandlerOptions{Level: slog.LevelDebug}))
	// Port 1 on loopback refuses: the start fails with net/http's error,
	// which quotes the URL.
	g := startGatewayFile(t, writeConfig(t, `
mcp_servers:
  far:
    mode: remote
    endpoint: "http://alice:${SEC_TEST_ENDPOINT_SECRET}@127.0.0.1:1/mcp?key=${SEC_TEST_ENDPOINT_SECRET}"
    start_timeout_s: 5
`), app.Options{Log: log})
	s := connect(t, g.MCPURL)
	var answers []string
	_, isErr, text := s.call(t, "hangar_start", map[string]any{"mcp_server": "far"})
	if !isErr {
		t.Fatalf("hangar_start far succeeded: %s", text)
	}
	answers = append(answers, text)
	d := s.mustCall(t, "hangar_details", map[string]any{"mcp_server": "far"})
	answers = append(answers, jsonOf(d))
	meta, _ := d["meta"].(map[string]any)
	if meta["endpoint"] != "http://127.0.0.1:1/mcp?key=[redacted]" {
		t.Errorf("meta.endpoint = %v", meta["endpoint"])
	}
	if le, _ := meta["last_error"].(string); !strings.Contains(le, "127.0.0.1:1") {
		t.Errorf("last_error = %q, want the failure with the redacted endpoint", le)
	}

	res, raw := mustMgmt(t, g.MCPURL, manage.MethodInstall, map[string]any{"config_json": `{"mcpServers":{"far2":{"url":"http://bob:` + secret + `@127.0.0.1:1/mcp?token=` + secret + `"}}}`})
	answers = append(answers, raw)
	if res["status"] != "ok" {
		t.Fatalf("install far2 = %s", raw)
	}
	_, raw = mustMgmt(t, g.MCPURL, manage.MethodDetails, map[string]any{"server_id": "far2"})
	answers = append(answers, raw)
	_, _, text = s.call(t, "hangar_start", map[string]any{"mcp_server": "far2"})
	answers = append(answers, text, jsonOf(s.mustCall(t, "hangar_details", map[string]any{"mcp_server": "far2"})))

	for _, a := range append(answers, logs.String()) {
		if strings.Contains(a, secret) {
			t.Errorf("the endpoint secret leaks: %s", a)
		}
	}
	if !strings.Contains(logs.String(), "start failed") {
		t.Errorf("no start failure logged")
	}
}
