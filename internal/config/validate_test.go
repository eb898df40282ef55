package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// Fixtures that cases extend with more keys at the server's indentation.
const (
	dockerMath = "mcp_servers:\n  math:\n    mode: docker\n    image: img\n"
	remoteAPI  = "mcp_servers:\n  api:\n    mode: remote\n    endpoint: https://example.com/mcp\n"
	subproc    = "mcp_servers:\n  sub:\n    mode: subprocess\n    command: python -m x\n"
	pool       = "mcp_servers:\n  pool:\n    mode: group\n    members:\n      - {id: m1, mode: docker, image: img}\n"
)

// TestParseProblems checks every rejection path, and that a config is
// rejected with exactly the listed problems (no more, no fewer, in order).
func TestParseProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		env  []string
		want []string
	}{
		// Unknown keys at every level.
		{"unknown top-level key", "foo: 1\n", nil, []string{"foo: unknown key"}},
		{"unknown server key", dockerMath + "    foo: 1\n", nil, []string{"mcp_servers.math.foo: unknown key"}},
		{"unknown member key", "mcp_servers:\n  pool:\n    mode: group\n    members: [{id: m1, mode: docker, image: img, foo: 1}]\n", nil,
			[]string{"mcp_servers.pool.members[0].foo: unknown key"}},
		{"unknown resources key", dockerMath + "    resources: {disk: 1g}\n", nil, []string{"mcp_servers.math.resources.disk: unknown key"}},
		{"unknown tools key", dockerMath + "    tools: {allow: [a]}\n", nil, []string{"mcp_servers.math.tools.allow: unknown key"}},
		{"unknown predefined tool key", dockerMath + "    tools: [{name: a, schema: {}}]\n", nil, []string{"mcp_servers.math.tools[0].schema: unknown key"}},
		{"unknown health key", pool + "    health: {x: 1}\n", nil, []string{"mcp_servers.pool.health.x: unknown key"}},
		{"unknown circuit_breaker key", pool + "    circuit_breaker: {x: 1}\n", nil, []string{"mcp_servers.pool.circuit_breaker.x: unknown key"}},
		{"unknown execution key", "execution: {x: 1}\n", nil, []string{"execution.x: unknown key"}},
		{"unknown discovery key", "discovery: {x: 1}\n", nil, []string{"discovery.x: unknown key"}},
		{"unknown discovery source key", "discovery: {sources: [{type: docker, x: 1}]}\n", nil, []string{"discovery.sources[0].x: unknown key"}},
		{"unknown discovery security key", "discovery: {security: {x: 1}}\n", nil, []string{"discovery.security.x: unknown key"}},
		{"unknown batch key", "batch: {x: 1}\n", nil, []string{"batch.x: unknown key"}},
		{"unknown auth key", "auth: {api_key: {}}\n", nil, []string{"auth.api_key: unknown key"}},
		{"unknown rate_limit key", "auth: {rate_limit: {x: 1}}\n", nil, []string{"auth.rate_limit.x: unknown key"}},
		{"unknown config_reload key", "config_reload: {x: 1}\n", nil, []string{"config_reload.x: unknown key"}},
		{"unknown logging key", "logging: {file: x}\n", nil, []string{"logging.file: unknown key"}},

		// Shapes.
		{"section not a mapping", "logging: [a]\n", nil, []string{"logging: must be a mapping (got a list)"}},
		{"servers not a mapping", "mcp_servers: [a]\n", nil, []string{"mcp_servers: must be a mapping of server id to server (got a list)"}},
		{"server not a mapping", "mcp_servers: {math: docker}\n", nil, []string{
			`mcp_servers.math: must be a mapping (got "docker")`, "mcp_servers.math.mode: required"}},
		{"invalid server id", "mcp_servers:\n  -bad:\n    mode: docker\n    image: img\n", nil,
			[]string{"mcp_servers.-bad: invalid server id: must match ^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$"}},
		{"server id too long", "mcp_servers:\n  " + strings.Repeat("a", 64) + ": {mode: docker, image: img}\n", nil,
			[]string{"mcp_servers." + strings.Repeat("a", 64) + ": invalid server id: must match ^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$"}},
		{"alias conflict", dockerMath + "providers: {}\n", nil,
			[]string{"providers: is an alias of mcp_servers; use only one of mcp_servers and providers"}},
		{"alias used alone reports its own path", "providers:\n  math: {mode: docker}\n", nil,
			[]string{"providers.math.image: required for mode docker"}},

		// Types.
		{"int not a number", "execution: {max_concurrency: x}\n", nil, []string{`execution.max_concurrency: must be an integer (got "x")`}},
		{"int is fractional", "execution: {max_concurrency: 2.5}\n", nil, []string{"execution.max_concurrency: must be an integer (got 2.5)"}},
		{"bool not a bool", "logging: {json_format: maybe}\n", nil, []string{`logging.json_format: must be true or false (got "maybe")`}},
		{"seconds not a number", dockerMath + "    idle_ttl_s: 5m\n", nil, []string{`mcp_servers.math.idle_ttl_s: must be a number of seconds (got "5m")`}},
		{"float not a number", "auth: {rate_limit: {rps: fast}}\n", nil, []string{`auth.rate_limit.rps: must be a number (got "fast")`}},
		{"string is a list", dockerMath + "    user: [a]\n", nil, []string{"mcp_servers.math.user: must be a string (got a list)"}},
		{"list is a string", dockerMath + "    args: --verbose\n", nil, []string{`mcp_servers.math.args: must be a list of strings (got "--verbose")`}},
		{"list element not a string", dockerMath + "    args: [[a]]\n", nil, []string{"mcp_servers.math.args[0]: must be a string (got a list)"}},
		{"map is a list", dockerMath + "    env: [A=1]\n", nil, []string{"mcp_servers.math.env: must be a mapping of strings (got a list)"}},
		{"map value not a string", dockerMath + "    env: {A: {b: 1}}\n", nil, []string{"mcp_servers.math.env.A: must be a string (got a mapping)"}},
		{"members not a list", "mcp_servers:\n  pool: {mode: group, members: {m1: {}}}\n", nil,
			[]string{"mcp_servers.pool.members: must be a list (got a mapping)"}},
		{"member not a mapping", "mcp_servers:\n  pool: {mode: group, members: [m1]}\n", nil,
			[]string{`mcp_servers.pool.members[0]: must be a mapping (got "m1")`}},
		{"tool not a mapping", dockerMath + "    tools: [add]\n", nil,
			[]string{`mcp_servers.math.tools[0]: must be a mapping with name, description, inputSchema (got "add")`}},
		{"sources not a list", "discovery: {sources: {type: docker}}\n", nil, []string{"discovery.sources: must be a list (got a mapping)"}},
		{"source not a mapping", "discovery: {sources: [docker]}\n", nil, []string{`discovery.sources[0]: must be a mapping (got "docker")`}},
		{"env name with =", dockerMath + "    env: {'A=B': x}\n", nil, []string{"mcp_servers.math.env.A=B: invalid environment variable name"}},
		{"tools neither form", dockerMath + "    tools: all\n", nil,
			[]string{`mcp_servers.math.tools: must be a mapping {allow_list, deny_list} or a list of tool definitions (got "all")`}},

		// Ranges.
		{"idle_ttl_s low", dockerMath + "    idle_ttl_s: 0\n", nil, []string{"mcp_servers.math.idle_ttl_s: must be 1..86400 (got 0)"}},
		{"idle_ttl_s high", dockerMath + "    idle_ttl_s: 86401\n", nil, []string{"mcp_servers.math.idle_ttl_s: must be 1..86400 (got 86401)"}},
		{"health_check_interval_s", dockerMath + "    health_check_interval_s: 3601\n", nil, []string{"mcp_servers.math.health_check_interval_s: must be 1..3600 (got 3601)"}},
		{"max_consecutive_failures", dockerMath + "    max_consecutive_failures: 101\n", nil, []string{"mcp_servers.math.max_consecutive_failures: must be 1..100 (got 101)"}},
		{"server max_concurrency", dockerMath + "    max_concurrency: 1001\n", nil, []string{"mcp_servers.math.max_concurrency: must be 1..1000 (got 1001)"}},
		{"start_timeout_s", dockerMath + "    start_timeout_s: 601\n", nil, []string{"mcp_servers.math.start_timeout_s: must be 1..600 (got 601)"}},
		{"call_timeout_s", dockerMath + "    call_timeout_s: 0.5\n", nil, []string{"mcp_servers.math.call_timeout_s: must be 1..3600 (got 0.5)"}},
		{"port low", dockerMath + "    port: 0\n", nil, []string{"mcp_servers.math.port: must be 1..65535 (got 0)"}},
		{"port high", dockerMath + "    port: 65536\n", nil, []string{"mcp_servers.math.port: must be 1..65535 (got 65536)"}},
		{"memory below minimum", dockerMath + "    resources: {memory: 3m}\n", nil, []string{`mcp_servers.math.resources.memory: must be at least 4m (got "3m")`}},
		{"memory not a size", dockerMath + "    resources: {memory: lots}\n", nil,
			[]string{`mcp_servers.math.resources.memory: must be a size like 512m (units b, k, m, g) (got "lots")`}},
		{"cpu low", dockerMath + "    resources: {cpu: 0.001}\n", nil, []string{"mcp_servers.math.resources.cpu: must be 0.01..64 (got 0.001)"}},
		{"cpu high string", dockerMath + "    resources: {cpu: \"65\"}\n", nil, []string{`mcp_servers.math.resources.cpu: must be 0.01..64 (got 65)`}},
		{"cpu not a number", dockerMath + "    resources: {cpu: two}\n", nil, []string{`mcp_servers.math.resources.cpu: must be a number of CPUs (got "two")`}},
		{"pids", dockerMath + "    resources: {pids: 32769}\n", nil, []string{"mcp_servers.math.resources.pids: must be 1..32768 (got 32769)"}},
		{"weight", "mcp_servers:\n  pool: {mode: group, members: [{id: m1, mode: docker, image: img, weight: 1001}]}\n", nil,
			[]string{"mcp_servers.pool.members[0].weight: must be 1..1000 (got 1001)"}},
		{"priority", "mcp_servers:\n  pool: {mode: group, members: [{id: m1, mode: docker, image: img, priority: 0}]}\n", nil,
			[]string{"mcp_servers.pool.members[0].priority: must be 1..100 (got 0)"}},
		{"min_healthy zero", pool + "    min_healthy: 0\n", nil, []string{"mcp_servers.pool.min_healthy: must be 1..1000 (got 0)"}},
		{"min_healthy above members", pool + "    min_healthy: 2\n", nil,
			[]string{"mcp_servers.pool.min_healthy: must be at most the number of members, 1 (got 2)"}},
		{"unhealthy_threshold", pool + "    health: {unhealthy_threshold: 101}\n", nil, []string{"mcp_servers.pool.health.unhealthy_threshold: must be 1..100 (got 101)"}},
		{"healthy_threshold", pool + "    health: {healthy_threshold: 0}\n", nil, []string{"mcp_servers.pool.health.healthy_threshold: must be 1..100 (got 0)"}},
		{"failure_threshold", pool + "    circuit_breaker: {failure_threshold: 1001}\n", nil,
			[]string{"mcp_servers.pool.circuit_breaker.failure_threshold: must be 1..1000 (got 1001)"}},
		{"reset_timeout_s", pool + "    circuit_breaker: {reset_timeout_s: 3601}\n", nil,
			[]string{"mcp_servers.pool.circuit_breaker.reset_timeout_s: must be 1..3600 (got 3601)"}},
		{"execution max_concurrency", "execution: {max_concurrency: 10001}\n", nil, []string{"execution.max_concurrency: must be 1..10000 (got 10001)"}},
		{"execution default_provider_concurrency", "execution: {default_provider_concurrency: 0}\n", nil,
			[]string{"execution.default_provider_concurrency: must be 1..1000 (got 0)"}},
		{"refresh_interval_s", "discovery: {refresh_interval_s: 0}\n", nil, []string{"discovery.refresh_interval_s: must be 1..86400 (got 0)"}},
		{"batch ranges", "batch: {max_calls: 0, max_concurrency: 0, default_timeout: 0, max_timeout: 3601, max_response_size_bytes: 0, max_total_response_size_bytes: 0}\n", nil,
			[]string{
				"batch.default_timeout: must be 1..3600 (got 0)",
				"batch.max_calls: must be 1..10000 (got 0)",
				"batch.max_concurrency: must be 1..10000 (got 0)",
				"batch.max_response_size_bytes: must be 1..1073741824 (got 0)",
				"batch.max_timeout: must be 1..3600 (got 3601)",
				"batch.max_total_response_size_bytes: must be 1..1073741824 (got 0)",
			}},
		{"memory bounds", "execution: {max_request_body_bytes: 1023}\nbatch: {max_continuation_bytes: 17179869185, continuation_ttl_s: 0}\n", nil,
			[]string{
				"batch.continuation_ttl_s: must be 1..86400 (got 0)",
				"batch.max_continuation_bytes: must be 1024..17179869184 (got 17179869185)",
				"execution.max_request_body_bytes: must be 1024..1073741824 (got 1023)",
			}},
		{"batch default above max", "batch: {default_timeout: 120, max_timeout: 60}\n", nil,
			[]string{"batch.default_timeout: must not exceed max_timeout (2m0s > 1m0s)"}},
		{"rate limit", "auth: {rate_limit: {rps: 0, burst: 0}}\n", nil,
			[]string{"auth.rate_limit.burst: must be 1..1000000 (got 0)", "auth.rate_limit.rps: must be 0.01..1000000 (got 0)"}},
		{"config_reload interval_s", "config_reload: {interval_s: 0}\n", nil, []string{"config_reload.interval_s: must be 1..3600 (got 0)"}},

		// Enums.
		{"mode", "mcp_servers:\n  math: {mode: vm}\n", nil,
			[]string{`mcp_servers.math.mode: must be one of docker, container, remote, subprocess, group (got "vm")`}},
		{"transport", dockerMath + "    transport: grpc\n", nil, []string{`mcp_servers.math.transport: must be one of stdio, http, sse (got "grpc")`}},
		{"remote transport stdio", remoteAPI + "    transport: stdio\n", nil, []string{`mcp_servers.api.transport: must be one of http, sse for mode remote (got "stdio")`}},
		{"protocol", dockerMath + "    protocol: v2\n", nil, []string{`mcp_servers.math.protocol: must be one of auto, legacy, modern (got "v2")`}},
		{"strategy", pool + "    strategy: fastest\n", nil,
			[]string{`mcp_servers.pool.strategy: must be one of round_robin, weighted_round_robin, least_connections, random, priority (got "fastest")`}},
		{"logging level", "logging: {level: TRACE}\n", nil, []string{`logging.level: must be one of DEBUG, INFO, WARN, WARNING, ERROR (got "TRACE")`}},
		{"source type", "discovery: {sources: [{type: k8s}]}\n", nil, []string{`discovery.sources[0].type: must be one of docker, swarm, filesystem (got "k8s")`}},
		{"source mode", "discovery: {sources: [{type: docker, mode: exclusive}]}\n", nil,
			[]string{`discovery.sources[0].mode: must be one of additive, authoritative (got "exclusive")`}},

		// Required fields per mode.
		{"mode required", "mcp_servers:\n  math: {image: img}\n", nil, []string{"mcp_servers.math.mode: required"}},
		{"mode null", "mcp_servers:\n  math: {mode: null, image: img}\n", nil, []string{"mcp_servers.math.mode: required"}},
		{"image required", "mcp_servers:\n  math: {mode: docker}\n", nil, []string{"mcp_servers.math.image: required for mode docker"}},
		{"image required for container alias", "mcp_servers:\n  math: {mode: container}\n", nil, []string{"mcp_servers.math.image: required for mode docker"}},
		{"image empty", "mcp_servers:\n  math: {mode: docker, image: ''}\n", nil, []string{"mcp_servers.math.image: must not be empty"}},
		{"command required", "mcp_servers:\n  sub: {mode: subprocess}\n", nil, []string{"mcp_servers.sub.command: required for mode subprocess"}},
		{"command empty", "mcp_servers:\n  sub: {mode: subprocess, command: []}\n", nil, []string{"mcp_servers.sub.command: must not be empty"}},
		{"endpoint required", "mcp_servers:\n  api: {mode: remote}\n", nil, []string{"mcp_servers.api.endpoint: required for mode remote"}},
		{"members required", "mcp_servers:\n  pool: {mode: group}\n", nil, []string{"mcp_servers.pool.members: required for mode group"}},
		{"members empty", "mcp_servers:\n  pool: {mode: group, members: []}\n", nil, []string{"mcp_servers.pool.members: must have at least one member"}},
		{"tool name required", dockerMath + "    tools: [{description: x}]\n", nil, []string{"mcp_servers.math.tools[0].name: required"}},
		{"tool name null", dockerMath + "    tools: [{name: null}]\n", nil, []string{"mcp_servers.math.tools[0].name: required"}},
		{"tool name empty", dockerMath + "    tools: [{name: ''}]\n", nil, []string{"mcp_servers.math.tools[0].name: must not be empty"}},
		{"tool name not a string", dockerMath + "    tools: [{name: [a]}]\n", nil, []string{"mcp_servers.math.tools[0].name: must be a string (got a list)"}},
		{"duplicate tool name", dockerMath + "    tools: [{name: a}, {name: a}]\n", nil, []string{`mcp_servers.math.tools[1].name: duplicate tool name "a"`}},
		{"inputSchema not a mapping", dockerMath + "    tools: [{name: a, inputSchema: object}]\n", nil,
			[]string{`mcp_servers.math.tools[0].inputSchema: must be a mapping (a JSON Schema object) (got "object")`}},
		{"both schema spellings", dockerMath + "    tools: [{name: a, inputSchema: {}, input_schema: {}}]\n", nil,
			[]string{"mcp_servers.math.tools[0].input_schema: cannot be used together with inputSchema"}},
		{"source type required", "discovery: {sources: [{mode: additive}]}\n", nil, []string{"discovery.sources[0].type: required"}},
		{"filesystem source path required", "discovery: {sources: [{type: filesystem}]}\n", nil,
			[]string{"discovery.sources[0].path: required for type filesystem"}},
		{"filesystem source bad pattern", "discovery: {sources: [{type: filesystem, path: /p, pattern: '[a'}]}\n", nil,
			[]string{`discovery.sources[0].pattern: invalid glob pattern "[a": syntax error in pattern`}},
		{"docker source with path", "discovery: {sources: [{type: docker, path: /p, watch: true}]}\n", nil,
			[]string{"discovery.sources[0].path: not allowed for type docker", "discovery.sources[0].watch: not allowed for type docker"}},
		{"data_dir empty", "data_dir: ''\n", nil, []string{"data_dir: must not be empty"}},
		{"data_dir blank", "data_dir: '  '\n", nil, []string{"data_dir: must not be empty"}},
		{"data_dir tilde", "data_dir: ~/hangar\n", nil, []string{"data_dir: \"~/hangar\" starts with ~, which only a shell expands: write the full path"}},
		{"data_dir not a string", "data_dir: [a]\n", nil, []string{"data_dir: must be a string (got a list)"}},

		// Keys that belong to another mode.
		{"image on remote", remoteAPI + "    image: img\n", nil, []string{"mcp_servers.api.image: not allowed for mode remote"}},
		{"env on remote", remoteAPI + "    env: {A: b}\n", nil, []string{"mcp_servers.api.env: not allowed for mode remote"}},
		{"port on remote", remoteAPI + "    port: 80\n", nil, []string{"mcp_servers.api.port: not allowed for mode remote"}},
		{"endpoint on docker", dockerMath + "    endpoint: https://x\n", nil, []string{"mcp_servers.math.endpoint: not allowed for mode docker"}},
		{"headers on docker", dockerMath + "    headers: {A: b}\n", nil, []string{"mcp_servers.math.headers: not allowed for mode docker"}},
		{"members on docker", dockerMath + "    members: []\n", nil, []string{"mcp_servers.math.members: not allowed for mode docker"}},
		{"strategy on docker", dockerMath + "    strategy: random\n", nil, []string{"mcp_servers.math.strategy: not allowed for mode docker"}},
		{"image on subprocess", subproc + "    image: img\n", nil, []string{"mcp_servers.sub.image: not allowed for mode subprocess"}},
		{"command on docker", dockerMath + "    command: [x]\n", nil, []string{"mcp_servers.math.command: not allowed for mode docker"}},
		{"allow_docker_socket on remote", remoteAPI + "    allow_docker_socket: true\n", nil, []string{"mcp_servers.api.allow_docker_socket: not allowed for mode remote"}},
		{"allow_docker_socket on subprocess", subproc + "    allow_docker_socket: true\n", nil, []string{"mcp_servers.sub.allow_docker_socket: not allowed for mode subprocess"}},
		{"allow_docker_socket not a boolean", dockerMath + "    allow_docker_socket: please\n", nil, []string{`mcp_servers.math.allow_docker_socket: must be true or false (got "please")`}},
		{"lifecycle on group", pool + "    idle_ttl_s: 5\n", nil, []string{"mcp_servers.pool.idle_ttl_s: not allowed for mode group"}},
		{"member keys at top level", dockerMath + "    id: x\n    weight: 2\n    priority: 1\n", nil, []string{
			"mcp_servers.math.id: only allowed in group members",
			"mcp_servers.math.priority: only allowed in group members",
			"mcp_servers.math.weight: only allowed in group members",
		}},
		{"bad mode still reports other problems", "mcp_servers:\n  math: {mode: vm, port: 0, nope: 1}\n", nil, []string{
			"mcp_servers.math.mode: must be one of docker, container, remote, subprocess, group (got \"vm\")",
			"mcp_servers.math.nope: unknown key",
			"mcp_servers.math.port: must be 1..65535 (got 0)",
		}},

		// Group member rules.
		{"member id required", "mcp_servers:\n  pool: {mode: group, members: [{mode: docker, image: img}]}\n", nil,
			[]string{"mcp_servers.pool.members[0].id: required"}},
		{"member id null", "mcp_servers:\n  pool: {mode: group, members: [{id: ~, mode: docker, image: img}]}\n", nil,
			[]string{"mcp_servers.pool.members[0].id: required"}},
		{"member id not a string", "mcp_servers:\n  pool: {mode: group, members: [{id: {a: 1}, mode: docker, image: img}]}\n", nil,
			[]string{"mcp_servers.pool.members[0].id: must be a string (got a mapping)"}},
		{"null keys of other modes are ignored", dockerMath + "    endpoint: ~\n    weight: ~\n    bogus: ~\n", nil,
			[]string{"mcp_servers.math.bogus: unknown key"}},
		{"member id invalid", "mcp_servers:\n  pool: {mode: group, members: [{id: 'a b', mode: docker, image: img}]}\n", nil,
			[]string{`mcp_servers.pool.members[0].id: must match ^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$ (got "a b")`}},
		{"member id duplicate", pool + "      - {id: m1, mode: docker, image: img}\n", nil,
			[]string{`mcp_servers.pool.members[1].id: duplicate member id "m1" (also mcp_servers.pool.members[0])`}},
		{"member id clashes with server", pool + "  m1: {mode: docker, image: img}\n", nil,
			[]string{`mcp_servers.pool.members[0].id: "m1" is already a top-level server id`}},
		{"member id in two groups", pool + "  pool2: {mode: group, members: [{id: m1, mode: docker, image: img}]}\n", nil,
			[]string{`mcp_servers.pool2.members[0].id: "m1" is already a member of group pool`}},
		{"member is a group", pool + "      - {id: m2, mode: group}\n", nil,
			[]string{"mcp_servers.pool.members[1].mode: group members may not be groups"}},
		{"member mode rules apply", pool + "      - {id: m2, mode: remote}\n", nil,
			[]string{"mcp_servers.pool.members[1].endpoint: required for mode remote"}},

		// Values with their own syntax.
		{"path without slash", dockerMath + "    path: mcp\n", nil, []string{`mcp_servers.math.path: must start with / (got "mcp")`}},
		{"endpoint not http", remoteAPI[:len(remoteAPI)-len("    endpoint: https://example.com/mcp\n")] + "    endpoint: ftp://x/mcp\n", nil,
			[]string{`mcp_servers.api.endpoint: must be an http(s) URL (got "ftp://x/mcp")`}},
		{"endpoint without host", "mcp_servers:\n  api: {mode: remote, endpoint: 'https:///mcp'}\n", nil,
			[]string{`mcp_servers.api.endpoint: must be an http(s) URL (got "https:///mcp")`}},
		{"network host rejected", dockerMath + "    network: host\n", nil,
			[]string{"mcp_servers.math.network: host networking is not allowed: it bypasses container isolation"}},
		{"network container mode rejected", dockerMath + "    network: 'container:other'\n", nil,
			[]string{`mcp_servers.math.network: must be none, bridge or a network name (got "container:other")`}},
		{"volume relative host", dockerMath + "    volumes: ['data:/data']\n", nil,
			[]string{`mcp_servers.math.volumes[0]: host path must be absolute (got "data:/data")`}},
		{"volume relative container", dockerMath + "    volumes: ['/srv:data']\n", nil,
			[]string{`mcp_servers.math.volumes[0]: container path must be absolute (got "/srv:data")`}},
		{"volume bad mode", dockerMath + "    volumes: ['/srv:/data:rx']\n", nil,
			[]string{`mcp_servers.math.volumes[0]: mode must be ro or rw (got "/srv:/data:rx")`}},
		{"volume without container path", dockerMath + "    volumes: ['/srv']\n", nil,
			[]string{`mcp_servers.math.volumes[0]: must be host:container[:ro|rw] (got "/srv")`}},

		// Images.
		{"pull policy unknown", dockerMath + "    pull: sometimes\n", nil,
			[]string{`mcp_servers.math.pull: must be one of if_not_present, always, never (got "sometimes")`}},
		{"pull not for remote", remoteAPI + "    pull: always\n", nil,
			[]string{"mcp_servers.api.pull: not allowed for mode remote"}},
		{"global pull unknown", "images: {pull: later}\n", nil,
			[]string{`images.pull: must be one of if_not_present, always, never (got "later")`}},
		{"image reference invalid", "mcp_servers:\n  math: {mode: docker, image: 'Bad/Name'}\n", nil,
			[]string{`mcp_servers.math.image: not a valid image reference "Bad/Name": invalid reference format: repository name (Name) must be lowercase`}},
		{"registry_auth needs both", dockerMath + "    registry_auth: {}\n", nil, []string{
			"mcp_servers.math.registry_auth.password_file: required: a file holding the password or token (never the secret itself)",
			"mcp_servers.math.registry_auth.username: required"}},
		{"registry_auth refuses inline secrets", dockerMath + "    registry_auth: {username: u, password_file: /f, password: hunter2}\n", nil,
			[]string{"mcp_servers.math.registry_auth.password: secrets are not written in the config; put it in a file and use password_file"}},
		{"registry_auth unknown key", dockerMath + "    registry_auth: {username: u, password_file: /f, realm: x}\n", nil,
			[]string{"mcp_servers.math.registry_auth.realm: unknown key"}},
		{"verify needs a key", dockerMath + "    verify: {}\n", nil,
			[]string{"mcp_servers.math.verify.public_key: required: a PEM file holding the cosign public key"}},
		{"global verify unknown key", "images: {verify: {public_key: k, keyless: true}}\n", nil,
			[]string{"images.verify.keyless: unknown key"}},
		{"allowed_registries bad glob", "images: {allowed_registries: ['[a']}\n", nil,
			[]string{`images.allowed_registries[0]: invalid glob "[a": want a registry host pattern such as "docker.io" or "*.example.com"`}},
		{"allowed_registries empty", "images: {allowed_registries: []}\n", nil,
			[]string{`images.allowed_registries: must not be empty (use ["*"] to allow every registry)`}},
		{"pin_digest not a bool", dockerMath + "    pin_digest: maybe\n", nil,
			[]string{`mcp_servers.math.pin_digest: must be true or false (got "maybe")`}},
		{"unknown images key", "images: {pul: always}\n", nil, []string{"images.pul: unknown key"}},

		// ${VAR} expansion.
		{"env var missing", dockerMath + "    env: {API_KEY: '${API_KEY}'}\n", nil,
			[]string{"mcp_servers.math.env.API_KEY: environment variable API_KEY is not set"}},
		{"header var missing", remoteAPI + "    headers: {Authorization: 'Bearer ${TOKEN}'}\n", nil,
			[]string{"mcp_servers.api.headers.Authorization: environment variable TOKEN is not set"}},
		{"endpoint var missing", "mcp_servers:\n  api: {mode: remote, endpoint: '${BASE}/mcp'}\n", nil,
			[]string{"mcp_servers.api.endpoint: environment variable BASE is not set"}},
		{"member env var missing", "mcp_servers:\n  pool: {mode: group, members: [{id: m1, mode: docker, image: img, env: {K: '${NOPE}'}}]}\n", nil,
			[]string{"mcp_servers.pool.members[0].env.K: environment variable NOPE is not set"}},
		{"unterminated reference", dockerMath + "    env: {K: '${OOPS'}\n", nil,
			[]string{`mcp_servers.math.env.K: unterminated ${ in "${OOPS"`}},
		{"invalid reference", dockerMath + "    env: {K: '${1X}'}\n", nil,
			[]string{"mcp_servers.math.env.K: invalid environment variable reference ${1X}"}},

		// HANGAR_ environment overrides.
		{"override bad int", "", []string{"HANGAR_EXECUTION__MAX_CONCURRENCY=x"},
			[]string{`execution.max_concurrency: must be an integer (got "x") (from environment variable HANGAR_EXECUTION__MAX_CONCURRENCY)`}},
		{"override out of range", dockerMath, []string{"HANGAR_MCP_SERVERS__MATH__IDLE_TTL_S=0"},
			[]string{"mcp_servers.math.idle_ttl_s: must be 1..86400 (got 0) (from environment variable HANGAR_MCP_SERVERS__MATH__IDLE_TTL_S)"}},
		{"override bad bool", "", []string{"HANGAR_LOGGING__JSON_FORMAT=sometimes"},
			[]string{`logging.json_format: must be true or false (got "sometimes") (from environment variable HANGAR_LOGGING__JSON_FORMAT)`}},
		{"override unknown key", "", []string{"HANGAR_NOPE=1"},
			[]string{"nope: unknown key (from environment variable HANGAR_NOPE)"}},
		{"override unknown nested key", "", []string{"HANGAR_LOGGING__COLOR=1"},
			[]string{"logging.color: unknown key (from environment variable HANGAR_LOGGING__COLOR)"}},
		{"override creates incomplete server", "", []string{"HANGAR_MCP_SERVERS__NEW__IMAGE=x"},
			[]string{"mcp_servers.new.mode: required (from environment variable HANGAR_MCP_SERVERS__NEW__IMAGE)"}},

		// Syntax.
		{"yaml syntax", "a: 1\nb: 2\nc: d: e\n", nil,
			[]string{"config: line 3: mapping values are not allowed in this context"}},
		{"yaml not a mapping", "- a\n", nil,
			[]string{"config: line 1: cannot unmarshal !!seq into map[string]interface {}"}},

		// Several problems at once, sorted by path.
		{"all problems together", "zzz: 1\nmcp_servers:\n  b: {mode: docker}\n  a: {mode: remote, endpoint: x}\nexecution: {max_concurrency: 0}\n", nil, []string{
			"execution.max_concurrency: must be 1..10000 (got 0)",
			`mcp_servers.a.endpoint: must be an http(s) URL (got "x")`,
			"mcp_servers.b.image: required for mode docker",
			"zzz: unknown key",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(tt.yaml), tt.env)
			if err == nil {
				t.Fatalf("Parse succeeded (%d servers), want problems:\n%s", len(cfg.Servers), strings.Join(tt.want, "\n"))
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %T %q is not a *ValidationError", err, err)
			}
			var gotLines []string
			for _, p := range ve.Problems {
				gotLines = append(gotLines, p.String())
			}
			if !slices.Equal(gotLines, tt.want) {
				t.Errorf("problems:\n  got:  %q\n  want: %q", gotLines, tt.want)
			}
			if err.Error() != strings.Join(tt.want, "\n") {
				t.Errorf("Error() = %q, want the problems one per line", err.Error())
			}
		})
	}
}
