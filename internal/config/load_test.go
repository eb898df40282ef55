package config

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, yaml string, env ...string) *Config {
	t.Helper()
	cfg, err := Parse([]byte(yaml), env)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cfg
}

// lifecycle holds the defaults every non-group server gets.
func lifecycle(s Server) *Server {
	s.Protocol = ProtocolAuto
	s.IdleTTL = 300 * time.Second
	s.HealthCheckInterval = 60 * time.Second
	s.MaxConsecutiveFailures = 3
	s.MaxConcurrency = 10
	s.StartTimeout = 30 * time.Second
	s.CallTimeout = 60 * time.Second
	return &s
}

func TestParseServerDefaults(t *testing.T) {
	t.Parallel()
	dockerDefaults := lifecycle(Server{
		ID: "s", Mode: ModeDocker, Image: "img",
		Resources: Resources{MemoryBytes: 512 << 20, NanoCPUs: 1e9, PidsLimit: 256},
		ReadOnly:  true, User: "65534:65534",
		Transport: TransportStdio, Port: 8080, Path: "/mcp",
	})
	tests := []struct {
		name string
		yaml string
		want *Server
	}{
		{"docker", "mcp_servers:\n  s: {mode: docker, image: img}\n", dockerDefaults},
		{"container is docker", "mcp_servers:\n  s: {mode: Container, image: img}\n", dockerDefaults},
		{"subprocess with command string", "mcp_servers:\n  s: {mode: subprocess, command: '  python  -m x '}\n", lifecycle(Server{
			ID: "s", Mode: ModeSubprocess, Command: []string{"python", "-m", "x"},
			Transport: TransportStdio, Port: 8080, Path: "/mcp",
		})},
		{"subprocess with command list", "mcp_servers:\n  s: {mode: subprocess, command: [python, -m, x y]}\n", lifecycle(Server{
			ID: "s", Mode: ModeSubprocess, Command: []string{"python", "-m", "x y"},
			Transport: TransportStdio, Port: 8080, Path: "/mcp",
		})},
		{"remote", "mcp_servers:\n  s: {mode: remote, endpoint: 'http://h:1/mcp'}\n", lifecycle(Server{
			ID: "s", Mode: ModeRemote, Endpoint: "http://h:1/mcp", Transport: TransportHTTP,
		})},
		{"group", "mcp_servers:\n  s: {mode: group, members: [{id: m, mode: docker, image: img}]}\n", &Server{
			ID: "s", Mode: ModeGroup, Strategy: StrategyRoundRobin, MinHealthy: 1,
			Health:         GroupHealth{UnhealthyThreshold: 2, HealthyThreshold: 1},
			CircuitBreaker: CircuitBreaker{FailureThreshold: 10, ResetTimeout: 60 * time.Second},
			Members: []*Server{func() *Server {
				m := *dockerDefaults
				m.ID, m.Weight, m.Priority = "m", 1, 1
				return &m
			}()},
		}},
		{"max_concurrency follows execution", "execution: {default_provider_concurrency: 3}\nmcp_servers:\n  s: {mode: remote, endpoint: 'https://h'}\n",
			func() *Server {
				s := lifecycle(Server{ID: "s", Mode: ModeRemote, Endpoint: "https://h", Transport: TransportHTTP})
				s.MaxConcurrency = 3
				return s
			}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := mustParse(t, tt.yaml).Servers["s"]
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("server:\n got  %+v\n want %+v", got, tt.want)
			}
		})
	}
}

func TestParseServerIDs(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 63)
	cfg := mustParse(t, "mcp_servers:\n  math.v2: {mode: docker, image: img}\n  A-1_b: {mode: docker, image: img}\n  "+
		long+": {mode: docker, image: img}\n  '9': {mode: docker, image: img}\n")
	for _, id := range []string{"math.v2", "A-1_b", long, "9"} {
		if s := cfg.Servers[id]; s == nil || s.ID != id {
			t.Errorf("server %q = %+v", id, s)
		}
	}
}

func TestParseAllFields(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
mcp_servers:
  math:
    mode: docker
    image: mcp-hangar/math:dev
    args: [--x]
    command: ~
    env: {LOG_LEVEL: info, N: 1, API_KEY: "${API_KEY}"}
    transport: http
    port: 9000
    path: /rpc
    protocol: Modern
    volumes: ["/srv/data:/data:ro", "/a:/b"]
    resources: {memory: 1G, cpu: 2, pids: 64}
    network: my-net
    read_only: false
    user: 1000
    allow_docker_socket: true
    idle_ttl_s: 1.5
    health_check_interval_s: 10
    max_consecutive_failures: 5
    max_concurrency: 7
    start_timeout_s: 20
    call_timeout_s: 90
    description: Arithmetic
    pull: never
    registry_auth: {username: bot, password_file: /run/secrets/reg}
    pin_digest: true
    verify: {public_key: /etc/hangar/math.pub}
  api:
    mode: remote
    endpoint: "${BASE:-https://fallback}/mcp"
    headers: {Authorization: "Bearer ${TOKEN}"}
    transport: sse
  pool:
    mode: group
    strategy: priority
    min_healthy: 2
    health: {unhealthy_threshold: 4, healthy_threshold: 3}
    circuit_breaker: {failure_threshold: 5, reset_timeout_s: 30}
    description: Pool
    members:
      - {id: a, mode: docker, image: img, weight: 50, priority: 2}
      - {id: b, mode: remote, endpoint: "https://b"}
execution: {max_concurrency: 100, default_provider_concurrency: 20}
discovery:
  enabled: true
  refresh_interval_s: 15
  auto_register: true
  sources:
    - {type: docker}
    - {type: docker, filters: {compose_project: agents, labels: {team: a, tier: ""}, networks: [front]}}
    - {type: filesystem, mode: authoritative, path: /etc/hangar/providers, watch: true}
  security: {require_health_check: true, quarantine_on_failure: false}
batch: {max_calls: 10, max_concurrency: 5, default_timeout: 30, max_timeout: 120,
        max_response_size_bytes: 1024, max_total_response_size_bytes: 4096,
        max_continuation_bytes: 8192, continuation_ttl_s: 30}
auth: {enabled: true, rate_limit: {rps: 2.5, burst: 5}}
config_reload: {enabled: true, interval_s: 2}
logging: {level: debug, json_format: false}
registry:
  url: "${REGISTRY:-https://unused}/"
  catalog_file: /etc/hangar/catalog.json
  verified_namespaces: [io.github.acme, "io.github.other/", io.github.x/one]
  timeout_s: 2.5
  max_hot_loaded: 3
  idle_ttl_s: 60
images: {pull: always, allowed_registries: ["127.0.0.1:*", Docker.io], verify: {public_key: /etc/hangar/cosign.pub}}
server: {session_idle_ttl: 600, max_sessions: 50, max_sessions_per_identity: 5}
data_dir: /var/lib/hangar
`, "API_KEY=k", "TOKEN=t", "REGISTRY=http://registry.local:8080")

	math := cfg.Servers["math"]
	wantMath := &Server{
		ID: "math", Mode: ModeDocker, Description: "Arithmetic",
		Image: "mcp-hangar/math:dev", Args: []string{"--x"},
		Volumes:   []string{"/srv/data:/data:ro", "/a:/b"},
		Resources: Resources{MemoryBytes: 1 << 30, NanoCPUs: 2e9, PidsLimit: 64},
		Network:   "my-net", ReadOnly: false, User: "1000", AllowDockerSocket: true,
		Env:       map[string]string{"LOG_LEVEL": "info", "N": "1", "API_KEY": "k"},
		Transport: TransportHTTP, Port: 9000, Path: "/rpc", Protocol: ProtocolModern,
		IdleTTL: 1500 * time.Millisecond, HealthCheckInterval: 10 * time.Second,
		MaxConsecutiveFailures: 5, MaxConcurrency: 7,
		StartTimeout: 20 * time.Second, CallTimeout: 90 * time.Second,
		Pull: PullNever, RegistryAuth: &RegistryAuth{Username: "bot", PasswordFile: "/run/secrets/reg"},
		PinDigest: true, Verify: &Verify{PublicKey: "/etc/hangar/math.pub"},
	}
	if !reflect.DeepEqual(math, wantMath) {
		t.Errorf("math:\n got  %+v\n want %+v", math, wantMath)
	}

	api := cfg.Servers["api"]
	if api.Endpoint != "https://fallback/mcp" || api.Headers["Authorization"] != "Bearer t" || api.Transport != TransportSSE {
		t.Errorf("api = %+v", api)
	}
	if api.MaxConcurrency != 20 {
		t.Errorf("api.MaxConcurrency = %d, want execution.default_provider_concurrency 20", api.MaxConcurrency)
	}

	p := cfg.Servers["pool"]
	if p.Strategy != StrategyPriority || p.MinHealthy != 2 || p.Description != "Pool" ||
		p.Health != (GroupHealth{4, 3}) || p.CircuitBreaker != (CircuitBreaker{5, 30 * time.Second}) {
		t.Errorf("pool = %+v", p)
	}
	if len(p.Members) != 2 || p.Members[0].ID != "a" || p.Members[0].Weight != 50 || p.Members[0].Priority != 2 ||
		p.Members[1].ID != "b" || p.Members[1].Weight != 1 || p.Members[1].Mode != ModeRemote {
		t.Errorf("pool members = %+v, %+v", p.Members[0], p.Members[1])
	}

	want := Config{
		Execution: Execution{MaxConcurrency: 100, DefaultProviderConcurrency: 20, MaxRequestBodyBytes: 16 << 20},
		Discovery: Discovery{
			Enabled: true, RefreshInterval: 15 * time.Second, AutoRegister: true,
			Sources: []Source{
				{Type: "docker", Mode: "additive", Filters: SourceFilters{ComposeProject: ComposeAuto}},
				{Type: "docker", Mode: "additive", Filters: SourceFilters{ComposeProject: "agents",
					Labels: map[string]string{"team": "a", "tier": ""}, Networks: []string{"front"}}},
				{Type: "filesystem", Mode: "authoritative", Path: "/etc/hangar/providers", Pattern: "*.yaml", Watch: true},
			},
			Security: DiscoverySecurity{RequireHealthCheck: true, QuarantineOnFailure: false},
		},
		Batch: Batch{MaxCalls: 10, MaxConcurrency: 5, DefaultTimeout: 30 * time.Second, MaxTimeout: 120 * time.Second,
			MaxResponseSizeBytes: 1024, MaxTotalResponseSizeByte: 4096,
			MaxContinuationBytes: 8192, ContinuationTTL: 30 * time.Second},
		Auth:         Auth{Enabled: true, RateLimit: RateLimit{RPS: 2.5, Burst: 5}, APIKeyHeader: "X-API-Key"},
		ConfigReload: Reload{Enabled: true, Interval: 2 * time.Second},
		Logging:      Logging{Level: "DEBUG", JSONFormat: false},
		Registry: Registry{
			URL: "http://registry.local:8080", CatalogFile: "/etc/hangar/catalog.json",
			VerifiedNamespaces: []string{"io.github.acme/", "io.github.other/", "io.github.x/one"},
			Timeout:            2500 * time.Millisecond, MaxHotLoaded: 3, IdleTTL: time.Minute,
			PackageTypes: []string{PackageOCI, PackageNPM, PackagePyPI},
		},
		Images: Images{Pull: PullAlways, AllowedRegistries: []string{"127.0.0.1:*", "docker.io"},
			Verify: &Verify{PublicKey: "/etc/hangar/cosign.pub"}},
		HTTP:       HTTPServer{SessionIdleTTL: 10 * time.Minute, MaxSessions: 50, MaxSessionsPerIdentity: 5},
		ToolAccess: ToolAccess{Mode: AccessFrontDoor},
		FrontDoor:  FrontDoor{Naming: NamingPrefixed, Prefetch: true, Discovery: DiscoveryList},
		DataDir:    "/var/lib/hangar",
	}
	gotRest := *cfg
	gotRest.Servers = nil
	if !reflect.DeepEqual(gotRest, want) {
		t.Errorf("global sections:\n got  %+v\n want %+v", gotRest, want)
	}
}

func TestParseEmptyIsDefault(t *testing.T) {
	t.Parallel()
	for _, yaml := range []string{"", "# nothing\n", "mcp_servers:\n", "mcp_servers: {}\n", "providers: {}\n"} {
		if got := mustParse(t, yaml); !reflect.DeepEqual(got, defaults()) {
			t.Errorf("Parse(%q) = %+v, want defaults %+v", yaml, got, defaults())
		}
	}
}

// Not parallel: Default reads the process environment.
func TestDefault(t *testing.T) {
	t.Setenv("HANGAR_DATA_DIR", "")
	if got := Default(); !reflect.DeepEqual(got, defaults()) || got.DataDir != "" {
		t.Errorf("Default() = %+v", got)
	}
	t.Setenv("HANGAR_DATA_DIR", "/data")
	if got := Default(); got.DataDir != "/data" {
		t.Errorf("Default().DataDir = %q, want $HANGAR_DATA_DIR", got.DataDir)
	}
}

func TestParseTools(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		tools string
		want  Tools
	}{
		{"policy", "{allow_list: ['add*', sub], deny_list: []}", Tools{AllowList: []string{"add*", "sub"}}},
		{"deny only", "{deny_list: ['rm*']}", Tools{DenyList: []string{"rm*"}}},
		{"predefined camelCase", "[{name: add, description: Add, inputSchema: {type: object, required: [a], properties: {a: {type: number}}}}]",
			Tools{Predefined: []ToolDef{{Name: "add", Description: "Add",
				InputSchema: json.RawMessage(`{"properties":{"a":{"type":"number"}},"required":["a"],"type":"object"}`)}}}},
		{"predefined snake_case", "[{name: add, input_schema: {type: object}}]",
			Tools{Predefined: []ToolDef{{Name: "add", InputSchema: json.RawMessage(`{"type":"object"}`)}}}},
		{"predefined without schema", "[{name: ping}]",
			Tools{Predefined: []ToolDef{{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)}}}},
		{"empty list", "[]", Tools{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := mustParse(t, dockerMath+"    tools: "+tt.tools+"\n").Servers["math"].Tools
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("tools:\n got  %+v\n want %+v", got, tt.want)
			}
		})
	}
}

func TestParseEnvironment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		yaml  string
		env   []string
		check func(*Config) bool
	}{
		{"expand set variable", dockerMath + "    env: {K: 'a-${V}-b'}\n", []string{"V=x"},
			func(c *Config) bool { return c.Servers["math"].Env["K"] == "a-x-b" }},
		{"expand default when unset", dockerMath + "    env: {K: '${V:-dflt}'}\n", nil,
			func(c *Config) bool { return c.Servers["math"].Env["K"] == "dflt" }},
		{"expand default when empty", dockerMath + "    env: {K: '${V:-dflt}'}\n", []string{"V="},
			func(c *Config) bool { return c.Servers["math"].Env["K"] == "dflt" }},
		{"set but empty without default", dockerMath + "    env: {K: '${V}'}\n", []string{"V="},
			func(c *Config) bool { return c.Servers["math"].Env["K"] == "" }},
		{"lone dollar kept", dockerMath + "    env: {K: 'pa$$word$'}\n", nil,
			func(c *Config) bool { return c.Servers["math"].Env["K"] == "pa$$word$" }},
		{"other keys are not expanded", dockerMath + "    description: '${V}'\n", nil,
			func(c *Config) bool { return c.Servers["math"].Description == "${V}" }},
		{"override string", "", []string{"HANGAR_LOGGING__LEVEL=DEBUG"},
			func(c *Config) bool { return c.Logging.Level == "DEBUG" }},
		{"override int", "execution: {max_concurrency: 9}\n", []string{"HANGAR_EXECUTION__MAX_CONCURRENCY=5"},
			func(c *Config) bool { return c.Execution.MaxConcurrency == 5 }},
		{"override bool and seconds", "", []string{"HANGAR_CONFIG_RELOAD__ENABLED=true", "HANGAR_CONFIG_RELOAD__INTERVAL_S=2.5"},
			func(c *Config) bool {
				return c.ConfigReload.Enabled && c.ConfigReload.Interval == 2500*time.Millisecond
			}},
		{"override data_dir", "data_dir: /from/file\n", []string{"HANGAR_DATA_DIR=/from/env"},
			func(c *Config) bool { return c.DataDir == "/from/env" }},
		{"override server field", dockerMath, []string{"HANGAR_MCP_SERVERS__MATH__IMAGE=other"},
			func(c *Config) bool { return c.Servers["math"].Image == "other" }},
		{"override follows providers alias", "providers:\n  math: {mode: docker, image: img}\n", []string{"HANGAR_MCP_SERVERS__MATH__PORT=81"},
			func(c *Config) bool { return c.Servers["math"].Port == 81 }},
		{"override via providers alias", dockerMath, []string{"HANGAR_PROVIDERS__MATH__PORT=82"},
			func(c *Config) bool { return c.Servers["math"].Port == 82 }},
		{"override default provider concurrency reaches servers", dockerMath, []string{"HANGAR_EXECUTION__DEFAULT_PROVIDER_CONCURRENCY=4"},
			func(c *Config) bool { return c.Servers["math"].MaxConcurrency == 4 }},
		{"empty override ignored", "", []string{"HANGAR_DATA_DIR="},
			func(c *Config) bool { return c.DataDir == "" }},
		{"other variables ignored", "", []string{"HANGARX=1", "hangar_logging__level=DEBUG", "PATH=/bin"},
			func(c *Config) bool { return c.Logging.Level == "INFO" }},
		{"later duplicate wins", dockerMath + "    env: {K: '${V}'}\n", []string{"V=1", "V=2"},
			func(c *Config) bool { return c.Servers["math"].Env["K"] == "2" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if cfg := mustParse(t, tt.yaml, tt.env...); !tt.check(cfg) {
				t.Errorf("unexpected config: %+v (servers %+v)", cfg, cfg.Servers)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "TestLoad", "config.yaml")
	cfg, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.Source != path {
		t.Errorf("Source = %q, want %q", cfg.Source, path)
	}
	if got := sortedKeys(cfg.Servers); !reflect.DeepEqual(got, []string{"math", "pool", "weather"}) {
		t.Errorf("servers = %v", got)
	}
	m := cfg.Servers["math"]
	if m.Mode != ModeDocker || m.Resources.MemoryBytes != 256<<20 || m.Resources.NanoCPUs != 5e8 ||
		m.Env["API_KEY"] != "none" || m.IdleTTL != 2*time.Minute || m.Tools.AllowList[1] != "sub*" {
		t.Errorf("math = %+v", m)
	}
	if p := cfg.Servers["pool"]; len(p.Members) != 2 || p.Members[1].Command[2] != "math_server" || p.Members[1].Priority != 2 {
		t.Errorf("pool = %+v", p)
	}
	if cfg.Logging.Level != "WARN" || cfg.Logging.JSONFormat {
		t.Errorf("logging = %+v", cfg.Logging)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		path string
		want func(error) bool
	}{
		{"syntax error names the file", filepath.Join("testdata", "TestLoad", "syntax.yaml"), func(err error) bool {
			var ve *ValidationError
			return errors.As(err, &ve) &&
				err.Error() == filepath.Join("testdata", "TestLoad", "syntax.yaml")+": line 4: mapping values are not allowed in this context"
		}},
		{"missing file", filepath.Join("testdata", "TestLoad", "missing.yaml"), func(err error) bool {
			return errors.Is(err, fs.ErrNotExist) && strings.HasPrefix(err.Error(), "reading config: ")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Load(tt.path); err == nil || !tt.want(err) {
				t.Errorf("Load(%q) error = %v", tt.path, err)
			}
		})
	}
}

// Not parallel: it sets MCP_CONFIG.
func TestResolvePath(t *testing.T) {
	tests := []struct {
		flag, env, want string
	}{
		{"", "", "./config.yaml"},
		{"", "/etc/hangar.yaml", "/etc/hangar.yaml"},
		{"flag.yaml", "/etc/hangar.yaml", "flag.yaml"},
		{"flag.yaml", "", "flag.yaml"},
	}
	for _, tt := range tests {
		t.Setenv("MCP_CONFIG", tt.env)
		if got := ResolvePath(tt.flag); got != tt.want {
			t.Errorf("ResolvePath(%q) with MCP_CONFIG=%q = %q, want %q", tt.flag, tt.env, got, tt.want)
		}
	}
}

func TestValidationErrorFormat(t *testing.T) {
	t.Parallel()
	ve := newValidationError([]Problem{
		{Path: "b", Message: "two"},
		{Path: "a.x", Message: "one"},
		{Path: "b", Message: "two"},
		{Path: "a", Message: "zero"},
	})
	if got, want := ve.Error(), "a: zero\na.x: one\nb: two"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if newValidationError(nil) != nil {
		t.Error("no problems must mean no error")
	}
}
