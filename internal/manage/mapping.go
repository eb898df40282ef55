// Package manage is the management protocol of seed 003: install servers
// from the mcpServers JSON people keep in their MCP client configs, set
// their policy, restart, uninstall, read details, and notify clients of
// changes. This file is the pure part: a client-config entry → a server
// spec plus diagnostics, with no Docker and no store.
package manage

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/mcp-hangar/hangar/internal/config"
)

// Diagnostic levels.
const (
	LevelError   = "error"
	LevelWarning = "warning"
	LevelInfo    = "info"
)

// Diagnostic codes.
const (
	CodeInvalidName        = "invalid_name"
	CodeInvalidEntry       = "invalid_entry"
	CodeMissingField       = "missing_field"
	CodeInvalidValue       = "invalid_value"
	CodeUnsupported        = "unsupported_transport"
	CodeWidensHardening    = "widens_hardening"
	CodeRuntimeUnavailable = "runtime_unavailable"
	CodeIgnored            = "ignored"
	CodeSecretStored       = "secret_stored"
	CodeNameTaken          = "name_taken"
)

// Diagnostic is one finding about one server entry. Message never holds a
// secret value: only key names.
type Diagnostic struct {
	Code      string `json:"code"`
	Level     string `json:"level"`
	Message   string `json:"message"`
	FieldPath string `json:"field_path"`
}

// Diagnostics of one entry.
type Diagnostics []Diagnostic

func (d *Diagnostics) add(level, code, field, format string, a ...any) {
	*d = append(*d, Diagnostic{Code: code, Level: level, Message: fmt.Sprintf(format, a...), FieldPath: field})
}

// HasError reports whether any diagnostic is an error.
func (d Diagnostics) HasError() bool {
	return slices.ContainsFunc(d, func(x Diagnostic) bool { return x.Level == LevelError })
}

var nameRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidName reports whether name may name an installed server.
func ValidName(name string) bool { return nameRe.MatchString(name) }

// ErrNoServers is the answer to config_json without a server object.
var ErrNoServers = errors.New(`config_json has no "mcpServers" (or "servers") object`)

// Parse reads config_json: an object with mcpServers (or VS Code's
// servers) mapping names to entries. The order of names is the file's.
func Parse(configJSON string) (names []string, entries map[string]json.RawMessage, rootKey string, err error) {
	var root map[string]json.RawMessage
	if err := json.Unmarshal([]byte(configJSON), &root); err != nil {
		return nil, nil, "", fmt.Errorf("config_json is not a JSON object: %w", err)
	}
	raw, ok := root["mcpServers"]
	rootKey = "mcpServers"
	if !ok {
		raw, ok = root["servers"]
		rootKey = "servers"
	}
	if !ok || len(raw) == 0 || string(raw) == "null" {
		return nil, nil, "", ErrNoServers
	}
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, nil, "", fmt.Errorf("config_json: %q must be an object of server name to server: %w", rootKey, err)
	}
	names, err = keyOrder(raw)
	if err != nil {
		return nil, nil, "", fmt.Errorf("config_json: %w", err)
	}
	return names, entries, rootKey, nil
}

// keyOrder returns the keys of a JSON object in document order, so results
// follow the user's file.
func keyOrder(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// Entry is one server of a client config, as Claude Desktop, Cursor and VS
// Code write it.
type Entry struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	EnvFile string            `json:"envFile,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Token and Authorization are the credential fields some clients
	// write beside url; both become the Authorization header.
	Token         string `json:"token,omitempty"`
	Authorization string `json:"authorization,omitempty"`
	Cwd           string `json:"cwd,omitempty"`
	// Summary is the server's one line in hangar_find_tools' description
	// (config's summary:).
	Summary string `json:"summary,omitempty"`
}

// maxSummary bounds an entry's summary as config's summary: is bounded.
const maxSummary = 200

// knownFields are the entry keys Map understands; anything else is a
// warning, not an error, because clients add their own (disabled,
// autoApprove, …).
var knownFields = []string{"type", "command", "args", "env", "envFile", "url", "headers", "token",
	"authorization", "bearer_token", "bearerToken", "cwd", "summary"}

// DecodeEntry reads one entry, strictly typed, warning about keys it does
// not know.
func DecodeEntry(field string, raw json.RawMessage) (Entry, Diagnostics) {
	var diags Diagnostics
	var e Entry
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		diags.add(LevelError, CodeInvalidEntry, field, "must be an object")
		return e, diags
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		fp := field + "." + k
		var err error
		switch k {
		case "type":
			err = json.Unmarshal(v, &e.Type)
		case "command":
			err = json.Unmarshal(v, &e.Command)
		case "args":
			err = json.Unmarshal(v, &e.Args)
		case "env":
			err = json.Unmarshal(v, &e.Env)
		case "envFile":
			err = json.Unmarshal(v, &e.EnvFile)
		case "url":
			err = json.Unmarshal(v, &e.URL)
		case "headers":
			err = json.Unmarshal(v, &e.Headers)
		case "token", "bearer_token", "bearerToken":
			err = json.Unmarshal(v, &e.Token)
		case "authorization":
			err = json.Unmarshal(v, &e.Authorization)
		case "cwd":
			err = json.Unmarshal(v, &e.Cwd)
		case "summary":
			err = json.Unmarshal(v, &e.Summary)
			if sum := strings.TrimSpace(e.Summary); err == nil && (sum == "" || len(sum) > maxSummary || strings.ContainsAny(sum, "\r\n")) {
				diags.add(LevelError, CodeInvalidValue, fp, "must be one line of 1 to %d characters", maxSummary)
				continue
			}
			e.Summary = strings.TrimSpace(e.Summary)
		default:
			diags.add(LevelWarning, CodeIgnored, fp, "unknown field %q ignored", k)
			continue
		}
		if err != nil {
			want := "a string"
			switch k {
			case "args":
				want = "a list of strings"
			case "env", "headers":
				want = "an object of strings"
			}
			diags.add(LevelError, CodeInvalidValue, fp, "must be %s", want)
		}
	}
	return e, diags
}

// Options are what the gateway's config says about running installed
// entries.
type Options struct {
	Runtimes        map[string]config.Runtime
	AllowSubprocess bool
	Execution       config.Execution
	// ReadFile reads an --env-file; nil refuses env files.
	ReadFile func(path string) ([]byte, error)
	// OnChanged, when set, is called after every install, update, policy
	// change or uninstall (the front door lists again).
	OnChanged func()
}

// runners are commands that fetch and run a package: they need a runtime
// image (or subprocess mode).
var runners = []string{"npx", "uvx", "uv", "node", "python", "python3", "bunx", "bun", "deno", "pipx", "pnpm", "yarn"}

// Map turns entry (secret values already replaced by refs) into a spec
// named name; the spec is nil when a diagnostic is an error.
func Map(name string, e Entry, field string, o Options) (*config.Server, Diagnostics) {
	var diags Diagnostics
	if e.Cwd != "" {
		diags.add(LevelWarning, CodeIgnored, field+".cwd", "cwd ignored: installed servers run in a container")
	}
	var s *config.Server
	switch t := strings.ToLower(e.Type); {
	case e.URL != "" || t == "http" || t == "sse" || t == "streamable-http" || t == "streamable_http":
		s = mapURL(name, e, field, o, &diags)
	case e.Command == "":
		diags.add(LevelError, CodeMissingField, field, `needs "command" (a local server) or "url" (a remote server)`)
	case t != "" && t != "stdio":
		diags.add(LevelError, CodeUnsupported, field+".type", "type %q is not supported (want stdio, http, sse or streamable-http)", e.Type)
	case commandName(e.Command) == "docker":
		s = mapDocker(name, e, field, o, &diags)
	default:
		s = mapCommand(name, e, field, o, &diags)
	}
	if diags.HasError() {
		return nil, diags
	}
	s.Origin = config.OriginInstalled
	s.Summary = e.Summary
	return s, diags
}

func commandName(cmd string) string {
	base := filepath.Base(cmd)
	return strings.TrimSuffix(base, ".exe")
}

func mapURL(name string, e Entry, field string, o Options, diags *Diagnostics) *config.Server {
	if e.Command != "" {
		diags.add(LevelError, CodeInvalidEntry, field, `has both "url" and "command": use one`)
	}
	if e.URL == "" {
		diags.add(LevelError, CodeMissingField, field+".url", "required for type %s", e.Type)
		return nil
	}
	u, err := url.Parse(e.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		diags.add(LevelError, CodeInvalidValue, field+".url", "must be an http(s) URL")
		return nil
	}
	s := config.NewServer(name, config.ModeRemote, o.Execution)
	s.Endpoint = e.URL
	if strings.EqualFold(e.Type, "sse") {
		s.Transport = config.TransportSSE
	}
	if len(e.Headers) > 0 {
		s.Headers = map[string]string{}
		for k, v := range e.Headers {
			if k == "" || strings.ContainsAny(k, ":\r\n ") {
				diags.add(LevelError, CodeInvalidValue, field+".headers."+k, "invalid header name")
				continue
			}
			s.Headers[k] = v
		}
	}
	switch {
	case e.Authorization != "":
		setHeader(s, "Authorization", e.Authorization)
	case e.Token != "":
		setHeader(s, "Authorization", "Bearer "+e.Token)
	}
	if len(e.Env) > 0 {
		diags.add(LevelWarning, CodeIgnored, field+".env", "env ignored: a remote server has no process")
	}
	return s
}

func setHeader(s *config.Server, k, v string) {
	if s.Headers == nil {
		s.Headers = map[string]string{}
	}
	s.Headers[k] = v
}

// mapCommand runs a package runner in its runtime image, or any command as
// a subprocess when that is allowed.
func mapCommand(name string, e Entry, field string, o Options, diags *Diagnostics) *config.Server {
	cmd := commandName(e.Command)
	if rt, ok := o.Runtimes[cmd]; ok && rt.Image != "" {
		s := config.NewServer(name, config.ModeDocker, o.Execution)
		s.Image = rt.Image
		s.Network = rt.Network
		if s.Network == "" {
			s.Network = "bridge"
		}
		s.Args = append([]string{cmd}, e.Args...)
		s.Env = map[string]string{"HOME": "/tmp"} // runners cache packages under $HOME; /tmp is the writable tmpfs
		for k, v := range rt.Env {
			s.Env[k] = v
		}
		mergeEnv(s, e.Env, field, diags)
		envFile(s, e.EnvFile, field+".envFile", o, diags)
		return s
	}
	if o.AllowSubprocess {
		s := config.NewServer(name, config.ModeSubprocess, o.Execution)
		s.Command = append([]string{e.Command}, e.Args...)
		mergeEnv(s, e.Env, field, diags)
		envFile(s, e.EnvFile, field+".envFile", o, diags)
		return s
	}
	if slices.Contains(runners, cmd) {
		diags.add(LevelError, CodeRuntimeUnavailable, field+".command",
			"%q needs a runtime image: configure runtimes.%s.image in the gateway config (or set install.allow_subprocess: true to run it as a process)", cmd, cmd)
	} else {
		diags.add(LevelError, CodeRuntimeUnavailable, field+".command",
			"command %q cannot run in a container: use \"command\": \"docker\" with \"run\" args, a url, or set install.allow_subprocess: true", cmd)
	}
	return nil
}

func mergeEnv(s *config.Server, env map[string]string, field string, diags *Diagnostics) {
	for k, v := range env {
		if !envNameRe.MatchString(k) {
			diags.add(LevelError, CodeInvalidValue, field+".env."+k, "invalid environment variable name")
			continue
		}
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		s.Env[k] = v
	}
}

var envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// envFile reads an env file into s.Env. Its values stay in the file (the
// gateway re-reads it at each install and restart), never in the store.
func envFile(s *config.Server, file, field string, o Options, diags *Diagnostics) {
	if file == "" {
		return
	}
	if o.ReadFile == nil {
		diags.add(LevelError, CodeInvalidValue, field, "env files are not read by this gateway")
		return
	}
	b, err := o.ReadFile(file)
	if err != nil {
		diags.add(LevelError, CodeInvalidValue, field, "cannot read env file %q: %v", file, errors.Unwrap(err))
		return
	}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		if !envNameRe.MatchString(k) {
			diags.add(LevelError, CodeInvalidValue, field, "line %d of env file: not NAME=value", i+1)
			continue
		}
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		if _, set := s.Env[k]; !set { // explicit env wins, as in docker
			s.Env[k] = v
		}
	}
}

// dockerValueFlags take a value (as "--flag value" or "--flag=value").
var dockerValueFlags = map[string]bool{
	"e": true, "env": true, "env-file": true, "v": true, "volume": true, "network": true, "net": true,
	"memory": true, "m": true, "cpus": true, "user": true, "u": true, "name": true, "pid": true,
	"ipc": true, "uts": true, "userns": true, "cap-add": true, "cap-drop": true, "device": true,
	"security-opt": true, "mount": true, "p": true, "publish": true, "label": true, "l": true,
	"workdir": true, "w": true, "entrypoint": true, "pull": true, "platform": true, "add-host": true,
	"dns": true, "tmpfs": true, "hostname": true, "h": true, "pids-limit": true, "shm-size": true,
	"volumes-from": true, "group-add": true, "sysctl": true, "ulimit": true, "runtime": true,
	"cgroup-parent": true, "cgroupns": true, "gpus": true, "device-cgroup-rule": true, "log-driver": true,
	"log-opt": true, "restart": true, "stop-signal": true, "stop-timeout": true, "health-cmd": true,
}

// widening flags loosen the container hardening whatever their value.
var widening = map[string]string{
	"privileged":         "runs the container privileged",
	"cap-add":            "adds Linux capabilities",
	"device":             "gives the container a host device",
	"device-cgroup-rule": "gives the container host devices",
	"gpus":               "gives the container host devices",
	"security-opt":       "changes security options (seccomp, AppArmor, no-new-privileges)",
	"volumes-from":       "mounts another container's volumes",
	"sysctl":             "changes kernel parameters",
	"runtime":            "changes the container runtime",
	"cgroup-parent":      "changes the cgroup",
	"group-add":          "adds supplementary groups",
}

// hostNamespaces are flags whose value "host" shares a host namespace.
var hostNamespaces = []string{"network", "net", "pid", "ipc", "uts", "userns", "cgroupns"}

// mapDocker reads `docker run [flags] IMAGE [args]`.
func mapDocker(name string, e Entry, field string, o Options, diags *Diagnostics) *config.Server {
	args := e.Args
	af := field + ".args"
	if len(args) == 0 || args[0] != "run" {
		diags.add(LevelError, CodeUnsupported, af, `a docker command must be "docker run [flags] IMAGE [args]"`)
		return nil
	}
	s := config.NewServer(name, config.ModeDocker, o.Execution)
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		fp := fmt.Sprintf("%s[%d]", af, i)
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		flag, val, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !inline && dockerValueFlags[flag] {
			if i+1 >= len(args) {
				diags.add(LevelError, CodeInvalidValue, fp, "flag %s needs a value", a)
				return nil
			}
			i++
			val = args[i]
		}
		// Combined short flags: -it, -ti, -i.
		if !inline && !dockerValueFlags[flag] && !strings.HasPrefix(a, "--") && len(flag) > 1 && strings.Trim(flag, "it") == "" {
			if strings.Contains(flag, "t") {
				diags.add(LevelWarning, CodeIgnored, fp, "-t ignored: a TTY would corrupt the MCP stdio stream")
			}
			continue
		}
		dockerFlag(s, e, flag, val, a, fp, o, diags)
	}
	if i >= len(args) {
		diags.add(LevelError, CodeMissingField, af, "docker run has no image")
		return nil
	}
	s.Image = args[i]
	if s.Image == "" {
		diags.add(LevelError, CodeInvalidValue, fmt.Sprintf("%s[%d]", af, i), "image must not be empty")
	}
	if rest := args[i+1:]; len(rest) > 0 {
		s.Args = slices.Clone(rest)
	}
	// Entries with "-e NAME" take NAME from env; any env left is passed
	// too, since that is what the client would have exported.
	for k, v := range e.Env {
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		if _, set := s.Env[k]; !set {
			if !envNameRe.MatchString(k) {
				diags.add(LevelError, CodeInvalidValue, field+".env."+k, "invalid environment variable name")
				continue
			}
			s.Env[k] = v
		}
	}
	envFile(s, e.EnvFile, field+".envFile", o, diags)
	return s
}

func dockerFlag(s *config.Server, e Entry, flag, val, raw, fp string, o Options, diags *Diagnostics) {
	if why, bad := widening[flag]; bad {
		diags.add(LevelError, CodeWidensHardening, fp, "docker flag --%s refused: it %s", flag, why)
		return
	}
	if slices.Contains(hostNamespaces, flag) && strings.EqualFold(val, "host") {
		diags.add(LevelError, CodeWidensHardening, fp, "docker flag --%s host refused: it shares the host's namespace", flag)
		return
	}
	switch flag {
	case "i", "interactive", "rm", "init":
		// -i is how stdio servers are written; the gateway always attaches
		// stdin and removes its containers.
	case "t", "tty":
		diags.add(LevelWarning, CodeIgnored, fp, "%s ignored: a TTY would corrupt the MCP stdio stream", raw)
	case "read-only":
		s.ReadOnly = true // the default; a value of false is not honoured
	case "e", "env":
		k, v, hasVal := strings.Cut(val, "=")
		if !envNameRe.MatchString(k) {
			diags.add(LevelError, CodeInvalidValue, fp, "%s wants NAME=value or NAME", raw)
			return
		}
		if !hasVal {
			var ok bool
			if v, ok = e.Env[k]; !ok {
				diags.add(LevelWarning, CodeIgnored, fp, "-e %s ignored: %s is not in env", k, k)
				return
			}
		}
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		s.Env[k] = v
	case "env-file":
		envFile(s, val, fp, o, diags)
	case "v", "volume":
		if msg := volumeProblem(val); msg != "" {
			level, code := LevelError, CodeInvalidValue
			if strings.Contains(msg, "Docker socket") {
				code = CodeWidensHardening
			}
			diags.add(level, code, fp, "-v %s", msg)
			return
		}
		s.Volumes = append(s.Volumes, val)
	case "network", "net":
		if !networkRe.MatchString(val) { // also refuses container:<id>
			diags.add(LevelError, CodeWidensHardening, fp, "--network %q refused: want none, bridge or a network name", val)
			return
		}
		s.Network = val
	case "memory", "m":
		n, err := config.ParseSize(val)
		if err != nil || n < 6<<20 {
			diags.add(LevelError, CodeInvalidValue, fp, "--memory wants a size of at least 6m like 512m")
			return
		}
		s.Resources.MemoryBytes = n
	case "cpus":
		n, ok := config.ParseCPUs(val)
		if !ok || n > 64e9 {
			diags.add(LevelError, CodeInvalidValue, fp, "--cpus wants a number of CPUs (0.01..64)")
			return
		}
		s.Resources.NanoCPUs = n
	case "pids-limit":
		diags.add(LevelWarning, CodeIgnored, fp, "--pids-limit ignored: the gateway sets it")
	case "user", "u":
		if u, _, _ := strings.Cut(val, ":"); u == "root" || u == "0" || val == "" {
			diags.add(LevelError, CodeWidensHardening, fp, "--user %q refused: providers never run as root", val)
			return
		}
		s.User = val
	default:
		diags.add(LevelWarning, CodeIgnored, fp, "docker flag %s ignored: the gateway builds the container itself", raw)
	}
}

var networkRe = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// volumeProblem returns why a -v bind may not be used, or "".
func volumeProblem(v string) string {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return fmt.Sprintf("%q: want /host/path:/container/path[:ro|rw] (named volumes are not supported)", v)
	}
	if !path.IsAbs(parts[0]) || !path.IsAbs(parts[1]) {
		return fmt.Sprintf("%q: paths must be absolute", v)
	}
	if len(parts) == 3 && parts[2] != "ro" && parts[2] != "rw" {
		return fmt.Sprintf("%q: mode must be ro or rw", v)
	}
	clean := path.Clean(parts[0])
	if path.Base(clean) == "docker.sock" || clean == "/" || clean == "/var/run" || clean == "/run" || clean == "/var" {
		return fmt.Sprintf("%q refused: it would give the container the Docker socket", v)
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
