package clientconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/hostaccess"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    []string
		wantKey string
		wantErr string
	}{
		{"claude", `{"mcpServers": {"b": {"command":"x"}, "a": {"url":"http://h"}}}`, []string{"b", "a"}, "mcpServers", ""},
		{"vscode", `{"servers": {"gh": {"type":"http","url":"http://h"}}, "inputs": []}`, []string{"gh"}, "servers", ""},
		{"mcpServers wins", `{"servers": {"x": {}}, "mcpServers": {"y": {}}}`, []string{"y"}, "mcpServers", ""},
		{"empty object is fine", `{"mcpServers": {}}`, nil, "mcpServers", ""},
		{"not json", `{"mcpServers":`, nil, "", "not a JSON object"},
		{"array", `[1]`, nil, "", "not a JSON object"},
		{"no servers", `{"other": {}}`, nil, "", "no \"mcpServers\""},
		{"null servers", `{"mcpServers": null}`, nil, "", "no \"mcpServers\""},
		{"servers not object", `{"mcpServers": [1]}`, nil, "", "must be an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			names, entries, key, err := Parse(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(names, tt.want) || key != tt.wantKey || len(entries) != len(tt.want) {
				t.Fatalf("names %v key %q entries %d, want %v %q", names, key, len(entries), tt.want, tt.wantKey)
			}
		})
	}
}

func TestValidName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"github": true, "a": true, "A_b-9": true, strings.Repeat("x", 64): true,
		"": false, strings.Repeat("x", 65): false, "a.b": false, "a b": false, "a/b": false, "ü": false,
	} {
		if ValidName(name) != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, !want, want)
		}
	}
}

// mapped is what a mapping test expects of the spec.
type mapped struct {
	mode, image, endpoint, transport, network, user string
	args, command, volumes                          []string
	env, headers                                    map[string]string
	memory, cpus                                    int64
	// pkg is the package the spec runs; set, the spec must have no image
	// and no network of its own.
	pkg *config.Package
}

func TestMap(t *testing.T) {
	t.Parallel()
	binds, envs := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(binds, "proj", "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(binds, "proj", "package.json"), []byte(`{"name":"proj"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(envs, "app.env"), []byte("# comment\nFROM_FILE=1\nKEY=file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := Options{
		Runtimes: map[string]config.Runtime{"npx": {Image: "node:22", Network: "bridge"}},
		Access:   hostaccess.Policy{BindRoots: []string{binds}, EnvFileRoots: []string{envs}, Networks: []string{"mynet"}},
	}
	// BINDS and ENVS in an entry are the allowed roots.
	roots := strings.NewReplacer("BINDS", binds, "ENVS", envs)
	sub := opts
	sub.Runtimes = nil
	sub.AllowSubprocess = true
	none := opts
	none.Runtimes = nil

	tests := []struct {
		name  string
		entry string
		opts  Options
		want  *mapped // nil: refused
		codes []string
		// field is a field_path that must be among the diagnostics.
		field string
	}{
		{name: "docker run basic", entry: `{"command":"docker","args":["run","-i","--rm","mcp-hangar/math:dev"]}`,
			want: &mapped{mode: "docker", image: "mcp-hangar/math:dev", transport: "stdio"}},
		{name: "docker run flags", entry: `{"command":"docker","args":["run","-i","--rm","-e","A=1","--env=B=2","-e","TOKEN","-v","BINDS/data:/data:ro",
			"--network","mynet","--memory","256m","--cpus","0.5","--user","1000:1000","--read-only","img:1","serve","--port","3"],"env":{"TOKEN":"t"}}`,
			want: &mapped{mode: "docker", image: "img:1", network: "mynet", user: "1000:1000", args: []string{"serve", "--port", "3"},
				env: map[string]string{"A": "1", "B": "2", "TOKEN": "t"}, volumes: []string{"BINDS/data:/data:ro"}, memory: 256 << 20, cpus: 5e8}},
		{name: "docker combined -it warns", entry: `{"command":"docker","args":["run","-it","img"]}`,
			want: &mapped{mode: "docker", image: "img"}, codes: []string{CodeIgnored}},
		{name: "docker env-file", entry: `{"command":"docker","args":["run","--env-file","ENVS/app.env","-e","KEY=explicit","img"]}`,
			want: &mapped{mode: "docker", image: "img", env: map[string]string{"FROM_FILE": "1", "KEY": "explicit"}}},
		{name: "docker env-file missing", entry: `{"command":"docker","args":["run","--env-file","ENVS/nope","img"]}`,
			codes: []string{CodeWidensHardening}, field: "mcpServers.x.args[1]"},
		{name: "docker unknown flag warns", entry: `{"command":"docker","args":["run","--name","foo","-p","80:80","img"]}`,
			want: &mapped{mode: "docker", image: "img"}, codes: []string{CodeIgnored, CodeIgnored}},
		{name: "docker -- ends flags", entry: `{"command":"/usr/bin/docker","args":["run","--","-img"]}`,
			want: &mapped{mode: "docker", image: "-img"}},
		{name: "docker privileged", entry: `{"command":"docker","args":["run","--privileged","img"]}`,
			codes: []string{CodeWidensHardening}, field: "mcpServers.x.args[1]"},
		{name: "docker cap-add", entry: `{"command":"docker","args":["run","--cap-add","SYS_ADMIN","img"]}`,
			codes: []string{CodeWidensHardening}},
		{name: "docker cap-add inline", entry: `{"command":"docker","args":["run","--cap-add=NET_ADMIN","img"]}`,
			codes: []string{CodeWidensHardening}},
		{name: "docker network host", entry: `{"command":"docker","args":["run","--network","host","img"]}`,
			codes: []string{CodeWidensHardening}},
		{name: "docker net=host", entry: `{"command":"docker","args":["run","--net=host","img"]}`,
			codes: []string{CodeWidensHardening}},
		{name: "docker network container", entry: `{"command":"docker","args":["run","--network","container:abc","img"]}`,
			codes: []string{CodeWidensHardening}},
		{name: "docker pid host", entry: `{"command":"docker","args":["run","--pid","host","img"]}`,
			codes: []string{CodeWidensHardening}},
		{name: "docker ipc host", entry: `{"command":"docker","args":["run","--ipc=host","img"]}`,
			codes: []string{CodeWidensHardening}},
		{name: "docker socket", entry: `{"command":"docker","args":["run","-v","/var/run/docker.sock:/var/run/docker.sock","img"]}`,
			codes: []string{CodeWidensHardening}},
		{name: "docker socket dir", entry: `{"command":"docker","args":["run","-v","/var/run:/host","img"]}`,
			codes: []string{CodeWidensHardening}},
		{name: "docker device", entry: `{"command":"docker","args":["run","--device","/dev/kvm","img"]}`,
			codes: []string{CodeWidensHardening}},
		{name: "docker security-opt", entry: `{"command":"docker","args":["run","--security-opt","seccomp=unconfined","img"]}`,
			codes: []string{CodeWidensHardening}},
		{name: "docker root user keeps the default", entry: `{"command":"docker","args":["run","-u","0","img"]}`,
			want: &mapped{mode: "docker", image: "img", user: "65534:65534"}, codes: []string{CodeWidensHardening}},
		{name: "docker relative volume", entry: `{"command":"docker","args":["run","-v","data:/data","img"]}`,
			codes: []string{CodeWidensHardening}},
		{name: "docker bad memory", entry: `{"command":"docker","args":["run","--memory","lots","img"]}`,
			codes: []string{CodeInvalidValue}},
		{name: "docker no image", entry: `{"command":"docker","args":["run","-i"]}`,
			codes: []string{CodeMissingField}},
		{name: "docker not run", entry: `{"command":"docker","args":["exec","c"]}`,
			codes: []string{CodeUnsupported}},
		{name: "docker flag without value", entry: `{"command":"docker","args":["run","-e"]}`,
			codes: []string{CodeInvalidValue}},
		{name: "url", entry: `{"url":"https://mcp.example.com/mcp","headers":{"Authorization":"Bearer x"}}`,
			want: &mapped{mode: "remote", endpoint: "https://mcp.example.com/mcp", transport: "http", headers: map[string]string{"Authorization": "Bearer x"}}},
		{name: "url sse", entry: `{"type":"sse","url":"http://h/sse"}`,
			want: &mapped{mode: "remote", endpoint: "http://h/sse", transport: "sse"}},
		{name: "url streamable-http", entry: `{"type":"streamable-http","url":"http://h/mcp"}`,
			want: &mapped{mode: "remote", endpoint: "http://h/mcp", transport: "http"}},
		{name: "url token", entry: `{"type":"http","url":"http://h/mcp","token":"abc"}`,
			want: &mapped{mode: "remote", endpoint: "http://h/mcp", transport: "http", headers: map[string]string{"Authorization": "Bearer abc"}}},
		{name: "url bad scheme", entry: `{"url":"ftp://h"}`, codes: []string{CodeInvalidValue}, field: "mcpServers.x.url"},
		{name: "http without url", entry: `{"type":"http"}`, codes: []string{CodeMissingField}},
		{name: "url and command", entry: `{"url":"http://h","command":"npx"}`, codes: []string{CodeInvalidEntry}},
		{name: "npx package", entry: `{"command":"npx","args":["-y","@scope/server","--flag","v"],"env":{"K":"v"}}`,
			want: &mapped{mode: "docker", args: []string{"--flag", "v"}, env: map[string]string{"K": "v"},
				pkg: &config.Package{Type: "npm", Name: "@scope/server", Runner: "npx"}},
			codes: []string{CodePackage}, field: "mcpServers.x.command"},
		{name: "npx package and command", entry: `{"command":"npx","args":["--yes","--package=@scope/tools@^1.2","tool-a","x"]}`,
			want:  &mapped{mode: "docker", args: []string{"x"}, pkg: &config.Package{Type: "npm", Name: "@scope/tools", Version: "^1.2", Runner: "npx", Command: "tool-a"}},
			codes: []string{CodePackage}},
		{name: "npx allow_scripts", entry: `{"command":"npx","args":["pkg@2.0.0"],"allow_scripts":true}`,
			want:  &mapped{mode: "docker", pkg: &config.Package{Type: "npm", Name: "pkg", Version: "2.0.0", Runner: "npx", AllowScripts: true}},
			codes: []string{CodePackage}},
		{name: "npx package needs no runtimes (zero setup)", entry: `{"command":"npx","args":["pkg"]}`, opts: none,
			want:  &mapped{mode: "docker", pkg: &config.Package{Type: "npm", Name: "pkg", Runner: "npx"}},
			codes: []string{CodePackage}},
		{name: "npx package is a container even with subprocesses allowed", entry: `{"command":"npx","args":["-y","pkg"]}`, opts: sub,
			want:  &mapped{mode: "docker", pkg: &config.Package{Type: "npm", Name: "pkg", Runner: "npx"}},
			codes: []string{CodePackage}},
		{name: "npx git spec", entry: `{"command":"npx","args":["github:me/server"]}`,
			codes: []string{CodeInvalidValue}, field: "mcpServers.x.args"},
		{name: "uvx package (zero setup)", entry: `{"command":"uvx","args":["mcp-server-fetch","--ignore-robots-txt"]}`,
			want: &mapped{mode: "docker", args: []string{"--ignore-robots-txt"},
				pkg: &config.Package{Type: "pypi", Name: "mcp-server-fetch", Runner: "uvx", Command: "mcp-server-fetch"}},
			codes: []string{CodePackage}},
		{name: "uvx --from and --python", entry: `{"command":"uvx","args":["--python","3.12","--from","mcp-x>=1.2,<2","mcp-x-server"]}`,
			want:  &mapped{mode: "docker", pkg: &config.Package{Type: "pypi", Name: "mcp-x", Version: ">=1.2,<2", Runner: "uvx", Command: "mcp-x-server"}},
			codes: []string{CodeIgnored, CodePackage}},
		{name: "uv run --with python -m", entry: `{"command":"uv","args":["run","--with","mcp-server-time==2025.1","python","-m","mcp_server_time","--tz","UTC"]}`,
			want: &mapped{mode: "docker", args: []string{"--tz", "UTC"},
				pkg: &config.Package{Type: "pypi", Name: "mcp-server-time", Version: "==2025.1", Runner: "uv", Module: "mcp_server_time"}},
			codes: []string{CodePackage}},
		{name: "uv run of a project", entry: `{"command":"uv","args":["--directory","/home/me/srv","run","server.py"]}`,
			codes: []string{CodeInvalidValue}},
		{name: "pipx run", entry: `{"command":"pipx","args":["run","--spec","mcp-y==0.3","mcp-y-server"]}`,
			want:  &mapped{mode: "docker", pkg: &config.Package{Type: "pypi", Name: "mcp-y", Version: "==0.3", Runner: "pipx", Command: "mcp-y-server"}},
			codes: []string{CodePackage}},
		{name: "python -m", entry: `{"command":"python3","args":["-m","mcp_server_time.cli","--x"]}`,
			want:  &mapped{mode: "docker", args: []string{"--x"}, pkg: &config.Package{Type: "pypi", Name: "mcp-server-time", Runner: "python3", Module: "mcp_server_time.cli"}},
			codes: []string{CodePackage}},
		{name: "node file under an allowed root", entry: `{"command":"node","args":["BINDS/proj/build/index.js","--stdio"]}`,
			want: &mapped{mode: "docker", image: "node:22-alpine", args: []string{"node", "BINDS/proj/build/index.js", "--stdio"},
				volumes: []string{"BINDS/proj:BINDS/proj:ro"}, env: map[string]string{"HOME": "/tmp"}}},
		{name: "node file elsewhere", entry: `{"command":"node","args":["/home/me/server/index.js"]}`,
			codes: []string{CodeWidensHardening}, field: "mcpServers.x.args"},
		{name: "node relative file", entry: `{"command":"node","args":["build/index.js"]}`,
			codes: []string{CodeInvalidValue}},
		{name: "other runner with its runtime", entry: `{"command":"bunx","args":["pkg"]}`,
			opts: Options{Runtimes: map[string]config.Runtime{"bunx": {Image: "oven/bun:1", Network: "bridge"}}},
			want: &mapped{mode: "docker", image: "oven/bun:1", network: "bridge", args: []string{"bunx", "pkg"}, env: map[string]string{"HOME": "/tmp"}}},
		{name: "other runner without a runtime", entry: `{"command":"bunx","args":["pkg"]}`,
			codes: []string{CodeRuntimeUnavailable}, field: "mcpServers.x.command"},
		{name: "binary subprocess", entry: `{"command":"/opt/server","args":["x"]}`, opts: sub,
			want: &mapped{mode: "subprocess", command: []string{"/opt/server", "x"}}},
		{name: "binary no subprocess", entry: `{"command":"/opt/server"}`, codes: []string{CodeRuntimeUnavailable}},
		{name: "no command no url", entry: `{"args":["x"]}`, codes: []string{CodeMissingField}},
		{name: "unknown type", entry: `{"type":"websocket","command":"x"}`, codes: []string{CodeUnsupported}},
		{name: "bad env name", entry: `{"command":"npx","args":["pkg"],"env":{"A-B":"1"}}`, codes: []string{CodeInvalidValue, CodePackage}},
		{name: "cwd ignored", entry: `{"command":"npx","args":["pkg"],"cwd":"/x"}`,
			want:  &mapped{mode: "docker", pkg: &config.Package{Type: "npm", Name: "pkg", Runner: "npx"}},
			codes: []string{CodeIgnored, CodePackage}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := tt.opts
			if o.Runtimes == nil && !o.AllowSubprocess && o.Access.BindRoots == nil {
				o = opts
			}
			e, diags := DecodeEntry("mcpServers.x", json.RawMessage(roots.Replace(tt.entry)))
			if diags.HasError() {
				t.Fatalf("decode: %+v", diags)
			}
			s, d := Map("x", e, "mcpServers.x", o)
			diags = append(diags, d...)
			var codes []string
			for _, x := range diags {
				codes = append(codes, x.Code)
				if x.FieldPath == "" || x.Message == "" || x.Level == "" {
					t.Errorf("incomplete diagnostic %+v", x)
				}
			}
			if !slices.Equal(codes, tt.codes) {
				t.Errorf("codes = %v, want %v (%+v)", codes, tt.codes, diags)
			}
			if tt.field != "" && !slices.ContainsFunc(diags, func(x Diagnostic) bool { return x.FieldPath == tt.field }) {
				t.Errorf("no diagnostic at %s: %+v", tt.field, diags)
			}
			if tt.want == nil {
				if s != nil || !diags.HasError() {
					t.Fatalf("want refusal, got %+v", s)
				}
				return
			}
			if s == nil {
				t.Fatalf("refused: %+v", diags)
			}
			w := *tt.want
			w.volumes, w.args = slices.Clone(w.volumes), slices.Clone(w.args)
			for i, v := range w.volumes {
				w.volumes[i] = roots.Replace(v)
			}
			for i, v := range w.args {
				w.args[i] = roots.Replace(v)
			}
			checkSpec(t, s, &w)
		})
	}
}

func checkSpec(t *testing.T, s *config.Server, w *mapped) {
	t.Helper()
	if s.ID != "x" || s.Origin != config.OriginInstalled {
		t.Errorf("id %q origin %q", s.ID, s.Origin)
	}
	eq := func(what, got, want string) {
		if want != "" && got != want {
			t.Errorf("%s = %q, want %q", what, got, want)
		}
	}
	eq("mode", s.Mode, w.mode)
	switch {
	case w.pkg == nil && s.Package != nil:
		t.Errorf("package = %+v, want none", *s.Package)
	case w.pkg != nil && (s.Package == nil || *s.Package != *w.pkg):
		t.Errorf("package = %+v, want %+v", s.Package, *w.pkg)
	case w.pkg != nil && (s.Image != "" || s.Network != ""):
		t.Errorf("a package server has image %q network %q of its own", s.Image, s.Network)
	}
	eq("image", s.Image, w.image)
	eq("endpoint", s.Endpoint, w.endpoint)
	eq("transport", s.Transport, w.transport)
	eq("network", s.Network, w.network)
	eq("user", s.User, w.user)
	if !slices.Equal(s.Args, w.args) {
		t.Errorf("args = %q, want %q", s.Args, w.args)
	}
	if !slices.Equal(s.Command, w.command) {
		t.Errorf("command = %q, want %q", s.Command, w.command)
	}
	if !slices.Equal(s.Volumes, w.volumes) {
		t.Errorf("volumes = %q, want %q", s.Volumes, w.volumes)
	}
	if len(s.Env) != len(w.env) {
		t.Errorf("env = %v, want %v", s.Env, w.env)
	}
	for k, v := range w.env {
		if s.Env[k] != v {
			t.Errorf("env[%s] = %q, want %q", k, s.Env[k], v)
		}
	}
	if len(s.Headers) != len(w.headers) {
		t.Errorf("headers = %v, want %v", s.Headers, w.headers)
	}
	for k, v := range w.headers {
		if s.Headers[k] != v {
			t.Errorf("headers[%s] = %q, want %q", k, s.Headers[k], v)
		}
	}
	if w.memory != 0 && s.Resources.MemoryBytes != w.memory {
		t.Errorf("memory = %d, want %d", s.Resources.MemoryBytes, w.memory)
	}
	if w.cpus != 0 && s.Resources.NanoCPUs != w.cpus {
		t.Errorf("cpus = %d, want %d", s.Resources.NanoCPUs, w.cpus)
	}
	if s.Mode == config.ModeDocker && (!s.ReadOnly || s.User == "") {
		t.Errorf("docker spec lost its hardening defaults: read_only %v user %q", s.ReadOnly, s.User)
	}
}

// TestMapKeepsSummary: an installed entry's summary is the server's line
// in hangar_find_tools' description, as config's summary: is.
func TestMapKeepsSummary(t *testing.T) {
	t.Parallel()
	e, diags := DecodeEntry("mcpServers.x", json.RawMessage(`{"url":"https://mcp.example.com/mcp","summary":"  Example tools  "}`))
	if diags.HasError() {
		t.Fatalf("decode: %+v", diags)
	}
	s, d := Map("x", e, "mcpServers.x", Options{})
	if d.HasError() || s == nil || s.Summary != "Example tools" {
		t.Fatalf("summary %+v %+v", s, d)
	}
}

func TestDecodeEntry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		codes []string
	}{
		{`{"command":"x","args":["a"],"env":{"A":"1"}}`, nil},
		{`{"command":"x","disabled":false,"autoApprove":[]}`, []string{CodeIgnored, CodeIgnored}},
		{`{"command":1}`, []string{CodeInvalidValue}},
		{`{"args":"a b"}`, []string{CodeInvalidValue}},
		{`{"env":{"A":1}}`, []string{CodeInvalidValue}},
		{`"npx"`, []string{CodeInvalidEntry}},
		{`null`, []string{CodeInvalidEntry}},
		{`{"command":"x","summary":"GitHub issues and pull requests"}`, nil},
		{`{"command":"x","summary":"two\nlines"}`, []string{CodeInvalidValue}},
		{`{"command":"x","summary":7}`, []string{CodeInvalidValue}},
	}
	for _, tt := range tests {
		_, d := DecodeEntry("f", json.RawMessage(tt.in))
		var codes []string
		for _, x := range d {
			codes = append(codes, x.Code)
		}
		if !slices.Equal(codes, tt.codes) {
			t.Errorf("%s: codes %v, want %v", tt.in, codes, tt.codes)
		}
	}
}

// TestMapPolicy: an entry's policy (hangar's own field) is compiled at
// install: a rule that does not compile is an error at its path; a good
// one becomes the server's own policy.
func TestMapPolicy(t *testing.T) {
	t.Parallel()
	e, diags := DecodeEntry("mcpServers.x", json.RawMessage(`{"url":"https://mcp.example.com/mcp",
		"policy":{"default":"deny","rules":[{"name":"readers","effect":"allow","when":"tool.annotations.?readOnlyHint.orValue(false)"}]}}`))
	if diags.HasError() {
		t.Fatalf("decode: %+v", diags)
	}
	s, d := Map("x", e, "mcpServers.x", Options{})
	if d.HasError() || s == nil || s.Policy == nil || s.Policy.Default != "deny" || len(s.Policy.Rules) != 1 || s.Policy.Rules[0].Name != "readers" {
		t.Fatalf("policy %+v %+v", s, d)
	}
	for _, tc := range []struct{ in, field, msg string }{
		{`{"command":"x","policy":{"rules":[{"name":"r","effect":"deny","when":"tool.nmae == 1"}]}}`, "mcpServers.x.policy.rules[0].when", "undefined field 'nmae'"},
		{`{"command":"x","policy":{"rules":[{"name":"r","effect":"deny","when":"true","if":"x"}]}}`, "mcpServers.x.policy", "must be an object"},
		{`{"command":"x","policy":{"default":"maybe"}}`, "mcpServers.x.policy.default", `must be allow or deny (got "maybe")`},
		{`{"command":"x","policy":"deny"}`, "mcpServers.x.policy", "must be an object"},
	} {
		_, d := DecodeEntry("mcpServers.x", json.RawMessage(tc.in))
		found := false
		for _, x := range d {
			found = found || x.Level == LevelError && x.FieldPath == tc.field && strings.Contains(x.Message, tc.msg)
		}
		if !found {
			t.Errorf("%s: %+v, want %s: …%s…", tc.in, d, tc.field, tc.msg)
		}
	}
}

// The install sample of docs/policy.md decodes as it is shown.
func TestPolicyDocInstallSample(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "policy.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```json\n{\"mcpServers\"")
	if !ok {
		t.Fatal("docs/policy.md has no mcpServers sample")
	}
	sample, _, _ := strings.Cut(`{"mcpServers"`+rest, "```")
	var file struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(sample), &file); err != nil || len(file.MCPServers) != 1 {
		t.Fatalf("the sample: %v", err)
	}
	for name, raw := range file.MCPServers {
		e, d := DecodeEntry("mcpServers."+name, raw)
		if d.HasError() || e.Policy == nil || len(e.Policy.Rules) != 1 {
			t.Errorf("%s: %+v %+v", name, e.Policy, d)
		}
		if s, d := Map(name, e, "mcpServers."+name, Options{}); s == nil || s.Policy == nil || d.HasError() {
			t.Errorf("%s maps to %+v %+v", name, s, d)
		}
	}
}
