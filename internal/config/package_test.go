package config

import (
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestServerPackage: a docker server's package: key, every field and its
// defaults, and each way it can be wrong, named by key path.
func TestServerPackage(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`
mcp_servers:
  everything:
    mode: docker
    package: {type: npm, name: "@modelcontextprotocol/server-everything", version: "^2025.1"}
    args: [stdio]
  fetch:
    mode: docker
    package:
      type: pypi
      name: mcp-server-fetch
      version: ">=2025.1,<2026"
      runner: python
      module: mcp_server_fetch
      allow_scripts: true
      registry: http://mirror:8080/simple/
    egress: {allow: ["example.com:443"]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	ev, fe := cfg.Servers["everything"], cfg.Servers["fetch"]
	if want := (Package{Type: PackageNPM, Name: "@modelcontextprotocol/server-everything", Version: "^2025.1", Runner: "npx"}); ev.Package == nil || *ev.Package != want {
		t.Errorf("everything.package = %+v, want %+v", ev.Package, want)
	}
	if ev.Image != "" || !slices.Equal(ev.Args, []string{"stdio"}) || !ev.ReadOnly || ev.User == "" {
		t.Errorf("everything keeps the docker defaults: image %q args %v read_only %v user %q", ev.Image, ev.Args, ev.ReadOnly, ev.User)
	}
	want := Package{Type: PackagePyPI, Name: "mcp-server-fetch", Version: ">=2025.1,<2026", Runner: "python",
		Module: "mcp_server_fetch", AllowScripts: true, Registry: "http://mirror:8080/simple/"}
	if fe.Package == nil || *fe.Package != want {
		t.Errorf("fetch.package = %+v, want %+v", fe.Package, want)
	}

	for _, tt := range []struct {
		pkg  string
		more string
		want []string
	}{
		{`{name: x}`, "", []string{"mcp_servers.s.package.type: required (npm or pypi)"}},
		{`{type: gem, name: x}`, "", []string{`mcp_servers.s.package.type: must be one of npm, pypi (got "gem")`}},
		{`{type: npm}`, "", []string{"mcp_servers.s.package.name: required"}},
		{`{type: npm, name: "Not A Name"}`, "", []string{`mcp_servers.s.package.name: not an npm package name (got "Not A Name")`}},
		{`{type: pypi, name: "-x"}`, "", []string{`mcp_servers.s.package.name: not a PyPI project name (got "-x")`}},
		{`{type: npm, name: x, version: "^^1"}`, "", []string{`mcp_servers.s.package.version: not an npm version or range (got "^^1")`}},
		{`{type: pypi, name: x, version: "=>1"}`, "", []string{`mcp_servers.s.package.version: not a PyPI version or version specifier such as ">=1.2,<2" (got "=>1")`}},
		{`{type: npm, name: x, runner: uvx}`, "", []string{`mcp_servers.s.package.runner: runner "uvx" does not run npm packages (want npx)`}},
		{`{type: npm, name: x, module: m}`, "", []string{"mcp_servers.s.package.module: only PyPI packages run a module (python -m)"}},
		{`{type: pypi, name: x, module: m, command: c}`, "", []string{"mcp_servers.s.package.module: cannot be used together with command"}},
		{`{type: pypi, name: x, command: "a b"}`, "", []string{`mcp_servers.s.package.command: must be the name of an executable the package installs (got "a b")`}},
		{`{type: npm, name: x, registry: "ftp://x"}`, "", []string{`mcp_servers.s.package.registry: must be an http(s) URL (got "ftp://x")`}},
		{`{type: npm, name: x, scripts: true}`, "", []string{"mcp_servers.s.package.scripts: unknown key"}},
		{`{type: npm, name: x}`, "    image: a:b\n", []string{"mcp_servers.s.package: cannot be used together with image: a server runs an image or a package"}},
		{`{type: npm, name: x}`, "    pin_digest: true\n", []string{"mcp_servers.s.pin_digest: not allowed with package: the gateway builds the server's image itself (its runtime image follows images.pull)"}},
		{`{type: npm, name: x}`, "    mode: remote\n", nil},
	} {
		yaml := "mcp_servers:\n  s:\n    mode: docker\n    package: " + tt.pkg + "\n" + tt.more
		if tt.want == nil {
			yaml = "mcp_servers:\n  s:\n    mode: remote\n    endpoint: http://h/mcp\n    package: " + tt.pkg + "\n"
			tt.want = []string{"mcp_servers.s.package: not allowed for mode remote"}
		}
		_, err := Parse([]byte(yaml), nil)
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s %s: err %v, want %q", tt.pkg, tt.more, err, tt.want)
			continue
		}
		var got []string
		for _, p := range ve.Problems {
			got = append(got, p.String())
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s %s:\n got %q\nwant %q", tt.pkg, tt.more, got, tt.want)
		}
	}
}

// TestRuntimeDefaults: the package runners need no runtimes: entry; an
// entry without an image takes the runner's default and keeps its env.
func TestRuntimeDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("runtimes:\n  npx: {env: {npm_config_registry: 'http://mirror/'}}\n  bunx: {image: oven/bun:1}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		runner string
		want   Runtime
		ok     bool
	}{
		{"npx", Runtime{Image: DefaultNodeImage, Network: "bridge", Env: map[string]string{"npm_config_registry": "http://mirror/"}}, true},
		{"node", Runtime{Image: "node:22-alpine", Network: "bridge"}, true},
		{"uvx", Runtime{Image: "ghcr.io/astral-sh/uv:python3.12-bookworm-slim", Network: "bridge"}, true},
		{"uv", Runtime{Image: DefaultPythonImage, Network: "bridge"}, true},
		{"pipx", Runtime{Image: DefaultPythonImage, Network: "bridge"}, true},
		{"python3", Runtime{Image: DefaultPythonImage, Network: "bridge"}, true},
		{"bunx", Runtime{Image: "oven/bun:1", Network: "bridge"}, true},
		{"deno", Runtime{Network: "bridge"}, false},
	} {
		got, ok := RuntimeFor(cfg.Runtimes, tt.runner)
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("RuntimeFor(%s) = %+v, %v; want %+v, %v", tt.runner, got, ok, tt.want, tt.ok)
		}
	}
}

// TestRegistryPackageTypes: registry.package_types orders and limits the
// package types hot-loading runs.
func TestRegistryPackageTypes(t *testing.T) {
	t.Parallel()
	def, err := Parse([]byte("{}\n"), nil)
	if err != nil || !slices.Equal(def.Registry.PackageTypes, []string{"oci", "npm", "pypi"}) {
		t.Fatalf("default package_types = %v (%v)", def.Registry.PackageTypes, err)
	}
	cfg, err := Parse([]byte("registry: {package_types: [pypi, OCI]}\n"), nil)
	if err != nil || !slices.Equal(cfg.Registry.PackageTypes, []string{"pypi", "oci"}) {
		t.Fatalf("package_types = %v (%v)", cfg.Registry.PackageTypes, err)
	}
	for yaml, want := range map[string]string{
		"registry: {package_types: [npm, nuget]}\n": `registry.package_types[1]: must be one of oci, npm, pypi (got "nuget")`,
		"registry: {package_types: [npm, npm]}\n":   `registry.package_types[1]: "npm" is listed twice`,
		"registry: {package_types: []}\n":           "registry.package_types: must list at least one of oci, npm, pypi",
	} {
		_, err := Parse([]byte(yaml), nil)
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].String() != want {
			t.Errorf("%s: %v, want %q", yaml, err, want)
		}
	}
}

// TestDocsRuntimesSample: the YAML of docs/runtimes.md parses, and means
// what the page says.
func TestDocsRuntimesSample(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../../docs/runtimes.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(page), "```yaml\n")
	sample, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/runtimes.md has no yaml sample")
	}
	cfg, err := Parse([]byte(sample), nil)
	if err != nil {
		t.Fatalf("the sample does not parse: %v", err)
	}
	fetch := cfg.Servers["fetch"].Package
	want := Package{Type: PackagePyPI, Name: "mcp-server-fetch", Version: ">=2025.1", Runner: "uvx"}
	if fetch == nil || *fetch != want || cfg.Servers["fetch"].Egress == nil {
		t.Errorf("fetch = %+v, want %+v with egress", fetch, want)
	}
	if ev := cfg.Servers["everything"].Package; ev == nil || ev.String() != "npm:@modelcontextprotocol/server-everything@^2025.1" {
		t.Errorf("everything = %+v", ev)
	}
	if rt, _ := RuntimeFor(cfg.Runtimes, "npx"); rt.Image != DefaultNodeImage || rt.Env["npm_config_registry"] == "" {
		t.Errorf("npx runtime = %+v", rt)
	}
	if !slices.Equal(cfg.Registry.PackageTypes, []string{"oci", "npm", "pypi"}) {
		t.Errorf("package_types = %v", cfg.Registry.PackageTypes)
	}
	for _, def := range []string{DefaultNodeImage, DefaultPythonImage} {
		if !strings.Contains(string(page), "`"+def+"`") {
			t.Errorf("the page does not name the default runtime image %s", def)
		}
	}
}
