package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/packages"
	"github.com/mcp-hangar/hangar/internal/packages/pkgtest"
)

// Images of the package runtime tests (make images builds them): the test
// registry, and the runtime images made of this host's Debian packages
// (Node.js and npm; Python with pip and venv, no uv).
const (
	pkgRegistryImage      = "mcp-hangar/pkgregistry:dev"
	pkgRuntimeNodeImage   = "mcp-hangar/pkgruntime-node:dev"
	pkgRuntimePythonImage = "mcp-hangar/pkgruntime-python:dev"
)

// pkgRegistryLabel marks the test registries a run starts.
const pkgRegistryLabel = "io.mcp-hangar.test.pkgregistry"

// pkgRegistry is a running mcp-hangar/pkgregistry:dev container on the
// default bridge, reached at its address from the host and from the
// containers the gateway builds in.
type pkgRegistry struct {
	ID   string
	Base string // http://IP:8080
	NPM  string // the npm registry's URL
	PyPI string // the simple index's URL
}

// startPkgRegistry runs a test registry until the test ends.
func startPkgRegistry(t testing.TB) *pkgRegistry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	created, err := docker.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: pkgRegistryImage, Labels: map[string]string{pkgRegistryLabel: suitePrefix}},
		HostConfig: &container.HostConfig{NetworkMode: "bridge", AutoRemove: false},
	})
	if err != nil {
		t.Fatalf("create the test registry: %v", err)
	}
	r := &pkgRegistry{ID: created.ID}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_, _ = docker.ContainerRemove(ctx, r.ID, client.ContainerRemoveOptions{Force: true})
	})
	if _, err := docker.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start the test registry: %v", err)
	}
	info, err := docker.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ep := info.Container.NetworkSettings.Networks["bridge"]
	if ep == nil || !ep.IPAddress.IsValid() {
		t.Fatalf("the test registry has no address on the bridge")
	}
	r.Base = "http://" + ep.IPAddress.String() + ":8080"
	r.NPM, r.PyPI = r.Base+"/npm", r.Base+"/pypi/simple/"
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(r.Base + "/-/hits")
		if err == nil {
			resp.Body.Close()
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("the test registry never answered: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// post sends a release to one of the registry's /-/ endpoints.
func (r *pkgRegistry) post(t testing.TB, what string, rel pkgtest.Release) {
	t.Helper()
	b, _ := json.Marshal(rel)
	resp, err := http.Post(r.Base+"/-/"+what, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s %+v: %v", what, rel, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("%s %+v: %s", what, rel, resp.Status)
	}
}

func (r *pkgRegistry) publish(t testing.TB, rel pkgtest.Release) { r.post(t, "publish", rel) }
func (r *pkgRegistry) tamper(t testing.TB, rel pkgtest.Release)  { r.post(t, "tamper", rel) }

// hits is how many package requests the registry served.
func (r *pkgRegistry) hits(t testing.TB) int {
	t.Helper()
	resp, err := http.Get(r.Base + "/-/hits")
	if err != nil {
		t.Fatalf("hits: %v", err)
	}
	defer resp.Body.Close()
	var n int
	if _, err := fmt.Fscan(resp.Body, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// stop takes the registry down (the container stays, stopped).
func (r *pkgRegistry) stop(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	timeout := 0
	if _, err := docker.ContainerStop(ctx, r.ID, client.ContainerStopOptions{Timeout: &timeout}); err != nil {
		t.Fatalf("stop the test registry: %v", err)
	}
}

// runtimesYAML is a runtimes: section running runners on the test runtime
// images and their installs against the test registry.
func (r *pkgRegistry) runtimesYAML(runners ...string) string {
	var b strings.Builder
	b.WriteString("runtimes:\n")
	for _, runner := range runners {
		image := pkgRuntimePythonImage
		if runner == "npx" {
			image = pkgRuntimeNodeImage
		}
		fmt.Fprintf(&b, "  %s:\n    image: %s\n    env:\n", runner, image)
		if runner == "npx" {
			fmt.Fprintf(&b, "      npm_config_registry: %q\n", r.NPM)
		} else {
			fmt.Fprintf(&b, "      PIP_INDEX_URL: %q\n", r.PyPI)
		}
		b.WriteString("      HANGAR_IT_RUNTIME_ENV: from-the-runtime\n")
	}
	return b.String()
}

// packageImages lists the package images of instance owner (its managed
// images carrying a package label).
func packageImages(t testing.TB, owner string) map[string]map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	list, err := docker.ImageList(ctx, client.ImageListOptions{Filters: make(client.Filters).Add("label",
		dockerrt.LabelManaged+"=true", dockerrt.LabelOwner+"="+owner, packages.LabelPackageType)})
	if err != nil {
		t.Fatalf("list images: %v", err)
	}
	out := map[string]map[string]string{}
	for _, im := range list.Items {
		ref := im.ID
		if len(im.RepoTags) > 0 {
			ref = im.RepoTags[0]
		}
		out[ref] = im.Labels
	}
	return out
}

// removePackageImages removes what a test's gateway built, whatever the
// test did (the gateway removes them at uninstall; a failed test may not
// get there).
func removePackageImages(t testing.TB, owner string) {
	t.Helper()
	for ref := range packageImages(t, owner) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_, _ = docker.ImageRemove(ctx, ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
		cancel()
	}
}

// buildContainers lists the package build containers of owner.
func buildContainers(t testing.TB, owner string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	list, err := docker.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label",
		dockerrt.LabelOwner+"="+owner, dockerrt.LabelRole+"="+dockerrt.RolePackageBuild)})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}
