package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/moby/moby/client"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-hangar/hangar/internal/app"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/manage"
	"github.com/mcp-hangar/hangar/internal/packages"
	"github.com/mcp-hangar/hangar/internal/packages/pkgtest"
)

const pkgSecret = "pkg-SECRET-91f3"

// TestPackageServers: npm and PyPI servers end to end, installed from a
// real-looking Claude Desktop config with `hangar import` against the test
// registry (in a container, its packages' dependencies fetched by the
// install), run from images built once and pinned:
//
//   - hangar config check says which images the import (and the config's
//     own package server) will build; the import installs every line;
//   - the images are labelled (server, package, version, digest);
//     the servers answer mcp-go's and the go-sdk's clients on both protocol
//     versions, get their secrets and their runtime's env, and run as
//     hardened containers (non-root, read-only root, no capabilities, no
//     network, limits);
//   - an unknown package, a missing version, a tampered tarball, an
//     unreachable registry, a runner without a runtime image and a failing
//     install are each the install's diagnostic naming the package and the
//     cause, leaving no container and no image; a config package server
//     that cannot be built is a start_failed with the reason;
//   - a new upstream release changes nothing until mcp/server/restart with
//     update, whose new tool then goes through pinning (quarantine, approve);
//   - with the registry down, a new gateway on the same store cold-starts
//     both from their images;
//   - uninstall removes the images.
func TestPackageServers(t *testing.T) {
	t.Parallel()
	reg := startPkgRegistry(t)
	reg.publish(t, pkgtest.Release{Type: "npm", Name: "@hangar-test/tampered", Version: "1.0.0", Tools: []string{"x"}})
	reg.tamper(t, pkgtest.Release{Type: "npm", Name: "@hangar-test/tampered", Version: "1.0.0"})
	reg.publish(t, pkgtest.Release{Type: "npm", Name: "@hangar-test/broken", Version: "1.0.0", Tools: []string{"x"}, Requires: []string{"hangar-missing"}})
	remoteURL := remoteServer(t)
	instance := newInstance(t)
	t.Cleanup(func() { removePackageImages(t, instance) })
	dataDir := t.TempDir()
	cfgPath := writeConfig(t, reg.runtimesYAML("npx", "uvx")+`  pipx:
    image: mcp-hangar/no-such-runtime:dev
images: {pull: never}
mcp_servers:
  cfgpkg:
    mode: docker
    package: {type: npm, name: "@hangar-test/not-published"}
    env: {npm_config_registry: "`+reg.NPM+`"}
`)
	// cfgpkg's registry is the runtime's (npx: the test registry).
	client := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	if err := os.WriteFile(client, []byte(`{"mcpServers": {
	  "npm-srv": {"command": "npx", "args": ["-y", "@hangar-test/mcp-server@^1"], "env": {"SECRET_TOKEN": "`+pkgSecret+`"}},
	  "py-srv": {"command": "uvx", "args": ["hangar-test-mcp-server"], "env": {"SECRET_TOKEN": "`+pkgSecret+`"}},
	  "calc": {"command": "docker", "args": ["run", "-i", "--rm", "mcp-hangar/math:dev"]},
	  "docs": {"url": "`+remoteURL+`", "headers": {"Authorization": "Bearer `+remoteSecret+`"}}
	}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(url string, args ...string) (string, error) {
		cmd := exec.Command(hangarBin, args...)
		cmd.Env = append(os.Environ(), "HANGAR_URL="+url, "HANGAR_TOKEN=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	var first struct{ npm, py string } // the images of the first run
	t.Run("install, run, refuse, update", func(t *testing.T) {
		out, err := run("", "config", "check", "--config", cfgPath, client)
		for _, want := range []string{
			"npm-srv: will build: npm package @hangar-test/mcp-server@^1 on " + pkgRuntimeNodeImage + " (runtimes.npx)",
			"py-srv: will build: pypi package hangar-test-mcp-server@latest on " + pkgRuntimePythonImage + " (runtimes.uvx)",
			"calc: runs image mcp-hangar/math:dev", "docs: connects to", "ok (4 MCP servers)",
		} {
			if err != nil || !strings.Contains(out, want) {
				t.Errorf("config check of the client config (%v) lacks %q:\n%s", err, want, out)
			}
		}
		out, err = run("", "config", "check", cfgPath)
		if err != nil || !strings.Contains(out, "will build: mcp_servers.cfgpkg: npm package @hangar-test/not-published@latest on "+pkgRuntimeNodeImage) {
			t.Errorf("config check of the gateway config (%v):\n%s", err, out)
		}

		g := startGatewayFile(t, cfgPath, app.Options{Instance: instance, DataDir: dataDir})
		began := time.Now()
		out, err = run(g.MCPURL, "import", client)
		if err != nil || !strings.Contains(out, "status: ok") {
			t.Fatalf("import (%v):\n%s", err, out)
		}
		t.Logf("import with two builds took %s", time.Since(began).Round(time.Millisecond))
		for _, want := range []string{"npm @hangar-test/mcp-server was pinned to 1.0.0 (sha512-", "pypi hangar-test-mcp-server was pinned to 1.0.0 (sha256:"} {
			if !strings.Contains(out, want) {
				t.Errorf("import output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, pkgSecret) {
			t.Errorf("import printed the secret:\n%s", out)
		}
		images := packageImages(t, instance)
		for ref, l := range images {
			switch l[dockerrt.LabelServer] {
			case "npm-srv":
				first.npm = ref
			case "py-srv":
				first.py = ref
			}
			if l[packages.LabelPackageVersion] != "1.0.0" || l[packages.LabelPackageDigest] == "" || l[dockerrt.LabelManaged] != "true" {
				t.Errorf("image %s labelled %v", ref, l)
			}
		}
		if len(images) != 2 || first.npm == "" || first.py == "" || images[first.npm][packages.LabelPackageName] != pkgtest.NPMServer {
			t.Fatalf("package images after the import: %v", images)
		}

		s := connect(t, g.MCPURL)
		for _, srv := range []string{"npm-srv", "py-srv"} {
			if r := s.callOne(t, srv, "hello", map[string]any{"name": "x"}); !strings.Contains(jsonOf(r), "hello from hangar-greeting 1.0.0") ||
				!strings.Contains(jsonOf(r), "@1.0.0") {
				t.Errorf("%s hello = %v", srv, r)
			}
			if r := s.callOne(t, srv, "env", map[string]any{"name": "SECRET_TOKEN"}); !strings.Contains(jsonOf(r), pkgSecret) {
				t.Errorf("%s did not get its secret: %v", srv, r)
			}
			if r := s.callOne(t, srv, "env", map[string]any{"name": "HANGAR_IT_RUNTIME_ENV"}); !strings.Contains(jsonOf(r), "from-the-runtime") {
				t.Errorf("%s did not get its runtime's env: %v", srv, r)
			}
			// Its own user, HOME on the tmpfs, its code out of its reach.
			r := s.callOne(t, srv, "whoami", nil)
			if who, _ := r["result"].(map[string]any); who["uid"] != float64(65534) || who["home"] != "/tmp" || who["code_writable"] != false {
				t.Errorf("%s whoami = %v", srv, r)
			}
			checkHardened(t, instance, srv, map[string]string{"npm-srv": first.npm, "py-srv": first.py}[srv])
		}
		if r := s.callOne(t, "calc", "add", map[string]any{"a": 2, "b": 3}); !strings.Contains(jsonOf(r), "5") {
			t.Errorf("calc add = %v", r)
		}
		if r := s.callOne(t, "docs", "hello", nil); !strings.Contains(jsonOf(r), "hello from remote") {
			t.Errorf("docs hello = %v", r)
		}
		// Both clients, both protocol versions.
		for _, v := range protocols {
			ss := dialSDK(t, g.MCPURL, v, nil)
			if text := sdkCallOne(t, ss, "py-srv", "hello"); !strings.Contains(text, "hangar-test-mcp-server@1.0.0") {
				t.Errorf("go-sdk %s: py-srv hello = %q", v, text)
			}
			ms := connect(t, g.MCPURL, mcpclientVersion(v)...)
			if r := ms.callOne(t, "npm-srv", "hello", nil); !strings.Contains(jsonOf(r), pkgtest.NPMServer+"@1.0.0") {
				t.Errorf("mcp-go %s: npm-srv hello = %v", v, r)
			}
		}

		// Each way a package cannot be installed.
		res, raw := mustMgmt(t, g.MCPURL, manage.MethodInstall, map[string]any{"config_json": `{"mcpServers": {
		  "unknown": {"command": "npx", "args": ["-y", "@hangar-test/nope"]},
		  "noversion": {"command": "uvx", "args": ["hangar-test-mcp-server@9.9.9"]},
		  "tampered": {"command": "npx", "args": ["@hangar-test/tampered"]},
		  "unreachable": {"command": "npx", "args": ["--registry=http://127.0.0.1:9/npm", "@hangar-test/mcp-server"]},
		  "noimage": {"command": "pipx", "args": ["run", "hangar-test-mcp-server"]},
		  "broken": {"command": "npx", "args": ["@hangar-test/broken"]}
		}}`})
		if res["status"] != "validation_error" {
			t.Fatalf("install of packages that cannot be installed: %s", raw)
		}
		wants := map[string][]string{
			"unknown":     {"@hangar-test/nope", "is not in the registry " + reg.NPM},
			"noversion":   {"hangar-test-mcp-server", `no version matches "9.9.9"`},
			"tampered":    {"@hangar-test/tampered@1.0.0", "digest mismatch", "sha512", "does not match the digest the registry published"},
			"unreachable": {"npm registry http://127.0.0.1:9/npm", "registry unreachable"},
			"noimage":     {"hangar-test-mcp-server", "runner pipx's runtime image mcp-hangar/no-such-runtime:dev"},
			"broken":      {"installing npm package @hangar-test/broken@1.0.0 on " + pkgRuntimeNodeImage + " failed: exit", "hangar-missing"},
		}
		for _, x := range res["servers"].([]any) {
			o := x.(map[string]any)
			name := o["name"].(string)
			msg := ""
			for _, d := range o["diagnostics"].([]any) {
				if d := d.(map[string]any); d["code"] == manage.CodePackageUnavailable && d["level"] == "error" {
					msg = d["message"].(string)
				}
			}
			for _, w := range wants[name] {
				if o["status"] != "validation_error" || !strings.Contains(msg, w) {
					t.Errorf("%s: status %v, package_unavailable %q lacks %q", name, o["status"], msg, w)
				}
			}
			if n := countContainers(t, instance, name); n != 0 {
				t.Errorf("%s: %d containers left", name, n)
			}
		}
		if n := buildContainers(t, instance); n != 0 {
			t.Errorf("%d build containers left", n)
		}
		if got := packageImages(t, instance); len(got) != 2 {
			t.Errorf("package images after the refusals: %v", got)
		}
		// A config server whose package cannot be built fails its start.
		if _, isErr, text := s.call(t, "hangar_start", map[string]any{"mcp_server": "cfgpkg"}); !isErr ||
			!strings.HasPrefix(text, "start_failed: cfgpkg") || !strings.Contains(text, "@hangar-test/not-published is not in the registry") {
			t.Errorf("hangar_start cfgpkg = %q (error %v), want start_failed with the reason", text, isErr)
		}

		// A new release in the range: nothing changes until an admin asks.
		reg.publish(t, pkgtest.Release{Type: "npm", Name: pkgtest.NPMServer, Version: "1.1.0", Tools: []string{"hello", "env", "whoami", "added"},
			Deps: true, Command: pkgtest.NPMBin})
		restart := func(params map[string]any) map[string]any {
			t.Helper()
			res, raw := mustMgmt(t, g.MCPURL, manage.MethodRestart, params)
			if res["accepted"] != true {
				t.Fatalf("restart %v: %s", params, raw)
			}
			return res
		}
		restart(map[string]any{"name": "npm-srv"})
		if r := s.callOne(t, "npm-srv", "hello", nil); !strings.Contains(jsonOf(r), pkgtest.NPMServer+"@1.0.0") {
			t.Errorf("npm-srv hello after a plain restart = %v, want 1.0.0 still", r)
		}
		// hangar servers restart --update: mcp/server/restart with update.
		out, err = run(g.MCPURL, "servers", "restart", "npm-srv", "--update")
		if err != nil || !strings.Contains(out, `"from": "1.0.0"`) || !strings.Contains(out, `"to": "1.1.0"`) || !strings.Contains(out, `"accepted": true`) {
			t.Errorf("hangar servers restart npm-srv --update (%v):\n%s", err, out)
		}
		// Its new tool goes through the usual pinning: quarantined until
		// approved.
		var q map[string]any
		eventually(t, "the updated npm-srv to be quarantined for its new tool", func() bool {
			_, _, _, _ = s.callE(context.Background(), "hangar_call", one("npm-srv", "hello", nil))
			d := s.mustCall(t, "hangar_details", map[string]any{"mcp_server": "npm-srv"})
			q, _ = d["quarantine"].(map[string]any)
			return q != nil
		})
		if str(q, "reason") != "tool_schema_changed" || !strings.Contains(str(q, "detail"), `tool "added" added`) {
			t.Errorf("quarantine after the update = %v", q)
		}
		if a := s.mustCall(t, "hangar_approve", map[string]any{"mcp_server": "npm-srv"}); a["approved"] != true && str(a, "status") == "" {
			t.Errorf("hangar_approve = %v", a)
		}
		if r := s.callOne(t, "npm-srv", "added", nil); !strings.Contains(jsonOf(r), pkgtest.NPMServer+"@1.1.0") {
			t.Errorf("npm-srv added after approval = %v", r)
		}
		images = packageImages(t, instance)
		if _, old := images[first.npm]; old || len(images) != 2 {
			t.Errorf("images after the update: %v (the old %s should be gone)", images, first.npm)
		}
	})

	t.Run("cold start with the registry down", func(t *testing.T) {
		reg.stop(t)
		g := startGatewayFile(t, cfgPath, app.Options{Instance: instance, DataDir: dataDir})
		s := connect(t, g.MCPURL)
		if r := s.callOne(t, "npm-srv", "added", nil); !strings.Contains(jsonOf(r), pkgtest.NPMServer+"@1.1.0") {
			t.Errorf("npm-srv after a restart with the registry down = %v", r)
		}
		if r := s.callOne(t, "py-srv", "hello", nil); !strings.Contains(jsonOf(r), "hangar-test-mcp-server@1.0.0") {
			t.Errorf("py-srv after a restart with the registry down = %v", r)
		}
		for _, name := range []string{"npm-srv", "py-srv"} {
			if res, raw := mustMgmt(t, g.MCPURL, manage.MethodUninstall, map[string]any{"name": name}); res["removed"] != true {
				t.Errorf("uninstall %s: %s", name, raw)
			}
		}
		eventually(t, "the package images to go with their servers", func() bool { return len(packageImages(t, instance)) == 0 })
	})
}

// checkHardened: srv's container runs image as the server's user with a
// read-only root, no capabilities, no privileges to gain, no network and
// limits.
func checkHardened(t *testing.T, instance, srv, image string) {
	t.Helper()
	cs := containers(t, instance, srv)
	if len(cs) != 1 {
		t.Errorf("%s: %d containers", srv, len(cs))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	info, err := docker.ContainerInspect(ctx, cs[0].ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, h := info.Container.Config, info.Container.HostConfig
	if c.Image != image || c.User != "65534:65534" || !h.ReadonlyRootfs || !slices.Equal(h.CapDrop, []string{"ALL"}) ||
		string(h.NetworkMode) != "none" || !slices.Contains(h.SecurityOpt, "no-new-privileges:true") || h.Tmpfs["/tmp"] == "" ||
		h.Memory <= 0 || h.PidsLimit == nil || *h.PidsLimit <= 0 || h.Privileged {
		t.Errorf("%s runs unhardened: image %s user %q read-only %v caps %v network %s security %v tmpfs %v memory %d",
			srv, c.Image, c.User, h.ReadonlyRootfs, h.CapDrop, h.NetworkMode, h.SecurityOpt, h.Tmpfs, h.Memory)
	}
}

// sdkCallOne calls tool of server through hangar_call with the go-sdk
// client and returns the result's text.
func sdkCallOne(t *testing.T, s *sdk.ClientSession, server, tool string) string {
	t.Helper()
	res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "hangar_call", Arguments: one(server, tool, nil)})
	if err != nil {
		t.Fatalf("go-sdk hangar_call %s.%s: %v", server, tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Errorf("go-sdk hangar_call %s.%s: %s", server, tool, b.String())
	}
	return b.String()
}

// TestPackageHotLoad: hangar_load runs registry entries whose packages are
// npm or pypi, with no runtimes: in the config (the default runtime images,
// which this engine has as the test runtimes tagged under their names for
// the test), from each entry's registryBaseUrl, with its secrets; an entry
// with an oci package as well runs that; an unknown or tampered package is
// status failed naming the package and the cause; unload removes the image.
func TestPackageHotLoad(t *testing.T) {
	reg := startPkgRegistry(t)
	reg.publish(t, pkgtest.Release{Type: "npm", Name: "@hangar-test/tampered", Version: "1.0.0", Tools: []string{"x"}})
	reg.tamper(t, pkgtest.Release{Type: "npm", Name: "@hangar-test/tampered", Version: "1.0.0"})
	tagDefaultRuntimes(t)
	t.Setenv("HANGAR_SECRET_SECRET_TOKEN", pkgSecret)
	instance := newInstance(t)
	t.Cleanup(func() { removePackageImages(t, instance) })
	entry := func(name string, pkgs ...map[string]any) map[string]any {
		return map[string]any{"name": "io.github.hangar-test/" + name, "description": name, "version": "1.0.0", "packages": pkgs}
	}
	npmPkg := func(id string) map[string]any {
		return map[string]any{"registryType": "npm", "registryBaseUrl": reg.NPM, "identifier": id, "version": "^1", "runtimeHint": "npx",
			"runtimeArguments": []any{map[string]any{"type": "named", "name": "-y"}}, "transport": map[string]any{"type": "stdio"},
			"environmentVariables": []any{map[string]any{"name": "SECRET_TOKEN", "isRequired": true, "isSecret": true}}}
	}
	catalog, _ := json.Marshal([]any{
		entry("node-server", npmPkg(pkgtest.NPMServer)),
		entry("py-server", map[string]any{"registryType": "pypi", "registryBaseUrl": reg.Base + "/pypi", "identifier": pkgtest.PyPIServer,
			"transport": map[string]any{"type": "stdio"}}),
		entry("prefers-oci", npmPkg(pkgtest.NPMServer), map[string]any{"registryType": "oci", "identifier": "mcp-hangar/testkit:dev",
			"transport": map[string]any{"type": "stdio"}}),
		entry("missing", npmPkg("@hangar-test/nope")),
		entry("tampered", npmPkg("@hangar-test/tampered")),
	})
	catalogFile := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(catalogFile, catalog, 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGatewayAs(t, instance, fmt.Sprintf(`
registry:
  url: ""
  catalog_file: %q
  verified_namespaces: ["io.github.hangar-test/"]
`, catalogFile))
	s := connect(t, g.MCPURL)
	loaded := map[string]string{}
	for _, name := range []string{"node-server", "py-server", "prefers-oci"} {
		ans := s.mustCall(t, "hangar_load", map[string]any{"name": name})
		if str(ans, "status") != "loaded" {
			t.Fatalf("hangar_load %s = %v", name, ans)
		}
		loaded[name] = str(ans, "mcp_server")
	}
	if r := s.callOne(t, loaded["node-server"], "env", map[string]any{"name": "SECRET_TOKEN"}); !strings.Contains(jsonOf(r), pkgSecret) {
		t.Errorf("node-server did not get its secret: %v", r)
	}
	for _, v := range protocols {
		ss := dialSDK(t, g.MCPURL, v, nil)
		if text := sdkCallOne(t, ss, loaded["node-server"], "hello"); !strings.Contains(text, pkgtest.NPMServer+"@1.0.0: hello from hangar-greeting") {
			t.Errorf("go-sdk %s: node-server hello = %q", v, text)
		}
		ms := connect(t, g.MCPURL, mcpclientVersion(v)...)
		if r := ms.callOne(t, loaded["py-server"], "hello", nil); !strings.Contains(jsonOf(r), "hangar-test-mcp-server@1.0.0: hello from hangar-greeting") {
			t.Errorf("mcp-go %s: py-server hello = %v", v, r)
		}
	}
	if cs := containers(t, instance, loaded["prefers-oci"]); len(cs) != 1 || cs[0].Image != "mcp-hangar/testkit:dev" {
		t.Errorf("prefers-oci runs %s, want the oci image", describe(cs))
	}
	images := packageImages(t, instance)
	if len(images) != 2 {
		t.Fatalf("package images after two package loads: %v", images)
	}
	for ref, l := range images {
		if l[packages.LabelPackageRuntime] != "node:22-alpine" && l[packages.LabelPackageRuntime] != "ghcr.io/astral-sh/uv:python3.12-bookworm-slim" {
			t.Errorf("%s was built on %s, not a default runtime image", ref, l[packages.LabelPackageRuntime])
		}
	}
	for name, says := range map[string][]string{
		"missing":  {"npm package @hangar-test/nope@^1", "is not in the registry " + reg.NPM},
		"tampered": {"npm package @hangar-test/tampered@1.0.0", "digest mismatch"},
	} {
		ans := s.mustCall(t, "hangar_load", map[string]any{"name": name})
		for _, w := range says {
			if str(ans, "status") != "failed" || !strings.Contains(str(ans, "message"), w) {
				t.Errorf("hangar_load %s = %v, want failed saying %q", name, ans, w)
			}
		}
		if n := countContainers(t, instance, "nope") + countContainers(t, instance, name); n != 0 {
			t.Errorf("%s: %d containers left", name, n)
		}
	}
	if n := buildContainers(t, instance); n != 0 {
		t.Errorf("%d build containers left", n)
	}
	for _, name := range []string{"node-server", "py-server"} {
		if ans := s.mustCall(t, "hangar_unload", map[string]any{"mcp_server": loaded[name]}); str(ans, "status") != "unloaded" {
			t.Errorf("hangar_unload %s = %v", name, ans)
		}
	}
	if got := packageImages(t, instance); len(got) != 0 {
		t.Errorf("package images after unload: %v", got)
	}
}

// tagDefaultRuntimes tags the test runtime images under the default
// runtime images' names for the test (no public registry here), and
// removes the tags after; a test that needs them runs alone.
func tagDefaultRuntimes(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for src, dst := range map[string]string{pkgRuntimeNodeImage: "node:22-alpine", pkgRuntimePythonImage: "ghcr.io/astral-sh/uv:python3.12-bookworm-slim"} {
		if have, err := docker.ImageInspect(ctx, dst); err == nil {
			// A run killed before its cleanup left the tag: that one is ours.
			if own, err := docker.ImageInspect(ctx, src); err != nil || own.ID != have.ID {
				t.Fatalf("%s is on the engine already (and is not %s): the test will not replace it", dst, src)
			}
		}
		if _, err := docker.ImageTag(ctx, client.ImageTagOptions{Source: src, Target: dst}); err != nil {
			t.Fatalf("tag %s as %s: %v", src, dst, err)
		}
		t.Cleanup(func() { removeImageTag(t, dst) })
	}
}

// mcpclientVersion are the options of an mcp-go client speaking version.
func mcpclientVersion(version string) []mcpclient.ClientOption {
	if version == mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		return []mcpclient.ClientOption{mcpclient.WithProtocolVersion(version)}
	}
	return nil
}
