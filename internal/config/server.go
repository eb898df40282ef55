package config

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
)

const idPattern = `^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$`

func idPatternText() string { return idPattern }

// serversDoc describes mcp_servers and its alias.
var serversDoc = map[string]string{
	serversKey: "The MCP servers the gateway serves, by server ID: each a container (docker), a remote endpoint, a child process (subprocess) or a group.",
	aliasKey:   "The older name of mcp_servers (the Python MCP Hangar's); use one of the two.",
}

var (
	idRe      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(idPattern) })
	networkRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`) })
)

// Which server keys each mode accepts. A key accepted by no mode is
// "unknown"; one accepted by another mode is "not allowed for mode X",
// which tells the user the key is right but misplaced.
var (
	commonKeys    = []string{"mode", "description", "tools", "prefix", "expose"}
	lifecycleKeys = []string{"idle_ttl_s", "health_check_interval_s", "max_consecutive_failures",
		"max_concurrency", "start_timeout_s", "call_timeout_s"}
	processKeys = []string{"env", "env_files", "transport", "port", "path", "protocol"}
	modeKeys    = map[string][]string{
		ModeDocker:     {"image", "package", "args", "volumes", "resources", "network", "read_only", "user", "pull", "registry_auth", "pin_digest", "verify", "allow_docker_socket", "egress", "upstream_auth", "env_from_upstream_auth"},
		ModeSubprocess: {"command"},
		ModeRemote:     {"endpoint", "headers", "transport", "protocol", "upstream_auth"},
		ModeGroup:      {"strategy", "min_healthy", "health", "circuit_breaker", "members"},
	}
	memberKeys = []string{"id", "weight", "priority"}
)

func modeAllows(mode, key string) bool {
	switch {
	case slices.Contains(commonKeys, key):
		return true
	case slices.Contains(lifecycleKeys, key):
		return mode != ModeGroup
	case slices.Contains(processKeys, key) && (mode == ModeDocker || mode == ModeSubprocess):
		return true
	}
	return slices.Contains(modeKeys[mode], key)
}

func isServerKey(key string) bool {
	for _, m := range []string{ModeDocker, ModeSubprocess, ModeRemote, ModeGroup} {
		if modeAllows(m, key) {
			return true
		}
	}
	return false
}

// servers decodes the mcp_servers (or providers) mapping.
func (d *decoder) servers(ss *section, exec Execution) map[string]*Server {
	out := map[string]*Server{}
	p, m := ss.path, ss.m
	top := make(map[string]bool, len(m))
	for id := range m {
		top[id] = true
	}
	for _, id := range sortedKeys(m) {
		es := ss.entry(id, m[id], d.serverNode())
		if !idRe().MatchString(id) {
			d.add(es.path, "invalid server id: must match %s", idPattern)
		}
		s := d.server(es, exec, false, top)
		s.ID = id
		out[id] = s
	}
	// A member is a provider of its own: one ID, one group.
	owner := map[string]string{}
	for _, id := range sortedKeys(m) {
		for i, mem := range out[id].Members {
			if mem.ID == "" {
				continue
			}
			if g, dup := owner[mem.ID]; dup && g != id {
				d.add(join(index(join(join(p, id), "members"), i), "id"), "%q is already a member of group %s", mem.ID, g)
			} else {
				owner[mem.ID] = id
			}
		}
	}
	return out
}

// serverNode is what the tracer records a server's keys under.
func (d *decoder) serverNode() *keyDef {
	if d.tr == nil {
		return nil
	}
	return d.tr.server
}

// server decodes one server or group member from s; top holds the
// top-level server IDs that member IDs may not reuse.
func (d *decoder) server(s *section, exec Execution, member bool, top map[string]bool) *Server {
	if t := s.t; t != nil {
		t.server, t.ctx = true, ctxTop
		if member {
			t.ctx = ctxMember
		}
		d.tr.at[s.path] = t.node
	}
	const modeDoc = "How the server runs: docker (alias container) a container the gateway starts; remote an MCP endpoint it connects to; subprocess a child process; group a pool of member servers behind one ID."
	var mode string
	if !s.has("mode") {
		s.def("mode", modeDoc, "string")
		s.take("mode")
		d.add(s.at("mode"), "required")
	} else if s.enum("mode", &mode, modeDoc, ModeDocker, "container", ModeRemote, ModeSubprocess, ModeGroup) {
		if mode == "container" {
			mode = ModeDocker
		}
		if member && mode == ModeGroup {
			d.add(s.at("mode"), "group members may not be groups")
			mode = ""
		}
	}

	// With no valid mode there is no way to tell which keys are misplaced;
	// everything is still decoded so that type and range errors show up.
	for _, k := range sortedKeys(s.m) {
		switch {
		case s.m[k] == nil && (isServerKey(k) || slices.Contains(memberKeys, k)):
			// Null means "default", which is harmless in any mode.
			delete(s.m, k)
		case slices.Contains(memberKeys, k):
			if !member {
				s.reject(k, "only allowed in group members")
			}
		case mode != "" && isServerKey(k) && !modeAllows(mode, k):
			s.reject(k, "not allowed for mode %s", mode)
		}
	}

	srv := defaultServer(mode, exec, member)
	if s.t != nil {
		s.t.mode = mode
	}
	if member {
		const idDoc = "The member's ID, unique across every server and member."
		switch {
		case !s.has("id"):
			if k := s.def("id", idDoc, "string"); k != nil {
				match(idRe).apply(k)
			}
			d.add(s.at("id"), "required")
		case !s.str("id", &srv.ID, idDoc, match(idRe)):
		case !idRe().MatchString(srv.ID):
			d.add(s.at("id"), "must match %s (got %q)", idPattern, srv.ID)
		case top[srv.ID]:
			d.add(s.at("id"), "%q is already a top-level server id", srv.ID)
		}
		s.intIn("weight", &srv.Weight, 1, 1000,
			"The member's share of calls under strategy weighted_round_robin.")
		s.intIn("priority", &srv.Priority, 1, 100,
			"Under strategy priority, calls go to the healthy member with the lowest number.")
	}
	s.str("description", &srv.Description,
		"What the server does, shown by hangar_list and hangar_details.")

	// docker
	const imageDoc = "The image the server runs (repo@sha256:… pins its content). Required unless package is set."
	s.def("image", imageDoc, "string")
	s.def("package", packageDoc, "object")
	switch {
	case s.has("image") && s.has("package"):
		s.take("image")
		d.add(s.at("package"), "cannot be used together with image: a server runs an image or a package")
		s.take("package")
	case s.has("image"):
		if s.str("image", &srv.Image, imageDoc) && srv.Image == "" {
			d.add(s.at("image"), "must not be empty")
		}
	case s.has("package"):
		srv.Package = d.serverPackage(s)
	case mode == ModeDocker:
		d.add(s.at("image"), "required for mode docker")
	}
	s.strList("args", &srv.Args,
		"The container's command arguments (its CMD).")
	if s.strList("volumes", &srv.Volumes,
		"Bind mounts, host:container[:ro|rw], both paths absolute. The Docker socket is refused unless allow_docker_socket.") {
		for i, vol := range srv.Volumes {
			if msg := checkVolume(vol); msg != "" {
				d.add(index(s.at("volumes"), i), "%s (got %q)", msg, vol)
			}
		}
	}
	res := s.sub("resources", "The container's limits.")
	res.size("memory", &srv.Resources.MemoryBytes, minMemoryBytes, "4m",
		"The memory limit: bytes, or a number with a unit b, k, m, g (512m).")
	res.cpus("cpu", &srv.Resources.NanoCPUs, 0.01, 64,
		"The CPU limit, in CPUs (0.5 is half of one).")
	pids := int(srv.Resources.PidsLimit)
	if res.intIn("pids", &pids, 1, 32768,
		"The most processes and threads in the container.") {
		srv.Resources.PidsLimit = int64(pids)
	}
	res.finish()
	if s.str("network", &srv.Network,
		"The network the container joins: none, bridge or a network's name; host is refused. Default: none for stdio, the gateway's own network for http and sse.",
		match(networkRe)) {
		switch {
		case strings.EqualFold(srv.Network, "host"):
			d.add(s.at("network"), "host networking is not allowed: it bypasses container isolation")
		case srv.Network != "" && !networkRe().MatchString(srv.Network):
			d.add(s.at("network"), "must be none, bridge or a network name (got %q)", srv.Network)
		}
	}
	s.boolean("read_only", &srv.ReadOnly,
		"The container's root filesystem is read-only.")
	s.str("user", &srv.User,
		"The user:group the container runs as.")
	d.serverImage(s, srv)
	s.boolean("allow_docker_socket", &srv.AllowDockerSocket,
		"Let volumes mount the Docker engine's socket. A server holding it controls the engine.")

	// subprocess
	if k := s.node(); k != nil {
		k.prop("command").items("string")
	}
	if cmd, ok := s.raw("command", "The command line, as a list or one string split at spaces (required).",
		"array", "string"); ok {
		if str, isStr := cmd.(string); isStr {
			srv.Command = strings.Fields(str)
		} else {
			srv.Command, _ = d.strings(s.at("command"), cmd)
		}
		if len(srv.Command) == 0 {
			d.add(s.at("command"), "must not be empty")
		}
	} else if mode == ModeSubprocess {
		d.add(s.at("command"), "required for mode subprocess")
	}

	if s.strMap("env", &srv.Env,
		"The server's environment variables; ${VAR} and ${VAR:-default} expand from the gateway's environment.") {
		for k := range srv.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				d.add(join(s.at("env"), k), "invalid environment variable name")
			}
		}
		d.expandAll(s.at("env"), srv.Env)
	}
	if s.has("env_files") {
		d.envFiles(s, srv)
	}

	// transport
	if s.enum("transport", &srv.Transport,
		"How the gateway talks to the server: stdio (its standard input and output), http (streamable HTTP) or sse. remote takes http or sse.",
		TransportStdio, TransportHTTP, TransportSSE) &&
		mode == ModeRemote && srv.Transport == TransportStdio {
		d.add(s.at("transport"), "must be one of http, sse for mode remote (got %q)", srv.Transport)
	}
	s.intIn("port", &srv.Port, 1, 65535,
		"The port the server listens on in its container, for transport http or sse.")
	if s.str("path", &srv.Path, "The server's MCP path, for transport http or sse.",
		opt{pattern: func() string { return "^/" }}) && !strings.HasPrefix(srv.Path, "/") {
		d.add(s.at("path"), "must start with / (got %q)", srv.Path)
	}
	hasEndpoint := s.has("endpoint")
	if s.str("endpoint", &srv.Endpoint, "The server's http(s) URL (required); ${VAR} expands.", format("uri")) {
		d.endpoint(s.at("endpoint"), &srv.Endpoint)
	} else if !hasEndpoint && mode == ModeRemote {
		d.add(s.at("endpoint"), "required for mode remote")
	}
	if s.strMap("headers", &srv.Headers,
		"HTTP headers sent with every request (an API key); ${VAR} expands. Not Authorization with upstream_auth.") {
		d.expandAll(s.at("headers"), srv.Headers)
	}
	s.enum("protocol", &srv.Protocol,
		"The MCP handshake: auto tries initialize and falls back to server/discover; legacy only initialize (MCP 2025-11-25 and before); modern only server/discover (2026-07-28).",
		ProtocolAuto, ProtocolLegacy, ProtocolModern)
	d.serverEgress(s, srv)
	d.serverUpstreamAuth(s, srv, mode)

	// lifecycle
	s.seconds("idle_ttl_s", &srv.IdleTTL, 1, 86400,
		"A server unused this long is stopped, in seconds; the next call starts it again.")
	s.seconds("health_check_interval_s", &srv.HealthCheckInterval, 1, 3600,
		"How often a running server is health-checked, in seconds.")
	s.intIn("max_consecutive_failures", &srv.MaxConsecutiveFailures, 1, 100,
		"Failed health checks in a row that degrade the server; failed starts in a row after which it is not started again until hangar_start.")
	s.intIn("max_concurrency", &srv.MaxConcurrency, 1, 1000,
		"Calls to the server at once; more wait up to their timeout. Default: execution.default_provider_concurrency.")
	s.seconds("start_timeout_s", &srv.StartTimeout, 1, 600,
		"How long a start (container, handshake) may take, in seconds.")
	s.seconds("call_timeout_s", &srv.CallTimeout, 1, 3600,
		"How long one call to the server may take, in seconds.")

	srv.Tools = d.tools(s)
	d.serverFrontDoor(s, srv)
	d.serverPolicy(s, srv, member)

	// group
	s.enum("strategy", &srv.Strategy, "How calls are spread over the members.",
		StrategyRoundRobin, StrategyWeightedRoundRobin,
		StrategyLeastConnections, StrategyRandom, StrategyPriority)
	h := s.sub("health", "When a member leaves and rejoins the rotation.")
	h.intIn("unhealthy_threshold", &srv.Health.UnhealthyThreshold, 1, 100,
		"Failures in a row that take a member out of the rotation.")
	h.intIn("healthy_threshold", &srv.Health.HealthyThreshold, 1, 100,
		"Successes in a row that bring it back.")
	h.finish()
	cb := s.sub("circuit_breaker", "Stops calling the group after too many failures.")
	cb.intIn("failure_threshold", &srv.CircuitBreaker.FailureThreshold, 1, 1000,
		"Failed calls that open the circuit: calls are then refused at once.")
	cb.seconds("reset_timeout_s", &srv.CircuitBreaker.ResetTimeout, 1, 3600,
		"How long the circuit stays open before a call is tried again, in seconds.")
	cb.finish()
	minSet := s.intIn("min_healthy", &srv.MinHealthy, 1, 1000,
		"The healthy members the group needs to be healthy rather than degraded; at most the number of members.")
	const membersDoc = "The member servers (required, at least one): each a server of mode docker, remote or subprocess, with an id."
	if s.has("members") {
		items, isList := s.list("members", membersDoc)
		if k := s.node(); k != nil {
			k.prop("members").Items = d.tr.server
		}
		srv.Members = d.members(s, items, exec, top)
		n := len(srv.Members)
		if isList && len(items) == 0 && mode == ModeGroup {
			d.add(s.at("members"), "must have at least one member")
		}
		if minSet && n > 0 && srv.MinHealthy > n {
			d.add(s.at("min_healthy"), "must be at most the number of members, %d (got %d)", n, srv.MinHealthy)
		}
	} else if mode == ModeGroup {
		s.def("members", membersDoc, "array")
		d.add(s.at("members"), "required for mode group")
	}

	s.finish()
	return srv
}

func (d *decoder) members(g *section, items []any, exec Execution, top map[string]bool) []*Server {
	var out []*Server
	first := map[string]int{}
	p := g.at("members")
	for i, item := range items {
		mp := index(p, i)
		if _, ok := asMap(item); !ok {
			d.add(mp, "must be a mapping (got %s)", got(item))
			continue
		}
		ms := d.section(mp, item)
		if g.t != nil {
			ms.t = &sectionTrace{node: d.tr.server}
		}
		m := d.server(ms, exec, true, top)
		if m.ID != "" {
			if j, dup := first[m.ID]; dup {
				d.add(join(mp, "id"), "duplicate member id %q (also %s)", m.ID, index(p, j))
			} else {
				first[m.ID] = i
			}
		}
		out = append(out, m)
	}
	return out
}

// endpoint expands and checks a remote URL in place.
func (d *decoder) endpoint(p string, ep *string) {
	v, err := expand(*ep, d.lookup)
	if err != nil {
		d.add(p, "%v", err)
		return
	}
	*ep = v
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		d.add(p, "must be an http(s) URL (got %q)", v)
	}
}

// checkVolume returns why a "host:container[:ro|rw]" bind is invalid, or "".
func checkVolume(v string) string {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return "must be host:container[:ro|rw]"
	}
	if !path.IsAbs(parts[0]) {
		return "host path must be absolute"
	}
	if !path.IsAbs(parts[1]) {
		return "container path must be absolute"
	}
	if len(parts) == 3 && parts[2] != "ro" && parts[2] != "rw" {
		return "mode must be ro or rw"
	}
	return ""
}

// tools decodes either the policy form {allow_list, deny_list} or the
// predefined form [{name, description, inputSchema}].
func (d *decoder) tools(srv *section) Tools {
	var t Tools
	v, ok := srv.raw("tools", "Either which tools are served ({allow_list, deny_list}) or a list of tool definitions the gateway lists without starting the server.",
		"object", "array")
	if !ok {
		return t
	}
	p := srv.at("tools")
	if items, ok := v.([]any); ok {
		seen := map[string]bool{}
		for i, item := range items {
			tp := index(p, i)
			if _, ok := asMap(item); !ok {
				d.add(tp, "must be a mapping with name, description, inputSchema (got %s)", got(item))
				continue
			}
			if def, ok := d.toolDef(srv.item("tools", tp, item)); ok {
				if seen[def.Name] {
					d.add(join(tp, "name"), "duplicate tool name %q", def.Name)
				}
				seen[def.Name] = true
				t.Predefined = append(t.Predefined, def)
			}
		}
		return t
	}
	if _, ok := asMap(v); !ok {
		d.add(p, "must be a mapping {allow_list, deny_list} or a list of tool definitions (got %s)", got(v))
		return t
	}
	s := d.section(p, v)
	if k := srv.node(); k != nil {
		srv.child(s, "tools", k.prop("tools"))
	}
	s.strList("allow_list", &t.AllowList,
		"fnmatch patterns of the tools served; none: every tool not denied.")
	s.strList("deny_list", &t.DenyList,
		"fnmatch patterns of the tools never served; wins over allow_list.")
	s.finish()
	return t
}

// defaultInputSchema is used when a predefined tool has none: MCP requires
// every listed tool to carry an object schema.
var defaultInputSchema = json.RawMessage(`{"type":"object"}`)

func (d *decoder) toolDef(s *section) (ToolDef, bool) {
	var def ToolDef
	ok := false
	const nameDoc = "The tool's name."
	switch {
	case !s.has("name"):
		s.def("name", nameDoc, "string")
		s.take("name")
		d.add(s.at("name"), "required")
	case !s.str("name", &def.Name, nameDoc):
	case def.Name == "":
		d.add(s.at("name"), "must not be empty")
	default:
		ok = true
	}
	s.str("description", &def.Description, "The tool's description.")

	key := "inputSchema"
	if s.has("input_schema") {
		if s.has(key) {
			s.reject("input_schema", "cannot be used together with inputSchema")
		} else {
			key = "input_schema"
		}
	}
	def.InputSchema = defaultInputSchema
	s.def("inputSchema", "The JSON Schema of the tool's arguments; default {type: object}.", "object")
	s.def("input_schema", "Another spelling of inputSchema; use one of the two.", "object")
	if sv, present := s.take(key); present {
		m, isMap := asMap(sv)
		b, err := json.Marshal(jsonable(m))
		switch {
		case !isMap:
			d.add(s.at(key), "must be a mapping (a JSON Schema object) (got %s)", got(sv))
			ok = false
		case err != nil:
			d.add(s.at(key), "cannot be converted to JSON: %v", err)
			ok = false
		default:
			def.InputSchema = b
		}
	}
	s.finish()
	return def, ok
}

// jsonable converts YAML's map[any]any, which encoding/json rejects, all
// the way down. Maps with string keys and lists are converted in place:
// they are the parse's own (load), and with 10,000 declared tools copying
// every schema was a tenth of the parse.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
		return x
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = jsonable(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
		return x
	}
	return v
}
