package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/manage"
	"github.com/mcp-hangar/hangar/internal/packages"
	"github.com/mcp-hangar/hangar/internal/packages/pkgtest"
)

// Figure 16: npm and PyPI servers (issue 39). For each: its first start
// (mcp/install resolves, fetches, checks and builds its image; then the
// first call starts it) and its cold start from the built image
// (hangar_start, COLD → READY), next to the same server baked into an
// image by hand (a Dockerfile FROM the same runtime image, docker build)
// and cold-started the same way. The packages come from the test
// registry (mcp-hangar/pkgregistry:dev) in a container; the runtime images
// are the tests' (Debian's Node.js and npm; Python with pip in a venv).

const (
	pkgRegistryImage = "mcp-hangar/pkgregistry:dev"
	pkgNodeImage     = "mcp-hangar/pkgruntime-node:dev"
	pkgPythonImage   = "mcp-hangar/pkgruntime-python:dev"
	// targetPackageCold: a package server's cold start from its built
	// image within 1.3× the hand-made image's.
	targetPackageCold = 1.3
)

// PackagesResult is figure 16.
type PackagesResult struct {
	NPM, PyPI PackageFigures
}

// PackageFigures are one ecosystem's measures.
type PackageFigures struct {
	First    Summary // mcp/install of a new name + its first call
	Cold     Summary // hangar_start from the built image
	HandCold Summary // hangar_start of the hand-made image
	// HandBuild is the docker build of the hand-made image (once).
	HandBuild time.Duration
}

// Packages measures figure 16.
func (b *Bench) Packages(ctx context.Context) (*PackagesResult, error) {
	for _, img := range []string{pkgRegistryImage, pkgNodeImage, pkgPythonImage} {
		ictx, cancel := context.WithTimeout(ctx, dockerTimeout)
		_, err := b.docker.ImageInspect(ictx, img)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("image %s missing (make images): %w", img, err)
		}
	}
	regBase, stopReg, err := b.startPkgRegistry(ctx)
	if err != nil {
		return nil, err
	}
	defer stopReg()
	npmReg, pypiIndex := regBase+"/npm", regBase+"/pypi/simple/"

	res := &PackagesResult{}
	handNPM := "mcp-hangar/bench-hand-npm:" + b.runID
	handPy := "mcp-hangar/bench-hand-pypi:" + b.runID
	defer b.removeImages(handNPM, handPy)
	if res.NPM.HandBuild, err = b.handBuild(ctx, handNPM, regBase+"/npm/-/files/mcp-server-1.0.0.tgz", "package.tgz", fmt.Sprintf(`FROM %s
COPY package.tgz /tmp/package.tgz
RUN npm install --global --prefix /opt/app --ignore-scripts --no-audit --no-fund --registry=%s /tmp/package.tgz && rm /tmp/package.tgz
USER 65534:65534
ENTRYPOINT ["/opt/app/bin/%s"]
`, pkgNodeImage, npmReg, pkgtest.NPMBin)); err != nil {
		return nil, err
	}
	whl := strings.ReplaceAll(pkgtest.PyPIServer, "-", "_") + "-1.0.0-py3-none-any.whl"
	host := strings.TrimPrefix(strings.Split(regBase, ":")[1], "//")
	if res.PyPI.HandBuild, err = b.handBuild(ctx, handPy, regBase+"/pypi/files/"+whl, whl, fmt.Sprintf(`FROM %s
COPY %s /tmp/
RUN python3 -m venv /opt/app && /opt/app/bin/pip install --no-cache-dir --index-url %s --trusted-host %s /tmp/%s && rm /tmp/%s
USER 65534:65534
ENTRYPOINT ["/opt/app/bin/%s"]
`, pkgPythonImage, whl, pypiIndex, host, whl, whl, pkgtest.PyPIServer)); err != nil {
		return nil, err
	}

	// No catalog prefetch: it would start npm-pkg and py-pkg at boot,
	// building the very images the first starts below must build.
	yaml := configYAML([]srvDef{{"npm-hand", handNPM}, {"py-hand", handPy}}, fmt.Sprintf(`front_door: {prefetch: false}
runtimes:
  npx: {image: %s, env: {npm_config_registry: %q}}
  uvx: {image: %s, env: {PIP_INDEX_URL: %q}}
`, pkgNodeImage, npmReg, pkgPythonImage, pypiIndex)) + `  npm-pkg:
    mode: docker
    package: {type: npm, name: "` + pkgtest.NPMServer + `"}
    idle_ttl_s: 3600
  py-pkg:
    mode: docker
    package: {type: pypi, name: ` + pkgtest.PyPIServer + `}
    idle_ttl_s: 3600
`
	g, err := b.StartGateway("packages", yaml)
	if err != nil {
		return nil, err
	}
	defer stopGateway(g, b.log)
	c, err := Dial(ctx, g.MCPURL)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	mc := &manage.Client{URL: g.MCPURL, HTTP: ownHTTPClient()}

	// First start: install + first call, under a new name each time (so
	// that nothing is pinned or built), uninstalled after (its image goes).
	firsts := b.n(2, 1)
	for _, eco := range []struct {
		line []string
		out  *Summary
	}{
		{[]string{"npx", "-y", pkgtest.NPMServer}, &res.NPM.First},
		{[]string{"uvx", pkgtest.PyPIServer}, &res.PyPI.First},
	} {
		var ds []time.Duration
		for i := range firsts {
			name := fmt.Sprintf("first-%s-%d", eco.line[0], i)
			b.log.Info("figure 16: first start", "server", name, "sample", i+1, "of", firsts)
			entry, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{name: map[string]any{"command": eco.line[0], "args": eco.line[1:]}}})
			t := time.Now()
			var ir manage.InstallResult
			if err := mc.Call(ctx, manage.MethodInstall, map[string]any{"config_json": string(entry)}, &ir); err != nil {
				return nil, fmt.Errorf("install %s: %w", name, err)
			}
			if ir.Status != "ok" {
				raw, _ := json.Marshal(ir)
				return nil, fmt.Errorf("install %s: %s", name, raw)
			}
			if err := checkBatch(c.Call(ctx, "hangar_call", oneCall(name, "hello", nil))); err != nil {
				return nil, fmt.Errorf("first call of %s: %w", name, err)
			}
			ds = append(ds, time.Since(t))
			if err := mc.Call(ctx, manage.MethodUninstall, map[string]any{"name": name}, nil); err != nil {
				return nil, fmt.Errorf("uninstall %s: %w", name, err)
			}
			if err := b.WaitGone(ctx, 20*time.Second, g.Instance, dockerrt.LabelServer+"="+name); err != nil {
				return nil, err
			}
		}
		*eco.out = Summarize(ds)
	}

	// Cold starts, the package's and the hand-made image's alternating;
	// one untimed start of each first (for npm-pkg and py-pkg it builds).
	samples := b.n(10, 3)
	for _, pair := range []struct {
		pkg, hand     string
		cold, handOut *Summary
	}{
		{"npm-pkg", "npm-hand", &res.NPM.Cold, &res.NPM.HandCold},
		{"py-pkg", "py-hand", &res.PyPI.Cold, &res.PyPI.HandCold},
	} {
		for _, id := range []string{pair.pkg, pair.hand} {
			if _, err := b.gatewayColdStart(ctx, g, c, id); err != nil {
				return nil, fmt.Errorf("first start of %s: %w", id, err)
			}
		}
		var pkg, hand []time.Duration
		for i := range samples {
			b.log.Info("figure 16: cold start", "servers", pair.pkg+", "+pair.hand, "sample", i+1, "of", samples)
			order := []string{pair.pkg, pair.hand}
			if i%2 == 1 {
				order = []string{pair.hand, pair.pkg}
			}
			for _, id := range order {
				d, err := b.gatewayColdStart(ctx, g, c, id)
				if err != nil {
					return nil, err
				}
				if id == pair.pkg {
					pkg = append(pkg, d)
				} else {
					hand = append(hand, d)
				}
			}
		}
		*pair.cold, *pair.handOut = Summarize(pkg), Summarize(hand)
	}
	// The package images go with the gateway's instance (the bench's
	// cleanup checks containers; images are removed here).
	b.removeOwnerImages(g.Instance)
	return res, nil
}

// startPkgRegistry runs the test registry on the default bridge and
// returns its URL (reachable from the host and the build containers).
func (b *Bench) startPkgRegistry(ctx context.Context) (string, func(), error) {
	cctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	created, err := b.docker.ContainerCreate(cctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: pkgRegistryImage, Labels: map[string]string{"io.mcp-hangar.bench": b.runID}},
		HostConfig: &container.HostConfig{NetworkMode: "bridge", AutoRemove: true},
	})
	if err != nil {
		return "", nil, fmt.Errorf("test registry: %w", err)
	}
	stop := func() {
		rctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
		defer cancel()
		_, _ = b.docker.ContainerRemove(rctx, created.ID, client.ContainerRemoveOptions{Force: true})
	}
	if _, err := b.docker.ContainerStart(cctx, created.ID, client.ContainerStartOptions{}); err != nil {
		stop()
		return "", nil, fmt.Errorf("test registry: %w", err)
	}
	info, err := b.docker.ContainerInspect(cctx, created.ID, client.ContainerInspectOptions{})
	if err != nil {
		stop()
		return "", nil, err
	}
	ep := info.Container.NetworkSettings.Networks["bridge"]
	if ep == nil || !ep.IPAddress.IsValid() {
		stop()
		return "", nil, fmt.Errorf("test registry has no address on the bridge")
	}
	base := "http://" + ep.IPAddress.String() + ":8080"
	for deadline := time.Now().Add(15 * time.Second); ; {
		resp, err := http.Get(base + "/-/hits")
		if err == nil {
			resp.Body.Close()
			return base, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("test registry never answered: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// handBuild bakes a server into tag by hand: its file from url, and a
// Dockerfile, built with docker build (the classic builder, as a
// Dockerfile on this engine builds).
func (b *Bench) handBuild(ctx context.Context, tag, url, file, dockerfile string) (time.Duration, error) {
	dir := filepath.Join(b.tmp, "hand-"+strings.NewReplacer("/", "-", ":", "-").Replace(tag))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("fetch %s: %v %s", url, err, resp.Status)
	}
	if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		return 0, err
	}
	t := time.Now()
	cmd := exec.CommandContext(ctx, "docker", "build", "-q", "-t", tag, dir)
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("docker build %s: %v: %s", tag, err, out)
	}
	return time.Since(t), nil
}

func (b *Bench) removeImages(refs ...string) {
	for _, ref := range refs {
		ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
		if _, err := b.docker.ImageRemove(ctx, ref, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil {
			b.log.Warn("remove image", "image", ref, "error", err)
		}
		cancel()
	}
}

// removeOwnerImages removes the package images instance built.
func (b *Bench) removeOwnerImages(instance string) {
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	list, err := b.docker.ImageList(ctx, client.ImageListOptions{Filters: make(client.Filters).Add("label",
		dockerrt.LabelManaged+"=true", dockerrt.LabelOwner+"="+instance, packages.LabelPackageType)})
	if err != nil {
		b.log.Warn("list package images", "error", err)
		return
	}
	for _, im := range list.Items {
		for _, tag := range im.RepoTags {
			if tag != "<none>:<none>" {
				b.removeImages(tag)
			}
		}
	}
}

// packagesTargets is figure 16's row of the targets table.
func (r *Report) packagesTargets(t *table) {
	x := r.Packages
	name := fmt.Sprintf("npm and PyPI servers: cold start from the built image within %.1f× the hand-made image's", targetPackageCold)
	if x == nil {
		t.add(name, "not measured", "—")
		return
	}
	rn, rp := Ratio(x.NPM.Cold.P50, x.NPM.HandCold.P50), Ratio(x.PyPI.Cold.P50, x.PyPI.HandCold.P50)
	t.add(name, fmt.Sprintf("npm %s vs %s (%s); PyPI %s vs %s (%s)",
		FormatDuration(x.NPM.Cold.P50), FormatDuration(x.NPM.HandCold.P50), FormatRatio(rn),
		FormatDuration(x.PyPI.Cold.P50), FormatDuration(x.PyPI.HandCold.P50), FormatRatio(rp)),
		verdict(rn <= targetPackageCold && rp <= targetPackageCold))
}

func (r *Report) figure16(b *strings.Builder) {
	b.WriteString("## 16. npm and PyPI servers: first start and cold start\n\n")
	if r.failed(16, b) {
		return
	}
	x := r.Packages
	if x == nil {
		b.WriteString("Not run.\n\n")
		return
	}
	t := &table{head: []string{"Measure", "N", "Median", "p99", "Max", "Hand-made image", "Its median", "Ratio (median)"}}
	for _, e := range []struct {
		name string
		f    PackageFigures
	}{{"npm", x.NPM}, {"PyPI", x.PyPI}} {
		t.add(e.name+": first start (mcp/install: resolve, fetch, check, build the image; then the first call)", strconv.Itoa(e.f.First.N),
			FormatDuration(e.f.First.P50), FormatDuration(e.f.First.P99), FormatDuration(e.f.First.Max),
			"docker build of it (once)", FormatDuration(e.f.HandBuild), FormatRatio(Ratio(e.f.First.P50, e.f.HandBuild)))
		t.add(e.name+": cold start from the built image (hangar_start)", strconv.Itoa(e.f.Cold.N),
			FormatDuration(e.f.Cold.P50), FormatDuration(e.f.Cold.P99), FormatDuration(e.f.Cold.Max),
			"hangar_start of the hand-made image", FormatDuration(e.f.HandCold.P50), FormatRatio(Ratio(e.f.Cold.P50, e.f.HandCold.P50)))
	}
	b.WriteString(t.String())
	b.WriteString("\nThe test registry (`mcp-hangar/pkgregistry:dev`) serves the tests' tiny MCP servers in plain Node and plain Python, each with one " +
		"dependency the install fetches from it; the runtime images are the tests' (Debian's Node.js and npm; Python with pip in a venv). " +
		"The hand-made images are a Dockerfile FROM the same runtime image that installs the same file the same way, built with `docker build`. " +
		"A first start installs a new name each time (nothing pinned, nothing built), so it includes resolving the version, fetching and checking " +
		"the file, the install in its own container and the commit of the image; on this engine's storage driver (fuse-overlayfs) a commit walks every " +
		"file of the runtime image, which is most of it. Cold starts alternate between the two servers of a pair.\n\n")
}
