package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// composeCommand is `docker compose` where the plugin exists, else the
// standalone docker-compose.
func composeCommand(t *testing.T) []string {
	t.Helper()
	if exec.Command("docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}
	}
	if _, err := exec.LookPath("docker-compose"); err == nil {
		return []string{"docker-compose"}
	}
	t.Fatal("neither `docker compose` nor docker-compose is installed")
	return nil
}

// TestComposeStack brings the root docker-compose.yml up, calls a spawned
// stdio provider and a discovered HTTP provider from a container on the
// compose network by service name, and takes the stack down clean.
func TestComposeStack(t *testing.T) {
	// No --instance: the gateway names its instance after the compose
	// project, which starts with the suite's prefix so that leftovers are
	// found.
	project := suitePrefix + "compose-" + randomHex(4)
	instance := project
	port := freePort(t)
	base := append(composeCommand(t), "-p", project, "-f", filepath.Join(repoRoot, "docker-compose.yml"))
	env := append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "HANGAR_INSTANCE=") }),
		"HANGAR_PORT="+strconv.Itoa(port), "HANGAR_GATEWAY_IMAGE="+gatewayImage())
	compose := func(ctx context.Context, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, base[0], append(base[1:], args...)...)
		cmd.Dir, cmd.Env = repoRoot, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	isDown := false
	down := func() {
		if isDown {
			return
		}
		isDown = true
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if out, err := compose(ctx, "down", "-v", "--remove-orphans"); err != nil {
			t.Errorf("compose down: %v\n%s", err, out)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := compose(context.Background(), "logs", "--no-color", "hangar")
			t.Logf("gateway logs:\n%s", tail(out, 40))
		}
		// A stack left up after a failed assertion would keep its labelled
		// echo server discoverable by every other stack on the engine.
		down()
	})

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if out, err := compose(ctx, "up", "-d"); err != nil {
		down()
		t.Fatalf("compose up: %v\n%s", err, out)
	}
	waitHealthy(t, "http://127.0.0.1:"+strconv.Itoa(port)+"/healthz", 30*time.Second, nil)
	// The compose healthcheck is the gateway's readiness: docker reports
	// the service healthy once /readyz answers 200.
	hangarCtr := func(format string) string {
		out, _ := exec.CommandContext(ctx, "docker", "ps", "--filter", "label=com.docker.compose.project="+project,
			"--filter", "label=com.docker.compose.service=hangar", "--format", format).Output()
		return strings.TrimSpace(string(out))
	}
	waitFor(t, 30*time.Second, "the hangar service healthy", func() bool { return strings.Contains(hangarCtr("{{.Status}}"), "(healthy)") })
	if id := hangarCtr("{{.ID}}"); id != "" {
		out, _ := exec.CommandContext(ctx, "docker", "inspect", "-f", "{{json .Config.Healthcheck.Test}}", id).Output()
		if !strings.Contains(string(out), "/readyz") {
			t.Errorf("the hangar service's healthcheck is %s, want /readyz", out)
		}
	}

	// The stack is authenticated out of the box: a caller on its network
	// without the generated token is refused.
	network, tokenVolume := project+"_default", project+"_hangar-token"
	if out, err := runOnNetwork(ctx, t, network, "", "http://hangar:8080/mcp", "hangar_list", "{}"); err == nil ||
		!strings.Contains(out, "authorization required") {
		t.Fatalf("a call without the token was not refused: %v\n%s", err, out)
	}

	// The agent: a container on the stack's network reaching the gateway by
	// its service name, with the token from the shared volume. The
	// discovered server may need a moment after the gateway is up, so the
	// call is retried briefly.
	batch := `{"calls":[{"mcp_server":"math","tool":"add","arguments":{"a":20,"b":22}},` +
		`{"mcp_server":"echo","tool":"echo","arguments":{"text":"from the network"}},` +
		`{"mcp_server":"web","tool":"echo","arguments":{"text":"spawned over http"}}]}`
	var got map[string]any
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := runOnNetwork(ctx, t, network, tokenVolume, "http://hangar:8080/mcp", "hangar_call", batch)
		if err == nil {
			got = map[string]any{}
			if jerr := json.Unmarshal([]byte(out), &got); jerr != nil {
				t.Fatalf("agent output is not JSON: %v\n%s", jerr, out)
			}
			if got["success"] == true || time.Now().After(deadline) {
				break
			}
		} else if time.Now().After(deadline) {
			t.Fatalf("agent call: %v\n%s", err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	results, _ := got["results"].([]any)
	if got["success"] != true || len(results) != 3 {
		t.Fatalf("batch through the compose network: %v", got)
	}
	if r := results[0].(map[string]any)["result"]; r != 42.0 {
		t.Errorf("math add = %v, want 42", r)
	}
	if r := results[1].(map[string]any)["result"]; r != "from the network" {
		t.Errorf("echo = %v, want %q", r, "from the network")
	}
	if r := results[2].(map[string]any)["result"]; r != "spawned over http" {
		t.Errorf("web echo = %v, want %q", r, "spawned over http")
	}
	// The front door's prefetch at boot may have started one already, which
	// may still be stopping: one is left running.
	for _, id := range []string{"math", "web"} {
		running := func() int {
			n := 0
			for _, c := range containers(t, instance, id) {
				if c.State == "running" {
					n++
				}
			}
			return n
		}
		waitFor(t, 20*time.Second, "one running "+id+" container", func() bool { return running() == 1 })
	}
	// The echo discovered is the stack's own, not the one of another
	// project on the engine (the suite runs such noise): its hostname is
	// the stack's echo container.
	echo, err := docker.ContainerList(ctx, client.ContainerListOptions{Filters: make(client.Filters).
		Add("label", "com.docker.compose.project="+project, "com.docker.compose.service=echo")})
	if err != nil || len(echo.Items) != 1 {
		t.Fatalf("the stack's echo container: %v (%d found)", err, len(echo.Items))
	}
	out, err := runOnNetwork(ctx, t, network, tokenVolume, "http://hangar:8080/mcp", "hangar_call",
		`{"calls":[{"mcp_server":"echo","tool":"env","arguments":{"name":"HOSTNAME"}}]}`)
	if err != nil || !strings.Contains(out, `"`+echo.Items[0].ID[:12]+`"`) {
		t.Errorf("echo's HOSTNAME = %s (%v), want the stack's echo container %.12s", out, err, echo.Items[0].ID)
	}
	if _, err := docker.VolumeInspect(ctx, "hangar-lease-"+instance, client.VolumeInspectOptions{}); err != nil {
		t.Errorf("the gateway holds no lease named after the compose project: %v", err)
	}

	down()
	// The gateway stopped its providers on SIGTERM; give the engine a moment
	// to finish auto-removal.
	waitFor(t, 15*time.Second, "no containers of the stack's gateway", func() bool {
		return countContainers(t, instance, "") == 0
	})
	list, err := docker.ContainerList(t.Context(), client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", "com.docker.compose.project="+project)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("compose containers left after down: %d", len(list.Items))
	}
	if _, err := docker.VolumeInspect(t.Context(), "hangar-lease-"+instance, client.VolumeInspectOptions{}); !isNotFound(err) {
		t.Errorf("the lease outlived compose down (inspect: %v)", err)
	}
}

// runOnNetwork runs `hangar call` in a throw-away gateway-image container on
// network, the way an agent in the stack reaches the gateway: with the
// token file of tokenVolume mounted ("" for none).
func runOnNetwork(ctx context.Context, t *testing.T, network, tokenVolume, url, tool, args string) (string, error) {
	t.Helper()
	run := []string{"run", "--rm", "--network", network}
	if tokenVolume != "" {
		run = append(run, "-v", tokenVolume+":/run/hangar:ro", "-e", "HANGAR_TOKEN_FILE=/run/hangar/token")
	}
	run = append(run, "--entrypoint", "/hangar", gatewayImage(), "call", "--url", url, "--timeout", "30s", tool, args)
	cmd := exec.CommandContext(ctx, "docker", run...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// gatewayImage is the gateway image the stack runs: $HANGAR_GATEWAY_IMAGE
// (a branch's own build, leaving the shared tag alone) or the shared tag.
func gatewayImage() string {
	if img := os.Getenv("HANGAR_GATEWAY_IMAGE"); img != "" {
		return img
	}
	return "mcp-hangar/gateway:dev"
}
