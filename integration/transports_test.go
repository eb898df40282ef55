package integration

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/dockerrt"
)

// startExternal runs a testkit container the gateway does not own (it
// stands for a remote MCP server) and returns its address on the bridge.
// It is labelled managed by a sibling owner, so the suite's leftover check
// covers it while the gateway's own reaper leaves it alone.
func startExternal(t *testing.T, owner string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	created, err := docker.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: "mcp-hangar/testkit:dev", Cmd: args, Labels: map[string]string{
			dockerrt.LabelManaged: "true", dockerrt.LabelOwner: owner, dockerrt.LabelServer: "external",
		}},
		HostConfig: &container.HostConfig{NetworkMode: "bridge"},
	})
	if err != nil {
		t.Fatalf("create external server: %v", err)
	}
	t.Cleanup(func() { removeContainer(t, created.ID) })
	if _, err := docker.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start external server: %v", err)
	}
	info, err := docker.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ep := info.Container.NetworkSettings.Networks["bridge"]
	if ep == nil || !ep.IPAddress.IsValid() {
		t.Fatalf("external server has no bridge address")
	}
	return ep.IPAddress.String()
}

// TestTransports calls one tool on a provider of every transport: a
// container serving streamable HTTP, remote streamable HTTP and SSE
// servers, and a subprocess.
func TestTransports(t *testing.T) {
	instance := newInstance(t)
	httpIP := startExternal(t, instance+"-ext", "--transport", "http", "--port", "8080")
	sseIP := startExternal(t, instance+"-ext", "--transport", "sse", "--port", "8080")
	bin := filepath.Join(t.TempDir(), "testkit")
	build := exec.Command("go", "build", "-o", bin, "./images/testkit")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build testkit: %v\n%s", err, out)
	}

	g := startGatewayAs(t, instance, fmt.Sprintf(`
mcp_servers:
  web:
    mode: docker
    image: mcp-hangar/testkit:dev
    args: ["--transport", "http", "--port", "8080"]
    transport: http
    port: 8080
    start_timeout_s: 20
  remote-http:
    mode: remote
    endpoint: http://%s:8080/mcp
    start_timeout_s: 20
  remote-sse:
    mode: remote
    transport: sse
    endpoint: http://%s:8080/mcp
    start_timeout_s: 20
  proc:
    mode: subprocess
    command: [%q]
`, httpIP, sseIP, bin))
	s := connect(t, g.MCPURL)

	for _, id := range []string{"web", "remote-http", "remote-sse", "proc"} {
		t.Run(id, func(t *testing.T) {
			r := s.callOne(t, id, "echo", map[string]any{"text": "via " + id})
			if r["success"] != true || r["result"] != "via "+id {
				t.Fatalf("echo through %s: %v", id, r)
			}
		})
	}
	if n := countContainers(t, instance, "web"); n != 1 {
		t.Errorf("containers for the HTTP provider = %d, want 1", n)
	}
	// The HTTP container is removed like any other on stop.
	s.mustCall(t, "hangar_stop", map[string]any{"mcp_server": "web"})
	if n := countContainers(t, instance, "web"); n != 0 {
		t.Errorf("after hangar_stop, containers for the HTTP provider = %d, want 0", n)
	}
}
