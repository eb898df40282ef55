package registry

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
)

func envOf(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		m[k] = v
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func oci(id, version, transport string) Package {
	return Package{RegistryType: "oci", Identifier: id, Version: version, Transport: Transport{Type: transport}}
}

func server(name string, pkgs []Package, remotes ...Transport) Entry {
	return Entry{Server: ServerJSON{Name: name, Description: "desc of " + name, Packages: pkgs, Remotes: remotes}, Source: SourceCatalog}
}

var trusted = []string{"io.github.ok/"}

// dockerSpec is what a docker stdio server resolves to with default opts.
func dockerSpec(id, image string) *config.Server {
	s := config.NewServer(id, config.ModeDocker, config.Execution{})
	s.Image = image
	s.Origin = config.OriginRegistry
	return s
}

func TestResolve(t *testing.T) {
	t.Parallel()
	fullPkg := oci("ghcr.io/ok/fs", "1.2.0", "stdio")
	fullPkg.EnvironmentVariables = []KeyValueInput{
		{Name: "API_TOKEN", Input: Input{IsRequired: true, IsSecret: true, Description: "the token"}},
		{Name: "LOG_LEVEL", Input: Input{Default: "info"}},
		{Name: "REGION", Input: Input{Value: "eu-{zone}", Variables: map[string]Input{"zone": {Default: "1"}}}},
		{Name: "OPTIONAL"},
		{Name: "bad name", Input: Input{Default: "x"}},
	}
	fullPkg.PackageArguments = []Argument{
		{Type: "positional", Input: Input{Value: "serve"}},
		{Type: "named", Name: "--root", Input: Input{Default: "/data"}},
		{Type: "named", Name: "--skip"},
		{Type: "named", Name: "--key", ValueHint: "api_key", Input: Input{IsRequired: true, IsSecret: true}},
	}
	fullWant := dockerSpec("fs", "ghcr.io/ok/fs:1.2.0")
	fullWant.Description = "desc of io.github.ok/fs"
	fullWant.Env = map[string]string{"API_TOKEN": "tok", "LOG_LEVEL": "debug", "REGION": "eu-1"}
	fullWant.Args = []string{"serve", "--root", "/data", "--key", "k3y"}
	fullWant.IdleTTL = 42 * time.Second
	fullWant.Tools = config.Tools{AllowList: []string{"read_*"}, DenyList: []string{"rm"}}

	httpPkg := oci("img/web", "", "streamable-http")
	httpPkg.Transport.URL = "http://localhost:{port}/rpc"
	httpPkg.PackageArguments = []Argument{{Type: "named", Name: "--port", ValueHint: "port", Input: Input{Default: "9100"}}}
	httpWant := dockerSpec("web", "img/web")
	httpWant.Transport, httpWant.Port, httpWant.Path = config.TransportHTTP, 9100, "/rpc"
	httpWant.Args = []string{"--port", "9100"}
	httpWant.Description = "desc of io.github.ok/web"

	ssePkg := oci("img/sse:2", "9", "sse")
	ssePkg.Transport.URL = "http://0.0.0.0:8000/sse"
	sseWant := dockerSpec("sse", "img/sse:2")
	sseWant.Transport, sseWant.Port, sseWant.Path = config.TransportSSE, 8000, "/sse"
	sseWant.Description = "desc of io.github.ok/sse"

	remote := Transport{Type: "streamable-http", URL: "https://api.example.com/{tenant}/mcp",
		Variables: map[string]Input{"tenant": {Default: "acme"}},
		Headers: []KeyValueInput{
			{Name: "Authorization", Input: Input{Value: "Bearer {token}", IsSecret: true,
				Variables: map[string]Input{"token": {IsRequired: true, IsSecret: true}}}},
			{Name: "X-Client", Input: Input{Value: "hangar"}},
		}}
	remoteWant := config.NewServer("api", config.ModeRemote, config.Execution{})
	remoteWant.Endpoint = "https://api.example.com/acme/mcp"
	remoteWant.Headers = map[string]string{"Authorization": "Bearer T0KEN", "X-Client": "hangar"}
	remoteWant.Origin = config.OriginRegistry
	remoteWant.Description = "desc of io.github.ok/api"
	sseRemoteWant := config.NewServer("api", config.ModeRemote, config.Execution{})
	sseRemoteWant.Endpoint, sseRemoteWant.Transport = "https://h/sse", config.TransportSSE
	sseRemoteWant.Origin, sseRemoteWant.Description = config.OriginRegistry, "desc of io.github.ok/api"

	runtimePkg := oci("img/rt", "", "stdio")
	runtimePkg.RuntimeArguments = []Argument{
		{Type: "named", Name: "-e", Input: Input{Value: "MODE={mode}", Variables: map[string]Input{"mode": {Default: "fast"}}}},
		{Type: "named", Name: "--env=EXTRA=1"},
		{Type: "named", Name: "-e", Input: Input{Value: "PASS_ME"}},
		{Type: "named", Name: "-v", Input: Input{Value: "/:/host"}},
		{Type: "named", Name: "--privileged"},
		{Type: "named", Name: "--network", Input: Input{Value: "host"}},
		{Type: "named", Name: "--cap-add", Input: Input{Value: "SYS_ADMIN"}},
		{Type: "named", Name: "--rm"},
		{Type: "positional", Input: Input{Value: "img/rt"}},
	}
	runtimeWant := dockerSpec("rt", "img/rt")
	runtimeWant.Env = map[string]string{"MODE": "fast", "EXTRA": "1", "PASS_ME": "passed"}
	runtimeWant.Description = "desc of io.github.ok/rt"

	npmOnly := server("io.github.ok/node", []Package{{RegistryType: "npm", Identifier: "@ok/node", Version: "1.0.0"},
		{RegistryType: "pypi", Identifier: "ok-node", Version: "1.0.0"}})
	pkgSpec := func(id string, p config.Package, args ...string) *config.Server {
		s := config.NewServer(id, config.ModeDocker, config.Execution{})
		s.Package, s.Origin, s.Args = &p, config.OriginRegistry, args
		s.Description = "desc of io.github.ok/" + id
		return s
	}
	npmWant := pkgSpec("node", config.Package{Type: "npm", Name: "@ok/node", Version: "1.0.0", Runner: "npx"})
	pypiWant := pkgSpec("node", config.Package{Type: "pypi", Name: "ok-node", Version: "==1.0.0", Runner: "uvx", Command: "ok-node"})
	fullPyPI := server("io.github.ok/fetch", []Package{{RegistryType: "pypi", RegistryBaseURL: "http://mirror:8080/pypi/", Identifier: "mcp-fetch",
		Version: "2.1", RuntimeHint: "uvx",
		RuntimeArguments:     []Argument{{Type: "named", Name: "-q"}},
		PackageArguments:     []Argument{{Type: "named", Name: "--user-agent", Input: Input{Default: "hangar"}}},
		EnvironmentVariables: []KeyValueInput{{Name: "FETCH_TOKEN", Input: Input{IsRequired: true, IsSecret: true}}}}})
	fullPyPIWant := pkgSpec("fetch", config.Package{Type: "pypi", Name: "mcp-fetch", Version: "==2.1", Runner: "uvx", Command: "mcp-fetch",
		Registry: "http://mirror:8080/pypi/simple/"}, "--user-agent", "hangar")
	fromPyPI := server("io.github.ok/from", []Package{{RegistryType: "pypi", Identifier: "mcp-from", Version: "1.0",
		RuntimeArguments: []Argument{{Type: "named", Name: "--from", Input: Input{Value: "mcp-from>=1"}}, {Type: "positional", Input: Input{Value: "mcp-from-server"}}}}})
	fromPyPIWant := pkgSpec("from", config.Package{Type: "pypi", Name: "mcp-from", Version: ">=1", Runner: "uvx", Command: "mcp-from-server"})
	fullPyPIWant.Env = map[string]string{"FETCH_TOKEN": "tok"}
	withAlt := server("io.github.ok/alt", []Package{{RegistryType: "npm", Identifier: "@ok/alt"}, oci("img/alt", "", "")})
	altWant := dockerSpec("alt", "img/alt")
	altWant.Description = "desc of io.github.ok/alt"

	order := server("io.github.ok/order", []Package{httpPkg, oci("img/stdio", "", "stdio")}, Transport{Type: "streamable-http", URL: "https://r"})
	orderWant := dockerSpec("order", "img/stdio")
	orderWant.Description = "desc of io.github.ok/order"

	unverified := server("io.github.stranger/fs", []Package{oci("img/fs", "", "stdio")})
	unvWant := dockerSpec("fs", "img/fs")
	unvWant.Description = "desc of io.github.stranger/fs"
	unvSecret := server("io.github.stranger/tok", []Package{{RegistryType: "oci", Identifier: "img/tok", Transport: Transport{Type: "stdio"},
		EnvironmentVariables: []KeyValueInput{{Name: "TOKEN", Input: Input{IsRequired: true, IsSecret: true}}}}})
	officialEntry := server("io.github.someone/fs", []Package{oci("img/fs", "", "stdio")})
	officialEntry.Official = &Official{Status: StatusActive}
	deprecated := server("io.github.someone/fs", []Package{oci("img/fs", "", "stdio")})
	deprecated.Official = &Official{Status: StatusDeprecated}

	tests := []struct {
		name     string
		entry    Entry
		env      []string
		opts     Options
		want     *config.Server
		status   string
		msg      []string // substrings of the message
		missing  []string
		instr    []string // substrings of the instructions
		warnings []string // substrings, one per warning expected (in order)
		verified bool
	}{
		{name: "oci stdio with env, args, policy and ttl", entry: server("io.github.ok/fs", []Package{fullPkg}),
			env:  []string{"HANGAR_SECRET_API_TOKEN=tok", "LOG_LEVEL=debug", "API_KEY=k3y", "OPTIONAL="},
			opts: Options{IdleTTL: 42 * time.Second, AllowTools: []string{"read_*"}, DenyTools: []string{"rm"}},
			want: fullWant, status: StatusResolved, verified: true, warnings: []string{`environment variable "bad name" ignored`}},
		{name: "oci streamable-http: port and path from the url", entry: server("io.github.ok/web", []Package{httpPkg}),
			want: httpWant, status: StatusResolved, verified: true},
		{name: "oci sse; a tagged identifier keeps its tag", entry: server("io.github.ok/sse", []Package{ssePkg}),
			want: sseWant, status: StatusResolved, verified: true},
		{name: "oci http without url", entry: server("io.github.ok/web", []Package{oci("img/web", "", "streamable-http")}),
			want: func() *config.Server {
				s := dockerSpec("web", "img/web")
				s.Transport, s.Description = config.TransportHTTP, "desc of io.github.ok/web"
				return s
			}(), status: StatusResolved, verified: true, warnings: []string{"assuming port 8080"}},
		{name: "oci http url with an unfilled port", entry: server("io.github.ok/web", []Package{{RegistryType: "oci", Identifier: "img/web",
			Transport: Transport{Type: "streamable-http", URL: "http://localhost:{port}/mcp"}}}),
			status: StatusFailed, msg: []string{"is not a URL", "{port}"}, verified: true},
		{name: "stdio image preferred over http image and remote", entry: order, want: orderWant, status: StatusResolved, verified: true},
		{name: "remote with variables and secret header", entry: server("io.github.ok/api", nil, remote), env: []string{"HANGAR_SECRET_TOKEN=T0KEN"},
			want: remoteWant, status: StatusResolved, verified: true},
		{name: "remote token from the plain environment", entry: server("io.github.ok/api", nil, remote), env: []string{"TOKEN=T0KEN"},
			want: remoteWant, status: StatusResolved, verified: true},
		{name: "remote sse", entry: server("io.github.ok/api", nil, Transport{Type: "sse", URL: "https://h/sse"}),
			want: sseRemoteWant, status: StatusResolved, verified: true},
		{name: "remote not http", entry: server("io.github.ok/api", nil, Transport{Type: "streamable-http", URL: "ftp://h"}),
			status: StatusFailed, msg: []string{`remote url "ftp://h" is not an http(s) URL`}, verified: true},
		{name: "remote secret header missing", entry: server("io.github.ok/api", nil, remote),
			status: StatusMissingSecrets, missing: []string{"TOKEN"}, verified: true,
			instr: []string{"HANGAR_SECRET_TOKEN", "or as <NAME> itself", "restart the gateway", "never shown"}},
		{name: "runtime arguments never widen the container", entry: server("io.github.ok/rt", []Package{runtimePkg}),
			env: []string{"PASS_ME=passed"}, want: runtimeWant, status: StatusResolved, verified: true,
			warnings: []string{"-v refused", "--privileged refused", "--network refused", "--cap-add refused",
				"--rm ignored", `runtime argument "img/rt" ignored`}},
		{name: "npm before pypi", entry: npmOnly, want: npmWant, status: StatusResolved, verified: true},
		{name: "pypi first when package_types says so", entry: npmOnly, opts: Options{PackageTypes: []string{"pypi", "npm"}},
			want: pypiWant, status: StatusResolved, verified: true},
		{name: "package types not allowed", entry: npmOnly, opts: Options{PackageTypes: []string{"oci"}}, status: StatusFailed, verified: true,
			msg: []string{"cannot run here", "npm package @ok/node", "pypi package ok-node", "registry.package_types"}},
		{name: "pypi with registryBaseUrl, runtimeHint, runtime and package arguments, secret env", entry: fullPyPI,
			env: []string{"HANGAR_SECRET_FETCH_TOKEN=tok"}, want: fullPyPIWant, status: StatusResolved, verified: true},
		{name: "runtime arguments that name the package", entry: fromPyPI, want: fromPyPIWant, status: StatusResolved, verified: true},
		{name: "runtimeHint of another ecosystem", entry: server("io.github.ok/x", []Package{{RegistryType: "npm", Identifier: "x", RuntimeHint: "uvx"}}),
			status: StatusFailed, verified: true, msg: []string{`runtimeHint "uvx" does not run npm packages`}},
		{name: "runtime arguments the runner cannot take", entry: server("io.github.ok/x", []Package{{RegistryType: "npm", Identifier: "x",
			RuntimeArguments: []Argument{{Type: "named", Name: "--node-options", Input: Input{Value: "--inspect"}}}}}),
			status: StatusFailed, verified: true, msg: []string{"npx: option --node-options is not supported"}},
		{name: "npm with an oci alternative", entry: withAlt, want: altWant, status: StatusResolved, verified: true},
		{name: "unsupported oci transport", entry: server("io.github.ok/ws", []Package{oci("img/ws", "", "websocket")}),
			status: StatusFailed, msg: []string{`oci package img/ws with transport "websocket"`}, verified: true},
		{name: "nothing to run", entry: server("io.github.ok/empty", nil), status: StatusFailed,
			msg: []string{"neither a package nor a remote"}, verified: true},
		{name: "invalid image", entry: server("io.github.ok/bad", []Package{oci("-bad image", "", "stdio")}),
			status: StatusFailed, msg: []string{"not an image reference"}, verified: true},
		{name: "missing required env", entry: server("io.github.ok/fs", []Package{fullPkg}),
			status: StatusMissingSecrets, missing: []string{"API_KEY", "API_TOKEN"}, verified: true,
			instr: []string{"API_TOKEN: the token", "HANGAR_SECRET_API_KEY"}, msg: []string{"API_KEY, API_TOKEN"},
			warnings: []string{`environment variable "bad name"`}},
		{name: "gateway variables are never handed out", entry: server("io.github.ok/p", []Package{{RegistryType: "oci", Identifier: "img/p",
			EnvironmentVariables: []KeyValueInput{{Name: "PATH", Input: Input{IsRequired: true}}, {Name: "DOCKER_HOST", Input: Input{IsRequired: true}}}}}),
			env: []string{"PATH=/bin", "DOCKER_HOST=unix:///var/run/docker.sock"}, status: StatusMissingSecrets,
			missing: []string{"DOCKER_HOST", "PATH"}, verified: true},
		{name: "unverified", entry: unverified, status: StatusUnverified, msg: []string{"not verified", "force_unverified"}},
		{name: "unverified forced", entry: unverified, opts: Options{ForceUnverified: true}, want: unvWant, status: StatusResolved,
			warnings: []string{"not verified"}},
		{name: "unverified gets HANGAR_SECRET_ only", entry: unvSecret, opts: Options{ForceUnverified: true}, env: []string{"TOKEN=plain"},
			status: StatusMissingSecrets, missing: []string{"TOKEN"}, instr: []string{"unverified", "HANGAR_SECRET_TOKEN"},
			warnings: []string{"not verified"}},
		{name: "verified by the official registry", entry: officialEntry, status: StatusResolved, verified: true,
			want: func() *config.Server {
				s := dockerSpec("fs", "img/fs")
				s.Description = "desc of io.github.someone/fs"
				return s
			}()},
		{name: "deprecated is not verified by its status", entry: deprecated, status: StatusUnverified},
		{name: "deprecated verified by namespace warns", entry: deprecated, opts: Options{VerifiedNamespaces: []string{"io.github.someone/"}},
			status: StatusResolved, verified: true, warnings: []string{"deprecated"},
			want: func() *config.Server {
				s := dockerSpec("fs", "img/fs")
				s.Description = "desc of io.github.someone/fs"
				return s
			}()},
		{name: "assigned id", entry: server("io.github.ok/fs", []Package{oci("img/fs", "", "stdio")}), opts: Options{ID: "fs-3"},
			status: StatusResolved, verified: true,
			want: func() *config.Server {
				s := dockerSpec("fs-3", "img/fs")
				s.Description = "desc of io.github.ok/fs"
				return s
			}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			if opts.VerifiedNamespaces == nil {
				opts.VerifiedNamespaces = trusted
			}
			spec, out := Resolve(tt.entry, envOf(tt.env...), opts)
			if out.Status != tt.status {
				t.Fatalf("status = %q (%s), want %q", out.Status, out.Message, tt.status)
			}
			if out.Verified != tt.verified {
				t.Errorf("verified = %v, want %v", out.Verified, tt.verified)
			}
			if tt.status == StatusResolved {
				if !reflect.DeepEqual(spec, tt.want) {
					t.Errorf("spec:\n got  %+v\n want %+v", spec, tt.want)
				}
				if !config.ValidID(spec.ID) {
					t.Errorf("invalid ID %q", spec.ID)
				}
			} else if spec != nil {
				t.Errorf("spec = %+v for status %s, want nil", spec, out.Status)
			}
			for _, m := range tt.msg {
				if !strings.Contains(out.Message, m) {
					t.Errorf("message %q lacks %q", out.Message, m)
				}
			}
			if !slices.Equal(out.Missing, tt.missing) {
				t.Errorf("missing = %v, want %v", out.Missing, tt.missing)
			}
			for _, m := range tt.instr {
				if !strings.Contains(out.Instructions, m) {
					t.Errorf("instructions %q lack %q", out.Instructions, m)
				}
			}
			if len(out.Warnings) != len(tt.warnings) {
				t.Fatalf("warnings = %q, want %d like %q", out.Warnings, len(tt.warnings), tt.warnings)
			}
			for i, w := range tt.warnings {
				if !strings.Contains(out.Warnings[i], w) {
					t.Errorf("warning %d = %q, want %q in it", i, out.Warnings[i], w)
				}
			}
		})
	}
}

// Secret values are collected (for redaction) and never appear in an
// outcome's text.
func TestResolveSecrets(t *testing.T) {
	t.Parallel()
	p := oci("img/s", "", "stdio")
	p.EnvironmentVariables = []KeyValueInput{
		{Name: "A", Input: Input{IsSecret: true, IsRequired: true}},
		{Name: "B", Input: Input{IsRequired: true}},
		{Name: "C", Input: Input{IsRequired: true}},
	}
	spec, out := Resolve(server("io.github.ok/s", []Package{p}), envOf("A=alpha-secret", "HANGAR_SECRET_B=beta-secret", "C=plain"), Options{VerifiedNamespaces: trusted})
	if out.Status != StatusResolved {
		t.Fatalf("status %s: %s", out.Status, out.Message)
	}
	if spec.Env["A"] != "alpha-secret" || spec.Env["B"] != "beta-secret" || spec.Env["C"] != "plain" {
		t.Errorf("env = %v", spec.Env)
	}
	for _, s := range []string{"alpha-secret", "beta-secret"} {
		if !slices.Contains(out.Secrets, s) {
			t.Errorf("secrets %q lack %q", out.Secrets, s)
		}
	}
	if slices.Contains(out.Secrets, "plain") {
		t.Errorf("secrets %q include a non-secret value", out.Secrets)
	}
	if got := redact("start failed: token alpha-secret rejected, beta-secret too", out.Secrets); got != "start failed: token [REDACTED] rejected, [REDACTED] too" {
		t.Errorf("redact = %q", got)
	}
}

func TestVerified(t *testing.T) {
	t.Parallel()
	ns := []string{"io.github.modelcontextprotocol/", "com.acme/weather"}
	tests := []struct {
		e    Entry
		want bool
	}{
		{entry("io.github.modelcontextprotocol/filesystem"), true},
		{entry("IO.GITHUB.ModelContextProtocol/fs"), true},
		{entry("io.github.modelcontextprotocol-evil/fs"), false},
		{entry("com.acme/weather"), true},
		{entry("com.acme/weather2"), false},
		{entry("com.acme/other"), false},
		{official("io.github.x/y", StatusActive, true, ""), true},
		{official("io.github.x/y", StatusDeprecated, true, ""), false},
		{official("io.github.x/y", "", true, ""), false},
	}
	for _, tt := range tests {
		if got := Verified(tt.e, ns); got != tt.want {
			t.Errorf("Verified(%s, official %+v) = %v, want %v", tt.e.Server.Name, tt.e.Official, got, tt.want)
		}
	}
}

func TestImageRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p       Package
		want    string
		wantErr bool
	}{
		{Package{Identifier: "mcp-hangar/testkit", Version: "dev"}, "mcp-hangar/testkit:dev", false},
		{Package{Identifier: "ghcr.io/o/r:v1", Version: "v2"}, "ghcr.io/o/r:v1", false},
		{Package{Identifier: "o/r@sha256:abc", Version: "v2"}, "o/r@sha256:abc", false},
		{Package{Identifier: "localhost:5000/o/r", Version: "1"}, "localhost:5000/o/r:1", false},
		{Package{Identifier: "o/r"}, "o/r", false},
		{Package{Identifier: "o/r", Version: "1", RegistryBaseURL: "https://ghcr.io"}, "ghcr.io/o/r:1", false},
		{Package{Identifier: "o/r", Version: "1", RegistryBaseURL: "https://docker.io"}, "o/r:1", false},
		{Package{Identifier: "quay.io/o/r", RegistryBaseURL: "https://ghcr.io"}, "quay.io/o/r", false},
		{Package{Identifier: ""}, "", true},
		{Package{Identifier: "o/r; rm -rf /"}, "", true},
		{Package{Identifier: "o/../r"}, "", true},
		{Package{Identifier: "-o/r"}, "", true},
		{Package{Identifier: "host:port/r"}, "", true},
	}
	for _, tt := range tests {
		got, err := imageRef(tt.p)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("imageRef(%+v) = %q, %v; want %q (error %v)", tt.p, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestProviderID(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 80)
	tests := map[string]string{
		"io.github.x/filesystem": "filesystem",
		"filesystem":             "filesystem",
		"io.github.x/My Server!": "My-Server-",
		"io.github.x/_hidden":    "hidden",
		"io.github.x/--":         "mcp-server",
		"io.github.x/" + long:    long[:63],
		"a/b.c_d-e":              "b.c_d-e",
	}
	for name, want := range tests {
		got := ProviderID(name)
		if got != want || !config.ValidID(got) {
			t.Errorf("ProviderID(%q) = %q, want %q (valid)", name, got, want)
		}
	}
	for _, tt := range []struct {
		id   string
		n    int
		want string
	}{
		{"fs", 1, "fs"}, {"fs", 2, "fs-2"}, {"fs", 12, "fs-12"}, {long[:63], 3, long[:61] + "-3"},
	} {
		if got := withSuffix(tt.id, tt.n); got != tt.want || !config.ValidID(got) {
			t.Errorf("withSuffix(%q, %d) = %q, want %q", tt.id, tt.n, got, tt.want)
		}
	}
}
