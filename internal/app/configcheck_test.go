package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
)

func TestHostVisible(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                  string
		daemon, engine, local string
		inContainer           bool
		visible               bool
		reason                string
	}{
		{"engine on this host", "unix:///var/run/docker.sock", "vm", "vm", false, true, ""},
		{"engine in this container (dind)", "unix:///var/run/docker.sock", "vm", "vm", true, true, ""},
		{"container holding the host's socket", "unix:///var/run/docker.sock", "host1", "0123abcd", true, false, `runs on host "host1"`},
		{"remote engine", "tcp://10.0.0.5:2376", "vm", "vm", false, false, "on another machine"},
		{"ssh engine", "ssh://me@box", "", "vm", false, false, "on another machine"},
		{"engine down, local socket, on a host", "unix:///var/run/docker.sock", "", "vm", false, true, ""},
		{"engine down, in a container", "unix:///var/run/docker.sock", "", "abc", true, false, "runs in a container"},
		{"no client, on a host", "", "", "vm", false, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := hostVisible(tt.daemon, tt.engine, tt.local, tt.inContainer)
			if (got == "") != tt.visible || !strings.Contains(got, tt.reason) {
				t.Errorf("hostVisible = %q, want visible %v with reason containing %q", got, tt.visible, tt.reason)
			}
		})
	}
}

// TestCheckClientConfig: checking a client config says what hangar import
// would do with each line: the images it builds for npx and uvx lines
// (from the gateway config's runtimes, else the defaults), the images and
// endpoints the others use, and the refusals.
func TestCheckClientConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "claude_desktop_config.json")
	if err := os.WriteFile(file, []byte(`{"mcpServers": {
		"everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]},
		"fetch": {"command": "uvx", "args": ["mcp-server-fetch"]},
		"calc": {"command": "docker", "args": ["run", "-i", "--rm", "mcp-hangar/math:dev"]},
		"docs": {"url": "https://user:pw@docs.example.com/mcp"}
	}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if !IsClientConfig(file) || IsClientConfig(filepath.Join("..", "..", "config.example.yaml")) {
		t.Fatal("IsClientConfig does not tell a client config from a gateway config")
	}
	var out strings.Builder
	if err := CheckClientConfig(file, nil, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"everything: will build: npm package @modelcontextprotocol/server-everything@latest on node:22-alpine (runtimes.npx)",
		"fetch: will build: pypi package mcp-server-fetch@latest on ghcr.io/astral-sh/uv:python3.12-bookworm-slim (runtimes.uvx)",
		"calc: runs image mcp-hangar/math:dev",
		"docs: connects to https://docs.example.com/mcp",
		"ok (4 MCP servers)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	gw, err := config.Parse([]byte("runtimes: {npx: {image: mirror.local/node:22}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(`{"mcpServers": {"a": {"command": "npx", "args": ["pkg@^2"]}, "b": {"command": "deno", "args": ["run", "x"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = CheckClientConfig(file, gw, &out)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 MCP servers would be refused") ||
		!strings.Contains(out.String(), "a: will build: npm package pkg@^2 on mirror.local/node:22 (runtimes.npx)") ||
		!strings.Contains(out.String(), "b: refused") || !strings.Contains(out.String(), "runtime_unavailable") {
		t.Errorf("err %v, output:\n%s", err, out.String())
	}
}

// TestPackagePlan: config check names every image the config's package
// servers will be built into.
func TestPackagePlan(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(`
runtimes: {uvx: {image: mirror.local/uv:1}}
mcp_servers:
  fetch: {mode: docker, package: {type: pypi, name: mcp-server-fetch, version: ">=2025"}}
  math: {mode: docker, image: mcp-hangar/math:dev}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := packagePlan(cfg)
	want := `will build: mcp_servers.fetch: pypi package mcp-server-fetch@>=2025 on mirror.local/uv:1 (runtimes.uvx), pinned to the version it resolves to at its first start`
	if len(got) != 1 || got[0] != want {
		t.Errorf("plan = %q, want %q", got, want)
	}
}
