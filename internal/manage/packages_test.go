package manage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/clientconfig"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/manage"
	"github.com/mcp-hangar/hangar/internal/packages"
	"github.com/mcp-hangar/hangar/internal/store"
)

// fakePackages builds nothing: it answers per package name and records
// what management asked.
type fakePackages struct {
	mu       sync.Mutex
	fail     map[string]error // by package name
	version  string
	ensured  []string
	updated  []string
	released []string
	swept    int
}

func (f *fakePackages) Ensure(_ context.Context, s *config.Server, _ call.Progress) (packages.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ensured = append(f.ensured, s.ID)
	if err := f.fail[s.Package.Name]; err != nil {
		return packages.Image{}, err
	}
	return packages.Image{Ref: "hangar-pkg/" + s.ID + ":" + f.version, Version: f.version, Integrity: "sha512-x", Runtime: "node:22-alpine", Built: true}, nil
}

func (f *fakePackages) Update(_ context.Context, s *config.Server, _ call.Progress) (string, packages.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updated = append(f.updated, s.ID)
	if err := f.fail["update"]; err != nil {
		return "", packages.Image{}, err
	}
	from := f.version
	f.version = "1.1.0"
	return from, packages.Image{Ref: "hangar-pkg/" + s.ID + ":1.1.0", Version: "1.1.0"}, nil
}

func (f *fakePackages) Release(_ context.Context, s *config.Server) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, s.ID)
}

func (f *fakePackages) Pin(_ context.Context, s *config.Server) (store.PackagePin, bool) {
	return store.PackagePin{Server: s.ID, Version: f.version, Integrity: "sha512-x", Image: "hangar-pkg/" + s.ID}, true
}

func (f *fakePackages) Sweep(context.Context) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.swept++
	return 0, nil
}

// TestInstallBuildsPackages: an install builds its npm and PyPI entries
// first (saying what it pinned), refuses one that cannot be built with a
// package_unavailable diagnostic and stores nothing of it; restart with
// update updates and sweeps; uninstall releases the image.
func TestInstallBuildsPackages(t *testing.T) {
	t.Parallel()
	fp := &fakePackages{version: "1.0.0", fail: map[string]error{
		"@acme/nope": fmt.Errorf("%w: npm package @acme/nope is not in the registry https://registry.npmjs.org", packages.ErrNotFound),
	}}
	o := manage.Options{Install: clientconfig.Options{Execution: config.Default().Execution}, Packages: fp}
	h := newHarness(t, harnessOpts{opts: &o})
	r := h.install(`{"mcpServers": {
	  "ok": {"command": "npx", "args": ["-y", "@acme/ok"], "env": {"TOKEN": "s3cret"}},
	  "nope": {"command": "npx", "args": ["@acme/nope"], "env": {"TOKEN": "s3cret"}},
	  "plain": {"url": "https://mcp.example.com/mcp"}
	}}`, nil)
	if r.Result["status"] != "partial" {
		t.Fatalf("install: %s", r.Raw)
	}
	for _, x := range r.Result["servers"].([]any) {
		o := x.(map[string]any)
		var codes, msgs []string
		for _, d := range o["diagnostics"].([]any) {
			codes = append(codes, d.(map[string]any)["code"].(string))
			msgs = append(msgs, d.(map[string]any)["message"].(string))
		}
		switch o["name"] {
		case "ok":
			if o["status"] != "installed" || !slices.Contains(msgs, "npm @acme/ok was pinned to 1.0.0 (sha512-x) and built its image hangar-pkg/ok:1.0.0 on node:22-alpine") {
				t.Errorf("ok: %v %v", o["status"], msgs)
			}
		case "nope":
			if o["status"] != "validation_error" || !slices.Contains(codes, manage.CodePackageUnavailable) ||
				!strings.Contains(strings.Join(msgs, "|"), "@acme/nope is not in the registry") {
				t.Errorf("nope: %v %v %v", o["status"], codes, msgs)
			}
		case "plain":
			if o["status"] != "installed" {
				t.Errorf("plain: %v", o["status"])
			}
		}
	}
	if strings.Contains(r.Raw, "s3cret") {
		t.Errorf("the answer holds a secret: %s", r.Raw)
	}
	if !slices.Equal(fp.ensured, []string{"ok", "nope"}) {
		t.Errorf("built %v, want ok and nope (not the url entry)", fp.ensured)
	}
	list := h.rpc(manage.MethodList, nil)
	if it := item(t, list, "nope"); it != nil {
		t.Errorf("a package that could not be built is listed: %v", it)
	}
	tr := item(t, list, "ok")["transport"].(map[string]any)
	if pkg, _ := tr["package"].(map[string]any); pkg["name"] != "@acme/ok" || pkg["pinned_version"] != "1.0.0" || tr["image"] != "hangar-pkg/ok" {
		t.Errorf("ok transport = %v", tr)
	}

	res := h.rpc(manage.MethodRestart, map[string]any{"name": "ok", "update": true})
	if p, _ := res.Result["package"].(map[string]any); p["from"] != "1.0.0" || p["to"] != "1.1.0" || p["name"] != "@acme/ok" {
		t.Errorf("restart with update = %s", res.Raw)
	}
	if fp.swept != 1 || !slices.Equal(fp.updated, []string{"ok"}) {
		t.Errorf("updated %v, swept %d", fp.updated, fp.swept)
	}
	if e := h.rpcAs("", manage.MethodRestart, map[string]any{"name": "plain", "update": true}); e.Error == nil || !strings.Contains(e.Error.Message, "runs no npm or PyPI package") {
		t.Errorf("update of a remote server: %s", e.Raw)
	}
	fp.fail["update"] = errors.New("npm registry https://registry.npmjs.org: registry unreachable")
	if e := h.rpcAs("", manage.MethodRestart, map[string]any{"name": "ok", "update": true}); e.Error == nil || !strings.Contains(e.Error.Message, "registry unreachable") {
		t.Errorf("a failed update: %s", e.Raw)
	}
	h.rpc(manage.MethodUninstall, map[string]any{"name": "ok"})
	h.rpc(manage.MethodUninstall, map[string]any{"name": "plain"})
	if !slices.Equal(fp.released, []string{"ok"}) {
		t.Errorf("released %v, want ok", fp.released)
	}
}
