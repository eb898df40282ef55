package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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
	instance := newInstance(t)
	project := "hangarit" + randomHex(4)
	port := freePort(t)
	base := append(composeCommand(t), "-p", project, "-f", filepath.Join(repoRoot, "docker-compose.yml"))
	env := append(os.Environ(), "HANGAR_PORT="+strconv.Itoa(port), "HANGAR_INSTANCE="+instance)
	compose := func(ctx context.Context, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, base[0], append(base[1:], args...)...)
		cmd.Dir, cmd.Env = repoRoot, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	down := func() {
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
	})

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if out, err := compose(ctx, "up", "-d"); err != nil {
		down()
		t.Fatalf("compose up: %v\n%s", err, out)
	}
	waitHealthy(t, "http://127.0.0.1:"+strconv.Itoa(port)+"/healthz", 30*time.Second, nil)

	// The agent: a container on the stack's network reaching the gateway by
	// its service name. The discovered server may need a moment after the
	// gateway is up, so the call is retried briefly.
	batch := `{"calls":[{"mcp_server":"math","tool":"add","arguments":{"a":20,"b":22}},` +
		`{"mcp_server":"echo","tool":"echo","arguments":{"text":"from the network"}},` +
		`{"mcp_server":"web","tool":"echo","arguments":{"text":"spawned over http"}}]}`
	var got map[string]any
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := runOnNetwork(ctx, t, project+"_default", "http://hangar:8080/mcp", "hangar_call", batch)
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
}

// runOnNetwork runs `hangar call` in a throw-away gateway-image container on
// network, the way an agent in the stack reaches the gateway.
func runOnNetwork(ctx context.Context, t *testing.T, network, url, tool, args string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "docker", "run", "--rm", "--network", network,
		"--entrypoint", "/hangar", "mcp-hangar/gateway:dev", "call", "--url", url, "--timeout", "30s", tool, args)
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
