package packages

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
)

func TestParseLine(t *testing.T) {
	t.Parallel()
	npm := func(name, version, command string) *config.Package {
		return &config.Package{Type: "npm", Name: name, Version: version, Runner: "npx", Command: command}
	}
	pypi := func(runner, name, version, command, module string) *config.Package {
		return &config.Package{Type: "pypi", Name: name, Version: version, Runner: runner, Command: command, Module: module}
	}
	tests := []struct {
		runner string
		args   string
		pkg    *config.Package
		rest   []string
		file   string
		warns  int
		err    string // a substring of the error; "" for none
	}{
		{"npx", "-y @modelcontextprotocol/server-everything", npm("@modelcontextprotocol/server-everything", "", ""), nil, "", 0, ""},
		{"npx", "-y @scope/pkg@^1.2 --flag v", npm("@scope/pkg", "^1.2", ""), []string{"--flag", "v"}, "", 0, ""},
		{"npx", "pkg@latest", npm("pkg", "", ""), nil, "", 0, ""},
		{"npx", "--yes pkg@1.2.3 -- x", npm("pkg", "1.2.3", ""), []string{"--", "x"}, "", 0, ""},
		{"npx", "-q -- pkg x", npm("pkg", "", ""), []string{"x"}, "", 0, ""},
		{"npx", "-p pkg@2 tool a b", npm("pkg", "2", "tool"), []string{"a", "b"}, "", 0, ""},
		{"npx", "--package=@s/p tool", npm("@s/p", "", "tool"), nil, "", 0, ""},
		{"npx", "--registry=http://mirror/ pkg", &config.Package{Type: "npm", Name: "pkg", Runner: "npx", Registry: "http://mirror/"}, nil, "", 0, ""},
		{"npx", "-p a -p b c", nil, nil, "", 0, "more than one --package"},
		{"npx", "-p a", nil, nil, "", 0, "names no command"},
		{"npx", "-y", nil, nil, "", 0, "no package named"},
		{"npx", "-c 'echo hi'", nil, nil, "", 0, "runs a shell command"},
		{"npx", "--no-install pkg", nil, nil, "", 0, "installs the package"},
		{"npx", "--foo pkg", nil, nil, "", 0, "option --foo is not supported"},
		{"npx", "github:me/repo", nil, nil, "", 0, "not a registry package"},
		{"npx", "./local", nil, nil, "", 0, "not a registry package"},
		{"npx", "https://x/y.tgz", nil, nil, "", 0, "not a registry package"},
		{"npx", "@scope", nil, nil, "", 0, "not a package name"},
		{"npx", "Bad!Name", nil, nil, "", 0, "not an npm package name"},
		{"npx", "pkg@^^1", nil, nil, "", 0, "not an npm version or range"},
		{"npx", "-p", nil, nil, "", 0, "needs a value"},

		{"uvx", "mcp-server-fetch", pypi("uvx", "mcp-server-fetch", "", "mcp-server-fetch", ""), nil, "", 0, ""},
		{"uvx", "mcp-server-fetch@2025.4.7 --ignore-robots-txt", pypi("uvx", "mcp-server-fetch", "==2025.4.7", "mcp-server-fetch", ""), []string{"--ignore-robots-txt"}, "", 0, ""},
		{"uvx", "mcp-server-fetch@latest", pypi("uvx", "mcp-server-fetch", "", "mcp-server-fetch", ""), nil, "", 0, ""},
		{"uvx", "mcp-x==1.2", pypi("uvx", "mcp-x", "==1.2", "mcp-x", ""), nil, "", 0, ""},
		{"uvx", "--from mcp-x>=1,<2 serve --port 1", pypi("uvx", "mcp-x", ">=1,<2", "serve", ""), []string{"--port", "1"}, "", 0, ""},
		{"uvx", "--python 3.12 -q mcp-x", pypi("uvx", "mcp-x", "", "mcp-x", ""), nil, "", 1, ""},
		{"uvx", "--index-url http://mirror/simple mcp-x", &config.Package{Type: "pypi", Name: "mcp-x", Runner: "uvx", Command: "mcp-x", Registry: "http://mirror/simple"}, nil, "", 0, ""},
		{"uvx", "--with extra mcp-x", nil, nil, "", 0, "--with is not supported"},
		{"uvx", "--from mcp-x[all] mcp-x", nil, nil, "", 0, "extras ([all]) are not supported"},
		{"uvx", "--from git+https://x/y cmd", nil, nil, "", 0, "not a PyPI requirement"},
		{"uvx", "--from mcp-x cmd==1", nil, nil, "", 0, "must be a command"},
		{"uvx", "", nil, nil, "", 0, "no command named"},
		{"uvx", "mcp-x>=abc", nil, nil, "", 0, "not a PyPI version"},

		{"uv", "tool run mcp-x@1.0", pypi("uvx", "mcp-x", "==1.0", "mcp-x", ""), nil, "", 0, ""},
		{"uv", "run --with mcp-x mcp-x-server a", pypi("uv", "mcp-x", "", "mcp-x-server", ""), []string{"a"}, "", 0, ""},
		{"uv", "run --with mcp-time==2 python -m mcp_time --tz UTC", pypi("uv", "mcp-time", "==2", "", "mcp_time"), []string{"--tz", "UTC"}, "", 0, ""},
		{"uv", "run --with a --with b x", nil, nil, "", 0, "more than one --with"},
		{"uv", "run server.py", nil, nil, "", 0, "local project"},
		{"uv", "--directory /srv run server.py", nil, nil, "", 0, "runs a local project"},

		{"pipx", "run mcp-x", pypi("pipx", "mcp-x", "", "mcp-x", ""), nil, "", 0, ""},
		{"pipx", "run --spec mcp-x==3 mcp-x-cli --v", pypi("pipx", "mcp-x", "==3", "mcp-x-cli", ""), []string{"--v"}, "", 0, ""},
		{"pipx", "install mcp-x", nil, nil, "", 0, "only pipx run"},

		{"python", "-m mcp_server_time --local-timezone UTC", pypi("python", "mcp-server-time", "", "", "mcp_server_time"), []string{"--local-timezone", "UTC"}, "", 0, ""},
		{"python3", "-u -m pkg.sub", pypi("python3", "pkg", "", "", "pkg.sub"), nil, "", 0, ""},
		{"python3", "/srv/mcp/server.py --x", nil, []string{"/srv/mcp/server.py", "--x"}, "/srv/mcp/server.py", 0, ""},
		{"python", "-c 'print(1)'", nil, nil, "", 0, "inline code"},
		{"node", "--enable-source-maps /srv/app/index.js a", nil, []string{"--enable-source-maps", "/srv/app/index.js", "a"}, "/srv/app/index.js", 0, ""},
		{"node", "-e 1", nil, nil, "", 0, "inline code"},
		{"deno", "run x", nil, nil, "", 0, "not a package runner"},
	}
	for _, tt := range tests {
		var args []string
		if tt.args != "" {
			// Quoted words keep their spaces, as JSON args would.
			for i, part := range strings.Split(tt.args, "'") {
				if i%2 == 1 {
					args = append(args, part)
				} else {
					args = append(args, strings.Fields(part)...)
				}
			}
		}
		line, err := ParseLine(tt.runner, args)
		name := tt.runner + " " + tt.args
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err %v, want %q", name, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		switch {
		case (line.Package == nil) != (tt.pkg == nil):
			t.Errorf("%s: package %+v, want %+v", name, line.Package, tt.pkg)
		case tt.pkg != nil && *line.Package != *tt.pkg:
			t.Errorf("%s: package %+v, want %+v", name, *line.Package, *tt.pkg)
		}
		if !slices.Equal(line.Args, tt.rest) || line.File != tt.file || len(line.Warnings) != tt.warns {
			t.Errorf("%s: args %q file %q warnings %q; want %q %q %d", name, line.Args, line.File, line.Warnings, tt.rest, tt.file, tt.warns)
		}
	}
}

func TestNormalizePyPI(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"mcp_server_time": "mcp-server-time", "Foo.Bar__baz": "foo-bar-baz", "a-b": "a-b"} {
		if got := NormalizePyPI(in); got != want {
			t.Errorf("NormalizePyPI(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsRunner(t *testing.T) {
	t.Parallel()
	for _, r := range []string{"npx", "uvx", "uv", "pipx", "python", "python3", "node"} {
		if !IsRunner(r) {
			t.Errorf("IsRunner(%s) = false", r)
		}
	}
	for _, r := range []string{"bunx", "deno", "docker", "npm"} {
		if IsRunner(r) {
			t.Errorf("IsRunner(%s) = true", r)
		}
	}
}
