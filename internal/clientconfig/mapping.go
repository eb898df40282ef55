// Package clientconfig reads the mcpServers JSON that people keep in their
// MCP client configs (Claude Desktop, Cursor, VS Code's "servers") and maps
// one entry to a server spec with diagnostics: a pure function of the
// entry and the install policy (Options; what it may get of the host is
// hostaccess's, the one allow-list dockerrt checks again at container
// creation), with no Docker and no store. In the data flow it sits under
// mcp/install (internal/manage), which seals the entry's secrets, stores
// the install and publishes the spec to the catalog.
package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/egress"
	"github.com/mcp-hangar/hangar/internal/hostaccess"
	"github.com/mcp-hangar/hangar/internal/packages"
	"github.com/mcp-hangar/hangar/internal/policy"
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
	// CodePackage says what image an npm or PyPI line is built into.
	CodePackage = "package_image"
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

// Add appends a finding; Message is format with a, never a secret value.
func (d *Diagnostics) Add(level, code, field, format string, a ...any) {
	*d = append(*d, Diagnostic{Code: code, Level: level, Message: fmt.Sprintf(format, a...), FieldPath: field})
}

// HasError reports whether any diagnostic is an error.
func (d Diagnostics) HasError() bool {
	return slices.ContainsFunc(d, func(x Diagnostic) bool { return x.Level == LevelError })
}

var nameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// ValidName reports whether name may name an installed server.
func ValidName(name string) bool { return nameRe().MatchString(name) }

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
	// Egress is hangar's own field: the hosts the server asks to reach
	// (egress rules); install.allowed_egress decides.
	Egress *EntryEgress `json:"egress,omitempty"`
	// Policy is hangar's own field: the server's own policy over calls
	// (internal/policy), which can only narrow the gateway's.
	Policy *policy.Spec `json:"policy,omitempty"`
	// AllowScripts is hangar's own field: the package's install may run
	// its code (npm lifecycle scripts, building a Python sdist).
	AllowScripts bool `json:"allow_scripts,omitempty"`
}

// EntryEgress is an entry's egress: {"allow": ["api.github.com:443"]}.
type EntryEgress struct {
	Allow []string `json:"allow"`
}

// maxSummary bounds an entry's summary as config's summary: is bounded.
const maxSummary = 200

// knownFields are the entry keys Map understands; anything else is a
// warning, not an error, because clients add their own (disabled,
// autoApprove, …).
var knownFields = []string{"type", "command", "args", "env", "envFile", "url", "headers", "token",
	"authorization", "bearer_token", "bearerToken", "cwd", "egress", "summary", "policy", "allow_scripts"}

// DecodeEntry reads one entry, strictly typed, warning about keys it does
// not know.
func DecodeEntry(field string, raw json.RawMessage) (Entry, Diagnostics) {
	var diags Diagnostics
	var e Entry
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		diags.Add(LevelError, CodeInvalidEntry, field, "must be an object")
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
		case "egress":
			err = json.Unmarshal(v, &e.Egress)
		case "policy":
			e.Policy = decodePolicy(fp, v, &diags)
			continue
		case "allow_scripts":
			err = json.Unmarshal(v, &e.AllowScripts)
		case "summary":
			err = json.Unmarshal(v, &e.Summary)
			if sum := strings.TrimSpace(e.Summary); err == nil && (sum == "" || len(sum) > maxSummary || strings.ContainsAny(sum, "\r\n")) {
				diags.Add(LevelError, CodeInvalidValue, fp, "must be one line of 1 to %d characters", maxSummary)
				continue
			}
			e.Summary = strings.TrimSpace(e.Summary)
		default:
			diags.Add(LevelWarning, CodeIgnored, fp, "unknown field %q ignored", k)
			continue
		}
		if err != nil {
			want := "a string"
			switch k {
			case "args":
				want = "a list of strings"
			case "env", "headers":
				want = "an object of strings"
			case "egress":
				want = `an object {"allow": [host[:port], …]}`
			case "allow_scripts":
				want = "true or false"
			}
			diags.Add(LevelError, CodeInvalidValue, fp, "must be %s", want)
		}
	}
	return e, diags
}

// Options are what the gateway's config says about running installed
// entries.
type Options struct {
	Runtimes        map[string]config.Runtime
	AllowSubprocess bool
	// AllowedEgress is install.allowed_egress: what an entry's egress may
	// ask for (nothing by default).
	AllowedEgress []string
	Execution     config.Execution
	// Access is what an entry may get of the host: bind mounts, users,
	// networks, env files (install.allowed_*). Its zero value allows none.
	Access hostaccess.Policy
	// Listing maps an entry only to show it: env files are not read.
	Listing bool
}

// runners are commands that fetch and run a package: they need a runtime
// image (or subprocess mode).
var runners = []string{"npx", "uvx", "uv", "node", "python", "python3", "bunx", "bun", "deno", "pipx", "pnpm", "yarn"}

// Map turns entry (secret values already replaced by refs) into a spec
// named name; the spec is nil when a diagnostic is an error.
func Map(name string, e Entry, field string, o Options) (*config.Server, Diagnostics) {
	var diags Diagnostics
	if e.Cwd != "" {
		diags.Add(LevelWarning, CodeIgnored, field+".cwd", "cwd ignored: installed servers run in a container")
	}
	var s *config.Server
	switch t := strings.ToLower(e.Type); {
	case e.URL != "" || t == "http" || t == "sse" || t == "streamable-http" || t == "streamable_http":
		s = mapURL(name, e, field, o, &diags)
	case e.Command == "":
		diags.Add(LevelError, CodeMissingField, field, `needs "command" (a local server) or "url" (a remote server)`)
	case t != "" && t != "stdio":
		diags.Add(LevelError, CodeUnsupported, field+".type", "type %q is not supported (want stdio, http, sse or streamable-http)", e.Type)
	case CommandName(e.Command) == "docker":
		s = mapDocker(name, e, field, o, &diags)
	default:
		s = mapCommand(name, e, field, o, &diags)
	}
	if s != nil && e.Egress != nil {
		mapEgress(s, e.Egress, field+".egress", o, &diags)
	}
	if diags.HasError() {
		return nil, diags
	}
	s.Origin = config.OriginInstalled
	s.Summary = e.Summary
	if e.Policy != nil {
		p := *e.Policy
		s.Policy = &p
	}
	return s, diags
}

// decodePolicy reads an entry's policy strictly and compiles its rules:
// each problem is reported at its path (policy.rules[0].when).
func decodePolicy(field string, raw json.RawMessage, diags *Diagnostics) *policy.Spec {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var spec *policy.Spec
	if err := dec.Decode(&spec); err != nil || spec == nil {
		diags.Add(LevelError, CodeInvalidValue, field, `must be an object {"default": "allow"|"deny", "rules": [{"name", "effect", "when", "message"}]}`)
		return nil
	}
	problems := policy.Check(*spec)
	for _, p := range problems {
		diags.Add(LevelError, CodeInvalidValue, field+"."+p.Field, "%s", p.Message)
	}
	if len(problems) > 0 {
		return nil
	}
	return spec
}

// mapEgress puts a container server behind its egress proxy with the
// hosts it asks for, each of which the admin's install.allowed_egress must
// cover.
func mapEgress(s *config.Server, eg *EntryEgress, field string, o Options, diags *Diagnostics) {
	if s.Mode != config.ModeDocker || (s.Transport != "" && s.Transport != config.TransportStdio) {
		diags.Add(LevelError, CodeInvalidValue, field, "egress applies to servers run as stdio containers only")
		return
	}
	ok := true
	for i, a := range eg.Allow {
		fp := fmt.Sprintf("%s.allow[%d]", field, i)
		if _, err := egress.ParseRule(a); err != nil {
			diags.Add(LevelError, CodeInvalidValue, fp, "%v", err)
			ok = false
		} else if _, permitted := (config.Install{AllowedEgress: o.AllowedEgress}).EgressPermitted([]string{a}); !permitted {
			diags.Add(LevelError, CodeWidensHardening, fp, "egress to %q is not allowed by the gateway's install.allowed_egress", a)
			ok = false
		}
	}
	if !ok {
		return
	}
	allow, _ := egress.ParseAllow(eg.Allow)
	s.Egress = &config.Egress{Allow: allow.Strings()}
	if len(allow) == 0 {
		s.Egress.Allow = nil
	}
	// The egress network replaces any other: its only way out is the proxy.
	s.Network = ""
}

// CommandName is the program a command runs, without its directory.
func CommandName(cmd string) string {
	base := filepath.Base(cmd)
	return strings.TrimSuffix(base, ".exe")
}

func mapURL(name string, e Entry, field string, o Options, diags *Diagnostics) *config.Server {
	if e.Command != "" {
		diags.Add(LevelError, CodeInvalidEntry, field, `has both "url" and "command": use one`)
	}
	if e.URL == "" {
		diags.Add(LevelError, CodeMissingField, field+".url", "required for type %s", e.Type)
		return nil
	}
	u, err := url.Parse(e.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		diags.Add(LevelError, CodeInvalidValue, field+".url", "must be an http(s) URL")
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
				diags.Add(LevelError, CodeInvalidValue, field+".headers."+k, "invalid header name")
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
		diags.Add(LevelWarning, CodeIgnored, field+".env", "env ignored: a remote server has no process")
	}
	return s
}

func setHeader(s *config.Server, k, v string) {
	if s.Headers == nil {
		s.Headers = map[string]string{}
	}
	s.Headers[k] = v
}

// mapCommand runs a package runner's package from an image built of it
// (npx, uvx, uv run --with, pipx run, python -m), a host file in its
// runner's image (node FILE, python FILE), another runner in the runtime
// image the config gives it, or any command as a subprocess when that is
// allowed.
func mapCommand(name string, e Entry, field string, o Options, diags *Diagnostics) *config.Server {
	cmd := CommandName(e.Command)
	if packages.IsRunner(cmd) {
		line, err := packages.ParseLine(cmd, e.Args)
		if err != nil {
			diags.Add(LevelError, CodeInvalidValue, field+".args", "%v", err)
			return nil
		}
		for _, w := range line.Warnings {
			diags.Add(LevelWarning, CodeIgnored, field+".args", "%s", w)
		}
		if line.Package == nil {
			return mapHostFile(name, e, cmd, line, field, o, diags)
		}
		if e.AllowScripts {
			line.Package.AllowScripts = true
		}
		s := config.NewServer(name, config.ModeDocker, o.Execution)
		s.Package = line.Package
		s.Args = line.Args
		mergeEnv(s, e.Env, field, diags)
		envFile(s, e.EnvFile, field+".envFile", o, diags)
		rt, _ := config.RuntimeFor(o.Runtimes, line.Package.Runner)
		diags.Add(LevelInfo, CodePackage, field+".command", "%s runs from an image built once on %s (runtimes.%s), pinned to the version it resolves to",
			packages.Describe(*line.Package), rt.Image, line.Package.Runner)
		return s
	}
	if e.AllowScripts {
		diags.Add(LevelWarning, CodeIgnored, field+".allow_scripts", "allow_scripts applies to npm and PyPI packages only")
	}
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
		diags.Add(LevelError, CodeRuntimeUnavailable, field+".command",
			"%q needs a runtime image: configure runtimes.%s.image in the gateway config (or set install.allow_subprocess: true to run it as a process)", cmd, cmd)
	} else {
		diags.Add(LevelError, CodeRuntimeUnavailable, field+".command",
			"command %q cannot run in a container: use \"command\": \"docker\" with \"run\" args, a url, or set install.allow_subprocess: true", cmd)
	}
	return nil
}

// mapHostFile runs `node FILE` or `python FILE` in the runner's runtime
// image with FILE's directory (for node, the nearest one above it with a
// package.json, where its node_modules are) mounted read-only at the same
// path, when install.allowed_bind_roots holds it.
func mapHostFile(name string, e Entry, cmd string, line packages.Line, field string, o Options, diags *Diagnostics) *config.Server {
	if !filepath.IsAbs(line.File) {
		diags.Add(LevelError, CodeInvalidValue, field+".args", "%s runs a file of the client's machine by a relative path: give the absolute path of a file under install.allowed_bind_roots, or run a package (npx, uvx)", cmd)
		return nil
	}
	rt, _ := config.RuntimeFor(o.Runtimes, cmd)
	dir := filepath.Dir(filepath.Clean(line.File))
	var bind hostaccess.Bind
	if !o.Listing {
		b, err := o.Access.Bind(dir, dir, true)
		if err != nil {
			diags.Add(LevelError, CodeWidensHardening, field+".args", "%s runs a file of this host, which needs its directory mounted: %v", cmd, err)
			return nil
		}
		bind = b
		if cmd == "node" {
			bind = nodeProject(dir, b, o.Access)
		}
	}
	s := config.NewServer(name, config.ModeDocker, o.Execution)
	s.Image = rt.Image
	s.Args = append([]string{cmd}, line.Args...)
	if bind.Source != "" {
		s.Volumes = []string{bind.String()}
	}
	s.Env = map[string]string{"HOME": "/tmp"}
	for k, v := range rt.Env {
		s.Env[k] = v
	}
	mergeEnv(s, e.Env, field, diags)
	envFile(s, e.EnvFile, field+".envFile", o, diags)
	return s
}

// nodeProject is the mount of the nearest directory from dir up (as far
// as the policy allows) that holds a package.json, else of dir.
func nodeProject(dir string, b hostaccess.Bind, p hostaccess.Policy) hostaccess.Bind {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "package.json")); err == nil {
			if nb, err := p.Bind(d, d, true); err == nil {
				return nb
			}
			return b
		}
		if d == filepath.Dir(d) {
			return b
		}
		if _, err := p.Bind(filepath.Dir(d), filepath.Dir(d), true); err != nil {
			return b
		}
	}
}

func mergeEnv(s *config.Server, env map[string]string, field string, diags *Diagnostics) {
	for k, v := range env {
		if !envNameRe().MatchString(k) {
			diags.Add(LevelError, CodeInvalidValue, field+".env."+k, "invalid environment variable name")
			continue
		}
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		s.Env[k] = v
	}
}

var envNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// envFile reads an env file into s.Env. Its values stay in the file (the
// gateway re-reads it at each install and restart), never in the store.
// Only files under install.allowed_env_file_roots are read; for any other
// path the diagnostic says so and nothing else, whether or not it exists.
func envFile(s *config.Server, file, field string, o Options, diags *Diagnostics) {
	if file == "" || o.Listing {
		return
	}
	b, err := o.Access.ReadEnvFile(file)
	if err != nil {
		diags.Add(LevelError, CodeWidensHardening, field, "env file %v", strings.TrimPrefix(err.Error(), "env file "))
		return
	}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		if !envNameRe().MatchString(k) {
			diags.Add(LevelError, CodeInvalidValue, field, "line %d of env file: not NAME=value", i+1)
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

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
