package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/dockerrt"
)

// `hangar serve --stdio` serves MCP on its stdin/stdout and, when its client
// goes away, exits and leaves no container.
func TestStdioServe(t *testing.T) {
	instance := newInstance(t)
	cfg := writeConfig(t, mathConfig)
	t.Cleanup(func() { removeContainers(t, containers(t, instance, "")) })

	var cmd *exec.Cmd
	tr := transport.NewStdioWithOptions(hangarBin, nil,
		[]string{"serve", "--stdio", "--config", cfg, "--instance", instance, "--data-dir", t.TempDir()},
		transport.WithCommandFunc(func(_ context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd = exec.Command(command, args...)
			cmd.Env = append(os.Environ(), env...)
			cmd.Stderr = newTestLog(t)
			return cmd, nil
		}))
	c := mcpclient.NewClient(tr)
	s := startSession(t, c)

	l := s.mustCall(t, "hangar_list", nil)
	servers, _ := l["mcp_servers"].([]any)
	if len(servers) != 1 || str(servers[0].(map[string]any), "mcp_server") != "math" {
		t.Errorf("hangar_list = %v, want the math server", l)
	}
	r := s.callOne(t, "math", "add", map[string]any{"a": 2, "b": 3})
	if r["success"] != true || r["result"] != float64(5) {
		t.Errorf("add(2, 3) = %v, want success with 5", r)
	}
	if n := countContainers(t, instance, "math"); n != 1 {
		t.Errorf("%d math containers while serving, want 1", n)
	}

	began := time.Now()
	err := c.Close()
	took := time.Since(began)
	t.Logf("client close (stdin EOF, then the process exits) took %s: %v", took, err)
	if cmd == nil || cmd.ProcessState == nil {
		t.Fatal("the hangar process has not exited after the client closed")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("hangar exited with %s, want code 0", cmd.ProcessState)
	}
	// mcp-go sends SIGTERM after 2s; exiting on EOF alone must be quicker.
	if took >= 2*time.Second {
		t.Errorf("hangar took %s to exit after stdin closed, want < 2s (it should exit on EOF, not need SIGTERM)", took)
	}
	if left := containers(t, instance, ""); len(left) != 0 {
		t.Errorf("after hangar exited, %d container(s) remain: %s", len(left), describe(left))
	}
}

// SIGTERM makes `hangar serve` drain, remove every container and exit 0.
func TestSIGTERMLeavesNoContainer(t *testing.T) {
	instance := newInstance(t)
	cfg := writeConfig(t, `
mcp_servers:
  math:
    mode: docker
    image: mcp-hangar/math:dev
    start_timeout_s: 30
  testkit:
    mode: docker
    image: mcp-hangar/testkit:dev
    start_timeout_s: 30
`)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(hangarBin, "serve", "--config", cfg, "--listen", addr, "--instance", instance, "--data-dir", t.TempDir())
	cmd.Stderr = newTestLog(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
		removeContainers(t, containers(t, instance, ""))
	})

	waitHealthy(t, "http://"+addr+"/healthz", 20*time.Second, exited)
	s := connect(t, "http://"+addr+"/mcp")
	w := s.mustCall(t, "hangar_warm", map[string]any{})
	warmed := stringList(w["warmed"])
	slices.Sort(warmed)
	if !slices.Equal(warmed, []string{"math", "testkit"}) {
		t.Fatalf("hangar_warm = %v, want math and testkit warmed", w)
	}
	if list := containers(t, instance, ""); len(list) != 2 {
		t.Fatalf("%d containers after warming, want 2: %s", len(list), describe(list))
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		t.Fatalf("hangar still running 15s after SIGTERM")
	}
	t.Logf("hangar exited %s after SIGTERM: %v", time.Since(began), waitErr)
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("hangar exited with %s after SIGTERM, want code 0", cmd.ProcessState)
	}
	if left := containers(t, instance, ""); len(left) != 0 {
		t.Errorf("after SIGTERM, %d container(s) remain: %s", len(left), describe(left))
	}
}

// A new gateway removes the containers an earlier run of the same instance
// left behind, and only those.
func TestReaperRemovesLeftovers(t *testing.T) {
	owner := newInstance(t)
	other := newInstance(t) // another gateway's; must survive
	ghost := runLabelled(t, owner, "ghost")
	foreign := runLabelled(t, other, "ghost")

	startGatewayAs(t, owner, mathConfig)

	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	if _, err := docker.ContainerInspect(ctx, ghost, client.ContainerInspectOptions{}); !isNotFound(err) {
		t.Errorf("the leftover %.12s of instance %s still exists after app.New (inspect error: %v)", ghost, owner, err)
	}
	res, err := docker.ContainerInspect(ctx, foreign, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatalf("the container %.12s of another instance is gone: %v", foreign, err)
	}
	if res.Container.State == nil || !res.Container.State.Running {
		t.Errorf("the container of another instance is no longer running: %+v", res.Container.State)
	}
}

// runLabelled starts a long-running testkit container carrying the gateway's
// labels for owner and server, as a crashed gateway would leave it; the
// cleanup removes it.
func runLabelled(t *testing.T, owner, server string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	created, err := docker.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{
			Image: "mcp-hangar/testkit:dev",
			Cmd:   []string{"--hang"},
			User:  "65534:65534",
			Labels: map[string]string{
				dockerrt.LabelManaged: "true",
				dockerrt.LabelServer:  server,
				dockerrt.LabelOwner:   owner,
			},
		},
		HostConfig: &container.HostConfig{
			AutoRemove:  false,
			NetworkMode: "none",
			CapDrop:     []string{"ALL"},
		},
	})
	if err != nil {
		t.Fatalf("create container: %v", err)
	}
	t.Cleanup(func() { removeContainer(t, created.ID) })
	if _, err := docker.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start container: %v", err)
	}
	res, err := docker.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{})
	if err != nil || res.Container.State == nil || !res.Container.State.Running {
		t.Fatalf("container %.12s is not running: %v", created.ID, err)
	}
	return created.ID
}
