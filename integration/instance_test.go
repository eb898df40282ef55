package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/app"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/instance"
)

// A second gateway with the same instance name refuses to start, naming
// the running one, and touches none of its containers: the first one's
// calls keep working on the same container.
func TestInstanceSecondGatewayRefused(t *testing.T) {
	name := newInstance(t)
	first := startGatewayAs(t, name, mathConfig)
	s := connect(t, first.MCPURL)
	if r := s.callOne(t, "math", "add", map[string]any{"a": 1, "b": 2}); r["success"] != true {
		t.Fatalf("add through the first gateway: %v", r)
	}
	before := containers(t, name, "math")
	if len(before) != 1 {
		t.Fatalf("%d math containers, want 1", len(before))
	}

	cfg, err := config.Parse([]byte(mathConfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := app.New(cfg, app.Options{Instance: name, Listen: "127.0.0.1:1", Log: first.App.Log})
	if err == nil {
		_ = second.Close(context.Background())
		t.Fatal("a second gateway with the same instance name started")
	}
	t.Logf("second gateway: %v", err)
	if !errors.Is(err, instance.ErrHeld) {
		t.Errorf("error %v is not ErrHeld", err)
	}
	listen := strings.TrimPrefix(first.URL, "http://")
	for _, want := range []string{fmt.Sprintf("pid %d", os.Getpid()), "listening on " + listen, "since ", name} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name the running gateway (%q)", err, want)
		}
	}

	after := containers(t, name, "math")
	if len(after) != 1 || after[0].ID != before[0].ID || after[0].State != container.StateRunning {
		t.Fatalf("the first gateway's container changed: before %s, after %s", describe(before), describe(after))
	}
	if r := s.callOne(t, "math", "add", map[string]any{"a": 20, "b": 22}); r["success"] != true || r["result"] != float64(42) {
		t.Errorf("add through the first gateway after the refusal: %v", r)
	}
}

// A gateway killed with SIGKILL does not block the next start of its
// instance, which removes the container it left and serves again; a clean
// shutdown then releases the lease.
func TestInstanceKill9ThenRestart(t *testing.T) {
	name := newInstance(t)
	// An HTTP provider: its container keeps running when the gateway dies
	// (a stdio one would end with its stdin), so only the reaper removes it.
	// No prefetch: the test counts the containers the first call starts.
	cfg := writeConfig(t, `
front_door: {prefetch: false}
mcp_servers:
  web:
    mode: docker
    image: mcp-hangar/testkit:dev
    args: ["--transport", "http", "--port", "8080"]
    transport: http
    port: 8080
    start_timeout_s: 30
`)
	t.Cleanup(func() {
		removeContainers(t, containers(t, name, ""))
		ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
		defer cancel()
		_, _ = docker.VolumeRemove(ctx, instance.VolumeName(name), client.VolumeRemoveOptions{Force: true})
	})

	dataDir := t.TempDir() // one gateway at a time, one data dir across the restart
	start := func() (*exec.Cmd, string, <-chan struct{}) {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		cmd := exec.Command(hangarBin, "serve", "--config", cfg, "--listen", addr, "--instance", name, "--data-dir", dataDir)
		cmd.Stderr = newTestLog(t)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			select {
			case <-exited:
			default:
				_ = cmd.Process.Kill()
				<-exited
			}
		})
		waitHealthy(t, "http://"+addr+"/healthz", 20*time.Second, exited)
		return cmd, addr, exited
	}

	cmd, addr, exited := start()
	s := connect(t, "http://"+addr+"/mcp")
	if r := s.callOne(t, "web", "echo", map[string]any{"text": "before"}); r["success"] != true {
		t.Fatalf("echo: %v", r)
	}
	left := containers(t, name, "web")
	if len(left) != 1 {
		t.Fatalf("%d web containers, want 1", len(left))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	_ = s.Close()
	if l := containers(t, name, "web"); len(l) != 1 || l[0].State != container.StateRunning {
		t.Fatalf("after kill -9: %s, want the 1 running container left behind", describe(l))
	}

	began := time.Now()
	cmd2, addr2, exited2 := start()
	t.Logf("restart after kill -9 healthy in %s", time.Since(began))
	waitFor(t, 10*time.Second, "the container left by the killed gateway removed", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
		defer cancel()
		_, err := docker.ContainerInspect(ctx, left[0].ID, client.ContainerInspectOptions{})
		return isNotFound(err)
	})
	s2 := connect(t, "http://"+addr2+"/mcp")
	if r := s2.callOne(t, "web", "echo", map[string]any{"text": "after"}); r["success"] != true || r["result"] != "after" {
		t.Errorf("echo after the restart: %v", r)
	}
	_ = s2.Close()

	if err := cmd2.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited2:
	case <-time.After(20 * time.Second):
		t.Fatal("the restarted gateway did not exit within 20s of SIGTERM")
	}
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	if _, err := docker.VolumeInspect(ctx, instance.VolumeName(name), client.VolumeInspectOptions{}); !isNotFound(err) {
		t.Errorf("the lease volume outlived a clean shutdown (inspect: %v)", err)
	}
	if n := countContainers(t, name, ""); n != 0 {
		t.Errorf("%d containers after the clean shutdown", n)
	}
}

// Two copies of a stack on one engine, each gateway scoped to its compose
// project: each sees only its own labelled container, though both carry
// the same server name.
func TestComposeScopesNoCrossTalk(t *testing.T) {
	projects := []string{"hangarscope" + randomHex(3), "hangarscope" + randomHex(3)}
	for _, p := range projects {
		runScoped(t, p)
	}
	sessions := make([]*session, len(projects))
	for i, p := range projects {
		g := startGateway(t, fmt.Sprintf(`
discovery:
  enabled: true
  auto_register: true
  refresh_interval_s: 3600
  sources:
    - {type: docker, mode: authoritative, filters: {compose_project: %s}}
`, p))
		sessions[i] = connect(t, g.MCPURL)
	}
	for i, s := range sessions {
		var r map[string]any
		deadline := time.Now().Add(30 * time.Second)
		for {
			m, isErr, text := s.call(t, "hangar_call", one("echo", "env", map[string]any{"name": "STACK"}))
			if !isErr && m != nil {
				if r = result(t, m); r["success"] == true {
					break
				}
			} else {
				r = map[string]any{"error": text}
			}
			if time.Now().After(deadline) {
				t.Fatalf("gateway of %s: echo never answered: %v", projects[i], r)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if r["result"] != projects[i] {
			t.Errorf("gateway of %s reached the echo of %v", projects[i], r["result"])
		}
		d := s.mustCall(t, "hangar_discovered", nil)
		for _, name := range []string{"noise-bad", "math"} {
			if strings.Contains(fmt.Sprint(d), name) {
				t.Errorf("gateway of %s discovered another project's %s: %v", projects[i], name, d)
			}
		}
	}
}

// runScoped starts an HTTP testkit labelled for discovery as "echo" in the
// compose project p; its STACK variable names the project.
func runScoped(t *testing.T, p string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	created, err := docker.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{
			Image: "mcp-hangar/testkit:dev",
			Cmd:   []string{"--transport", "http", "--port", "8080", "--name", "echo"},
			Env:   []string{"STACK=" + p},
			User:  "65534:65534",
			Labels: map[string]string{
				discovery.LabelEnabled: "true", discovery.LabelName: "echo",
				discovery.LabelComposeProject: p,
			},
		},
		HostConfig: &container.HostConfig{NetworkMode: "bridge"},
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { removeContainer(t, created.ID) })
	if _, err := docker.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start: %v", err)
	}
}

// Two gateways started at the same moment with one instance name: exactly
// one serves, the other exits with an error naming the winner.
func TestInstanceSimultaneousStarts(t *testing.T) {
	name := newInstance(t)
	cfg := writeConfig(t, mathConfig)
	t.Cleanup(func() {
		removeContainers(t, containers(t, name, ""))
		ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
		defer cancel()
		_, _ = docker.VolumeRemove(ctx, instance.VolumeName(name), client.VolumeRemoveOptions{Force: true})
	})
	type proc struct {
		cmd    *exec.Cmd
		addr   string
		stderr *strings.Builder
		exited chan struct{}
	}
	procs := make([]*proc, 2)
	for i := range procs {
		p := &proc{addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), stderr: &strings.Builder{}, exited: make(chan struct{})}
		// Each its own data dir: the engine-side lease, not the data-dir
		// lock, must pick the winner.
		p.cmd = exec.Command(hangarBin, "serve", "--config", cfg, "--listen", p.addr, "--instance", name, "--data-dir", t.TempDir())
		p.cmd.Stderr = p.stderr
		procs[i] = p
	}
	for _, p := range procs { // as close together as two starts get
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = p.cmd.Wait(); close(p.exited) }()
	}
	t.Cleanup(func() {
		for _, p := range procs {
			select {
			case <-p.exited:
			default:
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-p.exited:
				case <-time.After(20 * time.Second):
					_ = p.cmd.Process.Kill()
					<-p.exited
				}
			}
		}
	})

	var loser, winner *proc
	select {
	case <-procs[0].exited:
		loser, winner = procs[0], procs[1]
	case <-procs[1].exited:
		loser, winner = procs[1], procs[0]
	case <-time.After(30 * time.Second):
		t.Fatal("neither gateway exited: both started with one instance name")
	}
	if code := loser.cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("the losing gateway exited with %d, want 1", code)
	}
	msg := loser.stderr.String()
	for _, want := range []string{"is already running on this Docker engine", fmt.Sprintf("pid %d", winner.cmd.Process.Pid), "listening on " + winner.addr} {
		if !strings.Contains(msg, want) {
			t.Errorf("the loser's error does not name the winner (%q):\n%s", want, msg)
		}
	}
	waitHealthy(t, "http://"+winner.addr+"/healthz", 20*time.Second, winner.exited)
	s := connect(t, "http://"+winner.addr+"/mcp")
	if r := s.callOne(t, "math", "add", map[string]any{"a": 4, "b": 5}); r["success"] != true || r["result"] != float64(9) {
		t.Errorf("add through the winner: %v", r)
	}
}
