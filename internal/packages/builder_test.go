package packages

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/packages/pkgtest"
	"github.com/mcp-hangar/hangar/internal/store"
)

// fakeEngine keeps images in memory; Commit makes one from its spec.
type fakeEngine struct {
	mu      sync.Mutex
	images  map[string]dockerrt.ImageInfo
	commits []dockerrt.CommitSpec
	removed []string
	fail    error // Commit's error, when set
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{images: map[string]dockerrt.ImageInfo{
		"sha256:base": {ID: "sha256:base", Env: []string{"PATH=/usr/bin:/bin"}},
	}}
}

func (e *fakeEngine) Commit(_ context.Context, spec dockerrt.CommitSpec) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.commits = append(e.commits, spec)
	if e.fail != nil {
		return "", e.fail
	}
	id := fmt.Sprintf("sha256:img%d", len(e.commits))
	e.images[spec.Tag] = dockerrt.ImageInfo{ID: id, Labels: maps.Clone(spec.Labels)}
	return id, nil
}

func (e *fakeEngine) RemoveImage(_ context.Context, ref string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.images, ref)
	e.removed = append(e.removed, ref)
	return nil
}

func (e *fakeEngine) InspectImage(_ context.Context, ref string) (dockerrt.ImageInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if info, ok := e.images[ref]; ok {
		return info, nil
	}
	return dockerrt.ImageInfo{}, fmt.Errorf("image %s: %w", ref, cerrdefs.ErrNotFound)
}

func (e *fakeEngine) Images(_ context.Context, _ ...string) ([]dockerrt.ImageInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []dockerrt.ImageInfo
	for ref, info := range e.images {
		if info.Labels[LabelPackageType] != "" {
			info.Tags = []string{ref}
			out = append(out, info)
		}
	}
	return out, nil
}

func (e *fakeEngine) builds() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.commits)
}

// fakeRuntimes has the runtime images named in it, as sha256:base.
type fakeRuntimes map[string]bool

func (f fakeRuntimes) Ensure(_ context.Context, req dockerrt.ImageRequest) (dockerrt.Resolved, error) {
	if !f[req.Image] {
		return dockerrt.Resolved{}, &dockerrt.ImageError{Kind: dockerrt.ErrPullFailed, Image: req.Image, Registry: "docker.io", Err: errors.New("no such image")}
	}
	return dockerrt.Resolved{ID: "sha256:base"}, nil
}

// memPins is store.PackagePins in memory.
type memPins struct {
	mu   sync.Mutex
	pins map[string]store.PackagePin
}

func (m *memPins) PackagePin(_ context.Context, server string) (store.PackagePin, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pins[server]
	if !ok {
		return store.PackagePin{}, store.ErrNotFound
	}
	return p, nil
}

func (m *memPins) PackagePins(context.Context) ([]store.PackagePin, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Collect(maps.Values(m.pins)), nil
}

func (m *memPins) PutPackagePin(_ context.Context, p store.PackagePin) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pins == nil {
		m.pins = map[string]store.PackagePin{}
	}
	m.pins[p.Server] = p
	return nil
}

func (m *memPins) DeletePackagePin(_ context.Context, server string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pins, server)
	return nil
}

// testRegistry serves pkgtest's registry; down makes it drop every
// connection, as a registry that cannot be reached.
type testRegistry struct {
	*pkgtest.Registry
	URL  string
	down atomic.Bool
}

func startRegistry(t *testing.T) *testRegistry {
	t.Helper()
	r := &testRegistry{Registry: pkgtest.New()}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.down.Load() {
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					_ = c.Close()
					return
				}
			}
		}
		r.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func testBuilder(t *testing.T, reg *testRegistry, engine *fakeEngine, pins store.PackagePins) *Builder {
	t.Helper()
	settings := Settings{Images: config.Default().Images, Runtimes: map[string]config.Runtime{
		"npx": {Image: "node:test", Network: "bridge", Env: map[string]string{"npm_config_registry": reg.URL + "/npm", "MIRROR_TOKEN": "t0k'en"}},
		"uvx": {Image: "python:test", Network: "bridge", Env: map[string]string{"UV_INDEX_URL": reg.URL + "/pypi/simple/"}},
	}}
	b := New(engine, fakeRuntimes{"node:test": true, "python:test": true}, pins, "inst", func() Settings { return settings }, nil)
	// No retries against a registry that is down on purpose.
	b.HTTP = &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{}).DialContext}}
	return b
}

func pkgServer(id string, p config.Package) *config.Server {
	s := config.NewServer(id, config.ModeDocker, config.Default().Execution)
	s.Package, s.Origin = &p, config.OriginInstalled
	return s
}

// TestEnsurePinsOnceAndNeedsNoRegistry: a range resolves once, builds
// once, and is pinned; a later release changes nothing, and with the pin
// and its image a start asks no registry; Update takes the new release and
// releases the old image.
func TestEnsurePinsOnceAndNeedsNoRegistry(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	reg := startRegistry(t)
	engine, pins := newFakeEngine(), &memPins{}
	b := testBuilder(t, reg, engine, pins)
	s := pkgServer("everything", config.Package{Type: "npm", Name: pkgtest.NPMServer, Version: "^1", Runner: "npx"})

	var steps []string
	progress := call.Progress{Token: "tok", Send: func(p map[string]any) { steps = append(steps, p["message"].(string)) }}
	img, err := b.Ensure(ctx, s, progress)
	if err != nil {
		t.Fatal(err)
	}
	if !img.Built || img.Version != "1.0.0" || !strings.HasPrefix(img.Integrity, "sha512-") || engine.builds() != 1 || len(steps) != 3 {
		t.Fatalf("first Ensure = %+v, %d builds, steps %q", img, engine.builds(), steps)
	}
	spec := engine.commits[0]
	if spec.Base != "sha256:base" || spec.Network != "" || spec.User != "65534:65534" ||
		!slices.Equal(spec.Entrypoint, []string{"/opt/hangar/npm/bin/" + pkgtest.NPMBin}) ||
		spec.Labels[LabelPackageVersion] != "1.0.0" || spec.Labels[LabelPackageDigest] != img.Integrity || spec.Labels[LabelPackageRuntime] != "node:test" {
		t.Errorf("commit spec %+v", spec)
	}
	for _, e := range spec.Env {
		if strings.Contains(e, "MIRROR_TOKEN") || strings.Contains(e, "registry") {
			t.Errorf("the runtime's env %q is in the image's config", e)
		}
	}
	var envFile, script string
	for _, f := range spec.Files {
		switch f.Path {
		case installEnv:
			envFile = string(f.Data)
			if f.Mode != 0o600 || f.UID != installUID {
				t.Errorf("env file mode %o uid %d", f.Mode, f.UID)
			}
		case installSh:
			script = string(f.Data)
		}
	}
	if !strings.Contains(envFile, `export MIRROR_TOKEN='t0k'\''en'`) || !strings.Contains(envFile, "export npm_config_registry='"+reg.URL+"/npm'") {
		t.Errorf("env file:\n%s", envFile)
	}
	if !strings.Contains(script, "--ignore-scripts") || !strings.Contains(script, "rm -f "+installEnv) {
		t.Errorf("script:\n%s", script)
	}
	if p, _ := pins.PackagePin(ctx, "everything"); p.Version != "1.0.0" || p.Spec != "^1" || p.Image != img.Ref || p.Integrity != img.Integrity {
		t.Errorf("pin %+v", p)
	}
	if run := RunSpec(s, img); run.Image != img.Ref || run.Env["MIRROR_TOKEN"] != "t0k'en" || run.Env["HOME"] != "/tmp" || s.Image != "" {
		t.Errorf("RunSpec = image %q env %v (the spec's image %q)", run.Image, run.Env, s.Image)
	}

	// A new release in range: nothing changes until an admin asks.
	if err := reg.Publish(pkgtest.Release{Type: "npm", Name: pkgtest.NPMServer, Version: "1.1.0", Tools: []string{"hello", "new"}, Command: pkgtest.NPMBin}); err != nil {
		t.Fatal(err)
	}
	if again, err := b.Ensure(ctx, s, call.Progress{}); err != nil || again.Version != "1.0.0" || again.Built || engine.builds() != 1 {
		t.Fatalf("Ensure after a release = %+v, %v, %d builds", again, err, engine.builds())
	}
	// A new gateway (nothing in memory) with the registry down, and the
	// runtime image gone, starts from the pin and the image.
	reg.down.Store(true)
	hits := reg.Hits()
	cold := testBuilder(t, reg, engine, pins)
	cold.Images = fakeRuntimes{}
	if _, ok := cold.Ready(s); ok {
		t.Error("Ready before any Ensure")
	}
	if got, err := cold.Ensure(ctx, s, call.Progress{}); err != nil || got.Ref != img.Ref || got.Version != "1.0.0" {
		t.Fatalf("cold Ensure with the registry down = %+v, %v", got, err)
	}
	if got, ok := cold.Ready(s); !ok || got.Ref != img.Ref {
		t.Errorf("Ready after Ensure = %+v, %v", got, ok)
	}
	cold.Images = fakeRuntimes{"node:test": true, "python:test": true}
	if reg.Hits() != hits {
		t.Errorf("the registry was asked %d times for a pinned, built package", reg.Hits()-hits)
	}
	// Update needs the registry, and keeps the pin when it fails.
	if _, _, err := cold.Update(ctx, s, call.Progress{}); !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), reg.URL) {
		t.Errorf("Update with the registry down: %v", err)
	}
	if p, _ := pins.PackagePin(ctx, "everything"); p.Version != "1.0.0" {
		t.Errorf("pin after a failed update: %+v", p)
	}
	reg.down.Store(false)
	from, upd, err := cold.Update(ctx, s, call.Progress{})
	if err != nil || from != "1.0.0" || upd.Version != "1.1.0" || !upd.Built || engine.builds() != 2 {
		t.Fatalf("Update = %q → %+v, %v (%d builds)", from, upd, err, engine.builds())
	}
	if p, _ := pins.PackagePin(ctx, "everything"); p.Version != "1.1.0" || p.Image != upd.Ref {
		t.Errorf("pin after update: %+v", p)
	}
	if !slices.Equal(engine.removed, []string{img.Ref}) {
		t.Errorf("removed %v, want the old image %s", engine.removed, img.Ref)
	}
	// A spec that asks for something else is resolved anew.
	s2 := pkgServer("everything", config.Package{Type: "npm", Name: pkgtest.NPMServer, Version: "1.0.0", Runner: "npx"})
	if got, err := cold.Ensure(ctx, s2, call.Progress{}); err != nil || got.Version != "1.0.0" {
		t.Errorf("Ensure of 1.0.0 = %+v, %v", got, err)
	}
}

// TestEnsureRefuses: each failure names the package and its cause and
// builds nothing, pins nothing.
func TestEnsureRefuses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	reg := startRegistry(t)
	for _, rel := range []pkgtest.Release{
		{Type: "npm", Name: "@hangar-test/bad", Version: "1.0.0", Tools: []string{"x"}},
		{Type: "pypi", Name: "hangar-bad", Version: "2.0.0", Tools: []string{"x"}},
		{Type: "npm", Name: "@hangar-test/multi", Version: "1.0.0", Tools: []string{"x"}, Command: "one"},
	} {
		if err := reg.Publish(rel); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Tamper("npm", "@hangar-test/bad", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	if err := reg.Tamper("pypi", "hangar-bad", "2.0.0"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pkg  config.Package
		want error
		says []string
	}{
		{"tampered npm", config.Package{Type: "npm", Name: "@hangar-test/bad", Runner: "npx"}, ErrTampered,
			[]string{"@hangar-test/bad@1.0.0", "sha512", "does not match the digest the registry published"}},
		{"tampered wheel", config.Package{Type: "pypi", Name: "hangar-bad", Runner: "uvx"}, ErrTampered,
			[]string{"hangar-bad@2.0.0", "sha256"}},
		{"unknown npm", config.Package{Type: "npm", Name: "@hangar-test/none", Runner: "npx"}, ErrNotFound,
			[]string{"@hangar-test/none", "is not in the registry " + reg.URL + "/npm"}},
		{"unknown pypi", config.Package{Type: "pypi", Name: "hangar-none", Runner: "uvx"}, ErrNotFound,
			[]string{"hangar-none", "is not in the index"}},
		{"no such npm version", config.Package{Type: "npm", Name: pkgtest.NPMServer, Version: "^3", Runner: "npx"}, ErrNoVersion,
			[]string{pkgtest.NPMServer, `no version matches "^3" (it has 1.0.0)`}},
		{"no such pypi version", config.Package{Type: "pypi", Name: pkgtest.PyPIServer, Version: "==9.9", Runner: "uvx"}, ErrNoVersion,
			[]string{pkgtest.PyPIServer, "no version matches"}},
		{"no such command", config.Package{Type: "npm", Name: pkgtest.NPMServer, Runner: "npx", Command: "nope"}, ErrUnusable,
			[]string{"has no command nope (it has " + pkgtest.NPMBin + ")"}},
		{"unreachable", config.Package{Type: "npm", Name: pkgtest.NPMServer, Runner: "npx", Registry: "http://127.0.0.1:1/npm"}, ErrUnreachable,
			[]string{"npm registry http://127.0.0.1:1/npm", "registry unreachable"}},
	} {
		engine, pins := newFakeEngine(), &memPins{}
		b := testBuilder(t, reg, engine, pins)
		_, err := b.Ensure(ctx, pkgServer("s", tc.pkg), call.Progress{})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
			continue
		}
		for _, s := range tc.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %q", tc.name, err, s)
			}
		}
		if engine.builds() != 0 || len(pins.pins) != 0 {
			t.Errorf("%s: %d builds, pins %v", tc.name, engine.builds(), pins.pins)
		}
	}

	// No runtime image: named, with the runner.
	engine := newFakeEngine()
	b := testBuilder(t, reg, engine, &memPins{})
	b.Images = fakeRuntimes{}
	if _, err := b.Ensure(ctx, pkgServer("s", config.Package{Type: "npm", Name: pkgtest.NPMServer, Runner: "npx"}), call.Progress{}); err == nil ||
		!strings.Contains(err.Error(), "runner npx's runtime image node:test") || !strings.Contains(err.Error(), pkgtest.NPMServer) {
		t.Errorf("no runtime image: %v", err)
	}
	// A failed install: the build's error, nothing pinned.
	engine.fail = &dockerrt.BuildError{Code: 1, Output: "npm error 404 hangar-greeting"}
	pins := &memPins{}
	b = testBuilder(t, reg, engine, pins)
	if _, err := b.Ensure(ctx, pkgServer("s", config.Package{Type: "npm", Name: pkgtest.NPMServer, Runner: "npx"}), call.Progress{}); err == nil ||
		!strings.Contains(err.Error(), "installing npm package "+pkgtest.NPMServer+"@1.0.0 on node:test failed: exit 1: npm error 404") || len(pins.pins) != 0 {
		t.Errorf("failed install: %v (pins %v)", err, pins.pins)
	}
}

// TestEnsureChecksThePin: a pinned version whose image is gone is fetched
// again and must match the pinned digest, even when the registry now
// publishes another one for it.
func TestEnsureChecksThePin(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	reg := startRegistry(t)
	engine, pins := newFakeEngine(), &memPins{}
	b := testBuilder(t, reg, engine, pins)
	s := pkgServer("py", config.Package{Type: "pypi", Name: pkgtest.PyPIServer, Runner: "uvx"})
	img, err := b.Ensure(ctx, s, call.Progress{})
	if err != nil || !strings.HasPrefix(img.Integrity, "sha256:") {
		t.Fatalf("Ensure = %+v, %v", img, err)
	}
	if want := []string{"/opt/hangar/venv/bin/hangar-test-mcp-server"}; !slices.Equal(engine.commits[0].Entrypoint, want) {
		t.Errorf("entrypoint %q, want %q", engine.commits[0].Entrypoint, want)
	}
	script := ""
	for _, f := range engine.commits[0].Files {
		if f.Path == installSh {
			script = string(f.Data)
		}
	}
	if !strings.Contains(script, "--only-binary=:all:") || !strings.Contains(script, "uv pip install") || !strings.Contains(script, "-m venv") {
		t.Errorf("script:\n%s", script)
	}
	// The image goes (pruned); the registry re-publishes 1.0.0 differently.
	_ = engine.RemoveImage(ctx, img.Ref)
	if err := reg.Publish(pkgtest.Release{Type: "pypi", Name: pkgtest.PyPIServer, Version: "1.0.0", Tools: []string{"other"}}); err != nil {
		t.Fatal(err)
	}
	fresh := testBuilder(t, reg, engine, pins)
	_, err = fresh.Ensure(ctx, s, call.Progress{})
	if !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), "pinned when it was first installed") || engine.builds() != 1 {
		t.Errorf("a changed pinned release: %v (%d builds)", err, engine.builds())
	}
}

// TestReleaseKeepsSharedImages: servers running the same release share its
// image, which goes with the last of them.
func TestReleaseKeepsSharedImages(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	reg := startRegistry(t)
	engine, pins := newFakeEngine(), &memPins{}
	b := testBuilder(t, reg, engine, pins)
	a := pkgServer("a", config.Package{Type: "npm", Name: pkgtest.NPMServer, Runner: "npx"})
	c := pkgServer("c", config.Package{Type: "npm", Name: pkgtest.NPMServer, Runner: "npx"})
	hot := pkgServer("hot", config.Package{Type: "npm", Name: pkgtest.NPMServer, Runner: "npx"})
	hot.Origin = config.OriginRegistry
	var refs []string
	for _, s := range []*config.Server{a, c, hot} {
		img, err := b.Ensure(ctx, s, call.Progress{})
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, img.Ref)
	}
	if engine.builds() != 1 || refs[0] != refs[1] || refs[1] != refs[2] {
		t.Fatalf("%d builds for one release, images %v", engine.builds(), refs)
	}
	if _, ok := pins.pins["hot"]; ok {
		t.Error("a hot-loaded server's pin is in the store")
	}
	b.Release(ctx, a)
	b.Release(ctx, hot)
	if len(engine.removed) != 0 {
		t.Fatalf("removed %v while c uses it", engine.removed)
	}
	b.Release(ctx, c)
	if !slices.Equal(engine.removed, refs[:1]) || len(pins.pins) != 0 {
		t.Errorf("after the last release: removed %v, pins %v", engine.removed, pins.pins)
	}

	// Sweep removes the package images no pin names, and only those.
	img, err := b.Ensure(ctx, a, call.Progress{})
	if err != nil {
		t.Fatal(err)
	}
	engine.images["hangar-pkg/npm-orphan:1.0.0-abc"] = dockerrt.ImageInfo{ID: "sha256:orphan", Labels: map[string]string{LabelPackageType: "npm"}}
	engine.removed = nil
	if n, err := b.Sweep(ctx); err != nil || n != 1 || !slices.Equal(engine.removed, []string{"hangar-pkg/npm-orphan:1.0.0-abc"}) {
		t.Errorf("Sweep = %d, %v; removed %v (kept %s)", n, err, engine.removed, img.Ref)
	}
}
