package integration

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/discovery"
)

// removedWithin is how soon a removed container or service must leave
// hangar_list, whatever the source's mode and filters.
const removedWithin = 5 * time.Second

// TestDiscoveryRemovedContainerLeavesList: a discovered container that is
// removed (docker rm -f) leaves hangar_list within 5 s, for a docker
// source filtered by labels and networks, additive (the default) or
// authoritative. A container that is only stopped stays listed by an
// additive source (it may start again), and leaves when removed.
func TestDiscoveryRemovedContainerLeavesList(t *testing.T) {
	for _, mode := range []string{discovery.ModeAdditive, discovery.ModeAuthoritative} {
		t.Run(mode, func(t *testing.T) {
			cli := discClient(t)
			net := discName("disc-rm-net")
			createNetwork(t, net)
			team := discName("team")
			g := startGateway(t, fmt.Sprintf(`
discovery:
  enabled: true
  auto_register: true
  refresh_interval_s: 3600
  sources:
    - type: docker
      mode: %s
      filters: {compose_project: "*", labels: {team: %s}, networks: [%s]}
data_dir: %s
`, mode, team, net, t.TempDir()))
			s := connect(t, g.MCPURL)

			names := map[string]string{} // name → container ID
			for _, prefix := range []string{"disc-rm", "disc-stop"} {
				name := discName(prefix)
				names[name] = discNetContainer(t, cli, name, net, map[string]string{
					discovery.LabelEnabled: "true", discovery.LabelName: name, "team": team,
				}, "--transport", "http", "--port", "8080", "--path", "/mcp")
				discStart(t, cli, names[name])
			}
			for name := range names {
				waitFor(t, 30*time.Second, name+" in hangar_list", func() bool { return slices.Contains(listed(t, s), name) })
			}

			if mode == discovery.ModeAdditive {
				// Stopped, not removed: an additive source keeps it once
				// a scan no longer lists it.
				var stopped string
				for name := range names {
					if strings.HasPrefix(name, "disc-stop") {
						stopped = name
					}
				}
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				timeout := 1
				_, err := cli.ContainerStop(ctx, names[stopped], client.ContainerStopOptions{Timeout: &timeout})
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				waitFor(t, 10*time.Second, "a scan after the stop", func() bool {
					srcs, _ := s.mustCall(t, "hangar_sources", nil)["sources"].([]any)
					return len(srcs) == 1 && srcs[0].(map[string]any)["mcp_servers_count"] == float64(1)
				})
				if !slices.Contains(listed(t, s), stopped) {
					t.Errorf("%s: a stopped container left hangar_list of an additive source", stopped)
				}
			}
			for name, id := range names {
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				began := time.Now()
				_, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				waitFor(t, removedWithin, name+" gone from hangar_list after docker rm", func() bool {
					return !slices.Contains(listed(t, s), name)
				})
				t.Logf("%s source: %s left hangar_list %s after its removal", mode, name, time.Since(began).Round(time.Millisecond))
			}
		})
	}
}

// discNetContainer creates (not starts) a testkit container on network
// net; the cleanup force-removes it.
func discNetContainer(t *testing.T, cli *client.Client, name, net string, labels map[string]string, args ...string) string {
	t.Helper()
	labels[discLabel] = "true"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:       name,
		Config:     &container.Config{Image: discImage, Cmd: args, Labels: labels},
		HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(net)},
	})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := cli.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			t.Errorf("remove %s: %v", name, err)
		}
	})
	return res.ID
}

// TestSwarmServiceRemovedLeavesList: a discovered Swarm service that is
// removed (docker service rm) leaves hangar_list within 5 s, for a swarm
// source filtered by labels and networks, additive (the default) or
// authoritative: service events carry no labels, so the remove is matched
// by the ID of the service registered.
func TestSwarmServiceRemovedLeavesList(t *testing.T) {
	needSwarm(t)
	ctx := t.Context()
	net := discName("disc-swarm-net")
	if out, err := exec.CommandContext(ctx, "docker", "network", "create", "--driver", "overlay", "--attachable",
		"--label", discLabel+"=true", net).CombinedOutput(); err != nil {
		t.Fatalf("docker network create: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		// The service's tasks leave the network a moment after it goes.
		deadline := time.Now().Add(30 * time.Second)
		for {
			out, err := exec.Command("docker", "network", "rm", net).CombinedOutput()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("docker network rm %s: %v\n%s", net, err, out)
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
	})
	for _, mode := range []string{discovery.ModeAdditive, discovery.ModeAuthoritative} {
		t.Run(mode, func(t *testing.T) {
			team := discName("team")
			g := startGateway(t, fmt.Sprintf(`
discovery:
  enabled: true
  auto_register: true
  refresh_interval_s: 3600
  # The gateway runs on the host, where the service's name does not
  # resolve: it is registered without a check.
  security: {require_health_check: false}
  sources:
    - type: swarm
      mode: %s
      filters: {labels: {team: %s}, networks: [%s]}
data_dir: %s
`, mode, team, net, t.TempDir()))
			s := connect(t, g.MCPURL)
			name := discName("svc")
			create := exec.CommandContext(ctx, "docker", "service", "create", "--detach", "--quiet", "--name", name,
				"--label", discLabel+"=true", "--label", "mcp.hangar.enabled=true", "--label", "mcp.hangar.name="+name,
				"--label", "team="+team, "--network", net, "--endpoint-mode", "dnsrr", "--replicas", "1",
				discImage, "--transport", "http", "--port", "8080", "--name", name)
			if out, err := create.CombinedOutput(); err != nil {
				t.Fatalf("docker service create: %v\n%s", err, out)
			}
			removed := false
			t.Cleanup(func() {
				if !removed {
					_ = exec.Command("docker", "service", "rm", name).Run()
				}
			})
			waitFor(t, 30*time.Second, name+" in hangar_list", func() bool { return slices.Contains(listed(t, s), name) })
			began := time.Now()
			if out, err := exec.CommandContext(ctx, "docker", "service", "rm", name).CombinedOutput(); err != nil {
				t.Fatalf("docker service rm: %v\n%s", err, out)
			}
			removed = true
			waitFor(t, removedWithin, name+" gone from hangar_list after docker service rm", func() bool {
				return !slices.Contains(listed(t, s), name)
			})
			t.Logf("%s swarm source filtered by labels and networks: %s left hangar_list %s after docker service rm",
				mode, name, time.Since(began).Round(time.Millisecond))
		})
	}
}
