package config

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
)

const idPattern = `^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$`

var (
	idRe      = regexp.MustCompile(idPattern)
	networkRe = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)
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
		ModeDocker:     {"image", "args", "volumes", "resources", "network", "read_only", "user", "pull", "registry_auth", "pin_digest", "verify", "allow_docker_socket", "egress"},
		ModeSubprocess: {"command"},
		ModeRemote:     {"endpoint", "headers", "transport", "protocol"},
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
func (d *decoder) servers(p string, v any, exec Execution) map[string]*Server {
	out := map[string]*Server{}
	if v == nil {
		return out
	}
	m, ok := asMap(v)
	if !ok {
		d.add(p, "must be a mapping of server id to server (got %s)", got(v))
		return out
	}
	top := make(map[string]bool, len(m))
	for id := range m {
		top[id] = true
	}
	for _, id := range sortedKeys(m) {
		sp := join(p, id)
		if !idRe.MatchString(id) {
			d.add(sp, "invalid server id: must match %s", idPattern)
		}
		s := d.server(sp, m[id], exec, false, top)
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

// server decodes one server or group member; top holds the top-level
// server IDs that member IDs may not reuse.
func (d *decoder) server(p string, v any, exec Execution, member bool, top map[string]bool) *Server {
	s := d.section(p, v)

	var mode string
	if !s.has("mode") {
		s.take("mode")
		d.add(s.at("mode"), "required")
	} else if s.enum("mode", &mode, ModeDocker, "container", ModeRemote, ModeSubprocess, ModeGroup) {
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
	if member {
		switch {
		case !s.has("id"):
			d.add(s.at("id"), "required")
		case !s.str("id", &srv.ID):
		case !idRe.MatchString(srv.ID):
			d.add(s.at("id"), "must match %s (got %q)", idPattern, srv.ID)
		case top[srv.ID]:
			d.add(s.at("id"), "%q is already a top-level server id", srv.ID)
		}
		s.intIn("weight", &srv.Weight, 1, 1000)
		s.intIn("priority", &srv.Priority, 1, 100)
	}
	s.str("description", &srv.Description)

	// docker
	if s.has("image") {
		if s.str("image", &srv.Image) && srv.Image == "" {
			d.add(s.at("image"), "must not be empty")
		}
	} else if mode == ModeDocker {
		d.add(s.at("image"), "required for mode docker")
	}
	s.strList("args", &srv.Args)
	if s.strList("volumes", &srv.Volumes) {
		for i, vol := range srv.Volumes {
			if msg := checkVolume(vol); msg != "" {
				d.add(index(s.at("volumes"), i), "%s (got %q)", msg, vol)
			}
		}
	}
	res := s.sub("resources")
	res.size("memory", &srv.Resources.MemoryBytes, minMemoryBytes, "4m")
	res.cpus("cpu", &srv.Resources.NanoCPUs, 0.01, 64)
	var pids int
	if res.intIn("pids", &pids, 1, 32768) {
		srv.Resources.PidsLimit = int64(pids)
	}
	res.finish()
	if s.str("network", &srv.Network) {
		switch {
		case strings.EqualFold(srv.Network, "host"):
			d.add(s.at("network"), "host networking is not allowed: it bypasses container isolation")
		case srv.Network != "" && !networkRe.MatchString(srv.Network):
			d.add(s.at("network"), "must be none, bridge or a network name (got %q)", srv.Network)
		}
	}
	s.boolean("read_only", &srv.ReadOnly)
	s.str("user", &srv.User)
	d.serverImage(s, srv)
	s.boolean("allow_docker_socket", &srv.AllowDockerSocket)

	// subprocess
	if cmd, ok := s.take("command"); ok {
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

	if s.strMap("env", &srv.Env) {
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
	if s.enum("transport", &srv.Transport, TransportStdio, TransportHTTP, TransportSSE) &&
		mode == ModeRemote && srv.Transport == TransportStdio {
		d.add(s.at("transport"), "must be one of http, sse for mode remote (got %q)", srv.Transport)
	}
	s.intIn("port", &srv.Port, 1, 65535)
	if s.str("path", &srv.Path) && !strings.HasPrefix(srv.Path, "/") {
		d.add(s.at("path"), "must start with / (got %q)", srv.Path)
	}
	if s.has("endpoint") {
		if s.str("endpoint", &srv.Endpoint) {
			d.endpoint(s.at("endpoint"), &srv.Endpoint)
		}
	} else if mode == ModeRemote {
		d.add(s.at("endpoint"), "required for mode remote")
	}
	if s.strMap("headers", &srv.Headers) {
		d.expandAll(s.at("headers"), srv.Headers)
	}
	s.enum("protocol", &srv.Protocol, ProtocolAuto, ProtocolLegacy, ProtocolModern)
	d.serverEgress(s, srv)

	// lifecycle
	s.seconds("idle_ttl_s", &srv.IdleTTL, 1, 86400)
	s.seconds("health_check_interval_s", &srv.HealthCheckInterval, 1, 3600)
	s.intIn("max_consecutive_failures", &srv.MaxConsecutiveFailures, 1, 100)
	s.intIn("max_concurrency", &srv.MaxConcurrency, 1, 1000)
	s.seconds("start_timeout_s", &srv.StartTimeout, 1, 600)
	s.seconds("call_timeout_s", &srv.CallTimeout, 1, 3600)

	if tv, ok := s.take("tools"); ok {
		srv.Tools = d.tools(s.at("tools"), tv)
	}
	d.serverFrontDoor(s, srv)

	// group
	s.enum("strategy", &srv.Strategy, StrategyRoundRobin, StrategyWeightedRoundRobin,
		StrategyLeastConnections, StrategyRandom, StrategyPriority)
	h := s.sub("health")
	h.intIn("unhealthy_threshold", &srv.Health.UnhealthyThreshold, 1, 100)
	h.intIn("healthy_threshold", &srv.Health.HealthyThreshold, 1, 100)
	h.finish()
	cb := s.sub("circuit_breaker")
	cb.intIn("failure_threshold", &srv.CircuitBreaker.FailureThreshold, 1, 1000)
	cb.seconds("reset_timeout_s", &srv.CircuitBreaker.ResetTimeout, 1, 3600)
	cb.finish()
	minSet := s.intIn("min_healthy", &srv.MinHealthy, 1, 1000)
	if s.has("members") {
		items, isList := s.list("members")
		srv.Members = d.members(s.at("members"), items, exec, top)
		n := len(srv.Members)
		if isList && len(items) == 0 && mode == ModeGroup {
			d.add(s.at("members"), "must have at least one member")
		}
		if minSet && n > 0 && srv.MinHealthy > n {
			d.add(s.at("min_healthy"), "must be at most the number of members, %d (got %d)", n, srv.MinHealthy)
		}
	} else if mode == ModeGroup {
		d.add(s.at("members"), "required for mode group")
	}

	s.finish()
	return srv
}

func (d *decoder) members(p string, items []any, exec Execution, top map[string]bool) []*Server {
	var out []*Server
	first := map[string]int{}
	for i, item := range items {
		mp := index(p, i)
		if _, ok := asMap(item); !ok {
			d.add(mp, "must be a mapping (got %s)", got(item))
			continue
		}
		m := d.server(mp, item, exec, true, top)
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
func (d *decoder) tools(p string, v any) Tools {
	var t Tools
	if items, ok := v.([]any); ok {
		seen := map[string]bool{}
		for i, item := range items {
			tp := index(p, i)
			if _, ok := asMap(item); !ok {
				d.add(tp, "must be a mapping with name, description, inputSchema (got %s)", got(item))
				continue
			}
			if def, ok := d.toolDef(tp, item); ok {
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
	s.strList("allow_list", &t.AllowList)
	s.strList("deny_list", &t.DenyList)
	s.finish()
	return t
}

// defaultInputSchema is used when a predefined tool has none: MCP requires
// every listed tool to carry an object schema.
var defaultInputSchema = json.RawMessage(`{"type":"object"}`)

func (d *decoder) toolDef(p string, v any) (ToolDef, bool) {
	s := d.section(p, v)
	var def ToolDef
	ok := false
	switch {
	case !s.has("name"):
		s.take("name")
		d.add(s.at("name"), "required")
	case !s.str("name", &def.Name):
	case def.Name == "":
		d.add(s.at("name"), "must not be empty")
	default:
		ok = true
	}
	s.str("description", &def.Description)

	key := "inputSchema"
	if s.has("input_schema") {
		if s.has(key) {
			s.reject("input_schema", "cannot be used together with inputSchema")
		} else {
			key = "input_schema"
		}
	}
	def.InputSchema = defaultInputSchema
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
