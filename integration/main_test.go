// Package integration exercises hangar end to end against a real Docker
// engine and the real provider images (mcp-hangar/math:dev,
// mcp-hangar/testkit:dev). `make integration` builds the images first; the
// suite never pulls from a public registry (pull tests use one served on 127.0.0.1).
//
// Without a reachable engine the suite is skipped, except under CI=true
// where that is a failure.
package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/dockerrt"
)

// Images the suite needs; `make images` builds them.
var requiredImages = []string{
	"mcp-hangar/gateway:dev",
	"mcp-hangar/math:dev",
	"mcp-hangar/testkit:dev",
	"mcp-hangar/agent:dev",
	"mcp-hangar/everything:dev",
	"mcp-hangar/gosdk-everything:dev",
	"mcp-hangar/egresskit:dev",
	pkgRegistryImage,
	pkgRuntimeNodeImage,
	pkgRuntimePythonImage,
}

// Set by TestMain.
var (
	// suitePrefix starts the owner label (the gateway instance name) of
	// every container this run creates, so leftovers can be told apart from
	// other runs sharing the engine.
	suitePrefix string
	// hangarBin is the hangar binary built for this run.
	hangarBin string
	// repoRoot is the module root.
	repoRoot string
	// docker is the engine client of the suite.
	docker *client.Client
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ci := os.Getenv("CI") == "true"

	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
		cancel()
	}
	if err != nil {
		if ci {
			fmt.Fprintf(os.Stderr, "FAIL: integration: the Docker engine is not reachable (CI=true, so this is a failure): %v\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "SKIP: integration: the Docker engine is not reachable, skipping the integration suite: %v\n", err)
		// go test hides a passing package's output; this line makes it say
		// "[no tests to run]" instead of a plain ok.
		fmt.Println("testing: warning: no tests to run")
		return 0
	}
	docker = cli
	defer docker.Close()

	if missing := missingImages(); len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: integration: image(s) %s not found on the engine: run make images (or make integration)\n",
			strings.Join(missing, ", "))
		return 1
	}

	root, err := findRepoRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: integration: cannot find the repository root: %v\n", err)
		return 1
	}
	repoRoot = root

	tmp, err := os.MkdirTemp("", "hangar-integration-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: integration: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	hangarBin = filepath.Join(tmp, "hangar")
	build := exec.Command("go", "build", "-o", hangarBin, "./cmd/hangar")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: integration: go build ./cmd/hangar: %v\n%s", err, out)
		return 1
	}

	suitePrefix = "it-" + randomHex(3) + "-"

	// The suite shares the engine with whatever else runs there; it must
	// pass while unrelated labelled containers, healthy and broken, do.
	removeNoise, err := startNoise()
	if err != nil {
		removeNoise()
		fmt.Fprintf(os.Stderr, "FAIL: integration: start the noise containers: %v\n", err)
		return 1
	}
	defer removeNoise()

	code := m.Run()

	if left := leftovers(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: integration: %d container(s) of this run (owner prefix %q) were left behind:\n", len(left), suitePrefix)
		for _, l := range left {
			fmt.Fprintf(os.Stderr, "  %s\n", l)
		}
		removeLeftovers()
		if code == 0 {
			code = 1
		}
	}
	return code
}

func missingImages() []string {
	var missing []string
	for _, img := range requiredImages {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := docker.ImageInspect(ctx, img)
		cancel()
		if err != nil {
			if !cerrdefs.IsNotFound(err) {
				img += " (" + err.Error() + ")"
			}
			missing = append(missing, img)
		}
	}
	return missing
}

// findRepoRoot asks the go command for the module file, and walks up from
// the working directory to a go.mod if that fails.
func findRepoRoot() (string, error) {
	if out, err := exec.Command("go", "env", "GOMOD").Output(); err == nil {
		if gomod := strings.TrimSpace(string(out)); gomod != "" && gomod != os.DevNull {
			return filepath.Dir(gomod), nil
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// suiteContainers lists the managed containers whose owner starts with the
// suite's prefix.
func suiteContainers() ([]string, []string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	list, err := docker.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", dockerrt.LabelManaged+"=true"),
	})
	if err != nil {
		return nil, nil, err
	}
	var ids, desc []string
	for _, c := range list.Items {
		owner := c.Labels[dockerrt.LabelOwner]
		if !strings.HasPrefix(owner, suitePrefix) {
			continue
		}
		ids = append(ids, c.ID)
		desc = append(desc, fmt.Sprintf("%.12s image=%s state=%s owner=%s server=%s",
			c.ID, c.Image, c.State, owner, c.Labels[dockerrt.LabelServer]))
	}
	sort.Strings(desc)
	return ids, desc, nil
}

func leftovers() []string {
	_, desc, err := suiteContainers()
	if err != nil {
		return []string{"cannot list containers: " + err.Error()}
	}
	return desc
}

func removeLeftovers() {
	ids, _, err := suiteContainers()
	if err != nil {
		return
	}
	for _, id := range ids {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_, _ = docker.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
		cancel()
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// noiseLabel marks the suite's noise containers.
const noiseLabel = "io.mcp-hangar.test.noise"

// startNoise starts containers that belong to neither this suite nor any
// gateway of it, as another compose project and another gateway on the
// same engine would run them: discoverable servers (a healthy one named
// like the compose stack's, one with a bad label, one whose port answers
// nothing, one named like a configured server) and containers managed by
// another gateway instance (one running, one exited). The returned
// function removes them.
func startNoise() (func(), error) {
	project := "hangarnoise" + randomHex(3)
	otherOwner := "noise-" + randomHex(3)
	http := []string{"--transport", "http", "--port", "8080", "--name", "noise"}
	discoverable := func(extra map[string]string) map[string]string {
		l := map[string]string{"mcp.hangar.enabled": "true", "com.docker.compose.project": project, noiseLabel: "true"}
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	managed := map[string]string{dockerrt.LabelManaged: "true", dockerrt.LabelOwner: otherOwner,
		dockerrt.LabelServer: "math", noiseLabel: "true"}
	specs := []struct {
		labels map[string]string
		cmd    []string
		start  bool
	}{
		{discoverable(map[string]string{"mcp.hangar.name": "echo", "mcp.hangar.port": "8080"}), http, true},
		{discoverable(map[string]string{"mcp.hangar.name": "noise-bad", "mcp.hangar.port": "abc"}), http, true},
		{discoverable(map[string]string{"mcp.hangar.name": "math", "mcp.hangar.port": "9"}), http, true},
		{managed, []string{"--hang"}, true},
		{managed, []string{"--no-such-flag"}, true}, // exits at once
	}
	removeStaleNoise()
	var ids []string
	remove := func() {
		for _, id := range ids {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			_, _ = docker.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
			cancel()
		}
	}
	for _, sp := range specs {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		created, err := docker.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config:     &container.Config{Image: "mcp-hangar/testkit:dev", Cmd: sp.cmd, Labels: sp.labels, User: "65534:65534"},
			HostConfig: &container.HostConfig{NetworkMode: "bridge"},
		})
		if err == nil {
			ids = append(ids, created.ID)
			_, err = docker.ContainerStart(ctx, created.ID, client.ContainerStartOptions{})
		}
		cancel()
		if err != nil {
			return remove, err
		}
	}
	return remove, nil
}

// staleNoiseAge is how old noise must be to be another run's leftover: no
// run of the suite lasts this long (go test's own timeout is shorter).
const staleNoiseAge = time.Hour

// removeStaleNoise removes noise containers an earlier run left behind
// when it was killed before its cleanup; a run going on beside this one
// keeps its own, which are younger.
func removeStaleNoise() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := docker.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", noiseLabel+"=true")})
	if err != nil {
		return
	}
	for _, c := range list.Items {
		if time.Since(time.Unix(c.Created, 0)) > staleNoiseAge {
			_, _ = docker.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
		}
	}
}
