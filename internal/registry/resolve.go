package registry

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/packages"
)

// Statuses of hangar_load and hangar_unload (seed 001), and StatusResolved
// for a Resolve that produced a spec (never on the wire).
const (
	StatusLoaded         = "loaded"
	StatusAmbiguous      = "ambiguous"
	StatusNotFound       = "not_found"
	StatusMissingSecrets = "missing_secrets"
	StatusUnverified     = "unverified"
	StatusFailed         = "failed"
	StatusUnloaded       = "unloaded"
	StatusNotHotLoaded   = "not_hot_loaded"
	StatusResolved       = "resolved"
)

// Outcome says how matching or resolving went. Its fields map onto
// hangar_load's answer.
type Outcome struct {
	Status       string
	Message      string
	Matches      []string // StatusAmbiguous
	Missing      []string // StatusMissingSecrets: variable names, sorted
	Instructions string   // StatusMissingSecrets
	Warnings     []string
	Verified     bool
	// Secrets are the secret values put into the spec, so that messages
	// (a failed start's stderr) can be redacted. Never shown.
	Secrets []string
}

// Options of Resolve.
type Options struct {
	// VerifiedNamespaces is registry.verified_namespaces.
	VerifiedNamespaces []string
	ForceUnverified    bool
	// ID is the provider ID to assign; "" assigns ProviderID(name).
	ID string
	// Execution supplies default_provider_concurrency.
	Execution config.Execution
	// IdleTTL is registry.idle_ttl_s; 0 keeps the server default.
	IdleTTL time.Duration
	// AllowTools and DenyTools become the server's tool policy.
	AllowTools, DenyTools []string
	// PackageTypes are registry.package_types: the package types run, in
	// order of preference (nil: oci, npm, pypi).
	PackageTypes []string
}

// Verified reports whether an entry counts as verified. The rule:
//
//   - its name starts with a namespace listed in registry.verified_namespaces
//     (an entry ending in "/"), or is a server name listed there exactly; or
//   - it carries the official registry's metadata with status "active": the
//     official registry publishes a name only after its publisher proved
//     ownership of the namespace (GitHub login for io.github.<user>/, DNS
//     or HTTP for a domain), so its record vouches for who published it.
//
// A deprecated or deleted entry is never verified by its status, and an
// entry without official metadata (a hand-written catalog entry, another
// registry) only by verified_namespaces.
func Verified(e Entry, namespaces []string) bool {
	name := strings.ToLower(e.Server.Name)
	for _, ns := range namespaces {
		ns = strings.ToLower(ns)
		if strings.HasSuffix(ns, "/") && strings.HasPrefix(name, ns) || name == ns {
			return true
		}
	}
	return e.Official != nil && e.Official.Status == StatusActive
}

// Resolve turns a server.json into the spec of a provider, or says why it
// cannot; lookup reads the gateway's environment (os.LookupEnv; nil reads
// nothing). In order: an unverified entry needs ForceUnverified; then the
// first runnable form is chosen:
//
//  1. a package, of the first type of opts.PackageTypes that the entry
//     publishes (oci, then npm, then pypi by default): an oci image with
//     stdio transport (mode docker, stdio), else with streamable-http (or
//     sse) transport (mode docker, transport http or sse, port and path
//     from the transport URL); an npm or pypi package likewise, run from
//     an image the gateway builds of it (package internal/packages) under
//     the runtime its runtimeHint names (npx, uvx, …), from its
//     registryBaseUrl;
//  2. a remote (streamable-http, then sse): mode remote.
//
// nuget and mcpb packages are not runnable here. Environment variables,
// headers, {placeholders} and arguments are filled from the server.json and
// from the gateway's environment (see input); anything required and
// missing gives StatusMissingSecrets. An oci package's runtime arguments
// never change the container's hardening: -e/--env is honoured,
// everything else is ignored with a warning; an npm or pypi package's go
// to its runner (npx -y, uvx --from …) as a client config's line would.
func Resolve(e Entry, lookup func(string) (string, bool), opts Options) (*config.Server, Outcome) {
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	name := e.Server.Name
	out := Outcome{Verified: Verified(e, opts.VerifiedNamespaces)}
	if !out.Verified && !opts.ForceUnverified {
		out.Status = StatusUnverified
		out.Message = fmt.Sprintf("%s is not verified: its namespace is not in registry.verified_namespaces and no registry vouches for its publisher; "+
			"call hangar_load with force_unverified: true to load it anyway", name)
		return nil, out
	}
	if !out.Verified {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%s is not verified; loaded because force_unverified was set", name))
	}
	if e.Official != nil && e.Official.Status == StatusDeprecated {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%s is deprecated in the registry", name))
	}

	r := &resolver{lookup: lookup, plainEnv: out.Verified}
	id := opts.ID
	if id == "" {
		id = ProviderID(name)
	}
	var spec *config.Server
	var err error
	switch pkg, remote := choose(e.Server, opts.PackageTypes); {
	case pkg != nil:
		spec, err = r.container(id, *pkg, opts.Execution)
	case remote != nil:
		spec, err = r.remote(id, *remote, opts.Execution)
	default:
		out.Status, out.Message = StatusFailed, notRunnable(e.Server)
		return nil, out
	}
	out.Warnings = append(out.Warnings, r.warnings...)
	out.Secrets = r.secrets
	if err != nil {
		out.Status, out.Message = StatusFailed, fmt.Sprintf("%s: %v", name, err)
		return nil, out
	}
	if len(r.missing) > 0 {
		out.Status = StatusMissingSecrets
		out.Missing = slices.Sorted(slices.Values(r.missing))
		out.Message = "missing required secrets: " + strings.Join(out.Missing, ", ")
		out.Instructions = instructions(name, out.Missing, r.described, out.Verified)
		return nil, out
	}
	spec.Description = e.Server.Description
	if spec.Description == "" {
		spec.Description = e.Server.Title
	}
	if opts.IdleTTL > 0 {
		spec.IdleTTL = opts.IdleTTL
	}
	spec.Tools = config.Tools{AllowList: slices.Clone(opts.AllowTools), DenyList: slices.Clone(opts.DenyTools)}
	spec.Origin = config.OriginRegistry
	out.Status = StatusResolved
	return spec, out
}

// choose picks the package or remote to run, in the order of Resolve.
func choose(s ServerJSON, types []string) (*Package, *Transport) {
	if types == nil {
		types = []string{RegistryTypeOCI, RegistryTypeNPM, RegistryTypePyPI}
	}
	for _, kind := range types {
		for _, t := range []string{TransportStdio, TransportStreamableHTTP, TransportSSE} {
			for i, p := range s.Packages {
				if strings.EqualFold(p.RegistryType, kind) && strings.EqualFold(transportType(p.Transport), t) {
					return &s.Packages[i], nil
				}
			}
		}
	}
	for _, t := range []string{TransportStreamableHTTP, TransportSSE} {
		for i, r := range s.Remotes {
			if strings.EqualFold(r.Type, t) {
				return nil, &s.Remotes[i]
			}
		}
	}
	return nil, nil
}

// transportType defaults a package's transport to stdio.
func transportType(t Transport) string {
	if t.Type == "" {
		return TransportStdio
	}
	return t.Type
}

// runtimes names what a package type needs to run, for the types the
// gateway does not run.
var runtimes = map[string]string{
	RegistryTypeNuGet: ".NET (dnx)",
	RegistryTypeMCPB:  "an MCP bundle host",
}

// notRunnable explains why nothing in s can run here.
func notRunnable(s ServerJSON) string {
	if len(s.Packages) == 0 && len(s.Remotes) == 0 {
		return fmt.Sprintf("%s publishes neither a package nor a remote endpoint: there is nothing to run", s.Name)
	}
	var forms []string
	for _, p := range s.Packages {
		t := strings.ToLower(p.RegistryType)
		switch need, known := runtimes[t]; {
		case t == RegistryTypeOCI || t == RegistryTypeNPM || t == RegistryTypePyPI:
			forms = append(forms, fmt.Sprintf("%s package %s with transport %q, which the gateway does not run (registry.package_types and its transports decide)", t, p.Identifier, transportType(p.Transport)))
		case known:
			forms = append(forms, fmt.Sprintf("%s package %s, which needs %s", t, p.Identifier, need))
		default:
			forms = append(forms, fmt.Sprintf("%q package %s, a kind the gateway does not know", p.RegistryType, p.Identifier))
		}
	}
	for _, r := range s.Remotes {
		forms = append(forms, fmt.Sprintf("remote with transport %q, which the gateway does not support", r.Type))
	}
	return fmt.Sprintf("%s cannot run here: the gateway runs MCP servers as containers (oci, npm and pypi packages) or connects to remote endpoints, "+
		"and %s is published only as %s; no such runtime is available in the gateway. Choose a server that publishes an oci image or a remote endpoint",
		s.Name, s.Name, strings.Join(forms, "; "))
}

// resolver fills in a server.json's inputs.
type resolver struct {
	lookup func(string) (string, bool)
	// plainEnv lets a variable FOO come from the gateway's own FOO; when
	// false (an unverified server) only HANGAR_SECRET_FOO is read.
	plainEnv  bool
	missing   []string
	described map[string]string // missing name → description
	secrets   []string
	warnings  []string
}

// reservedEnv are gateway variables a loaded server never gets by asking
// for them by name: the gateway's own settings and its engine access.
func reservedEnv(name string) bool {
	u := strings.ToUpper(name)
	return strings.HasPrefix(u, "HANGAR_") || strings.HasPrefix(u, "DOCKER_") || u == "MCP_CONFIG" ||
		u == "PATH" || u == "HOME" || u == "HOSTNAME" || u == "USER" || u == "PWD" || u == "SHELL"
}

var envNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// envKey turns an input's name into the variable that supplies it:
// "api_key" → API_KEY, "X-Api-Key" → X_API_KEY. Environment variable
// names are kept as they are.
func envKey(name string) string {
	if envNameRe().MatchString(name) && strings.ToUpper(name) == name {
		return name
	}
	var b strings.Builder
	for _, c := range strings.TrimLeft(name, "-") {
		switch {
		case c >= 'a' && c <= 'z':
			b.WriteRune(c - 'a' + 'A')
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// fromEnv reads the operator's value for key: HANGAR_SECRET_<key>, else
// (verified servers only) <key> itself. Empty counts as unset.
func (r *resolver) fromEnv(key string) (string, bool) {
	if key == "" {
		return "", false
	}
	if v, ok := r.lookup(config.SecretEnvPrefix + key); ok && v != "" {
		r.secrets = append(r.secrets, v)
		return v, true
	}
	if r.plainEnv && !reservedEnv(key) {
		if v, ok := r.lookup(key); ok && v != "" {
			return v, true
		}
	}
	return "", false
}

// input resolves a named input (an environment variable, a header, a
// {placeholder}): the operator's value from the environment first, then
// the server.json's fixed value (placeholders filled), then its default.
// A required input with none of these is recorded as missing. ok is false
// when there is no value.
func (r *resolver) input(name string, in Input) (string, bool) {
	key := envKey(name)
	if v, ok := r.fromEnv(key); ok {
		if in.IsSecret {
			r.secrets = append(r.secrets, v)
		}
		return v, true
	}
	if in.Value != "" {
		v, ok := r.template(in.Value, in.Variables)
		if ok && in.IsSecret {
			r.secrets = append(r.secrets, v)
		}
		return v, ok
	}
	if in.Default != "" {
		return in.Default, true
	}
	if in.IsRequired {
		r.need(key, in.Description)
	}
	return "", false
}

func (r *resolver) need(key, description string) {
	if slices.Contains(r.missing, key) {
		return
	}
	r.missing = append(r.missing, key)
	if r.described == nil {
		r.described = map[string]string{}
	}
	r.described[key] = description
}

var placeholderRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_.-]*)\}`) })

// template fills {name} placeholders from vars; a placeholder vars does
// not define is left as written. ok is false when a required variable is
// missing; an optional one without a value becomes "".
func (r *resolver) template(s string, vars map[string]Input) (string, bool) {
	ok := true
	out := placeholderRe().ReplaceAllStringFunc(s, func(m string) string {
		name := m[1 : len(m)-1]
		in, defined := vars[name]
		if !defined {
			return m
		}
		v, found := r.input(name, in)
		if !found && in.IsRequired {
			ok = false
		}
		return v
	})
	return out, ok
}

// argument resolves a package argument's value: its fixed value or
// default first, then the operator's (HANGAR_SECRET_<hint>, or <hint> for
// a verified server) when it has neither.
func (r *resolver) argument(a Argument) (string, bool) {
	switch {
	case a.Value != "":
		return r.template(a.Value, a.Variables)
	case a.Default != "":
		return a.Default, true
	}
	hint := a.ValueHint
	if hint == "" {
		hint = a.Name
	}
	in := a.Input
	return r.input(hint, in)
}

// env resolves environment variables into dst.
func (r *resolver) env(dst map[string]string, vars []KeyValueInput) {
	for _, kv := range vars {
		if !envNameRe().MatchString(kv.Name) {
			r.warnings = append(r.warnings, fmt.Sprintf("environment variable %q ignored: not a valid name", kv.Name))
			continue
		}
		if v, ok := r.input(kv.Name, kv.Input); ok {
			dst[kv.Name] = v
		}
	}
}

// container builds a docker spec from an oci, npm or pypi package.
func (r *resolver) container(id string, p Package, exec config.Execution) (*config.Server, error) {
	s := config.NewServer(id, config.ModeDocker, exec)
	env := map[string]string{}
	r.env(env, p.EnvironmentVariables)
	var runner []string // an npm or pypi package's runner line, before its package arguments
	if t := strings.ToLower(p.RegistryType); t == RegistryTypeNPM || t == RegistryTypePyPI {
		line, err := r.runnerLine(p, t)
		if err != nil {
			return nil, err
		}
		runner = line
	} else {
		image, err := imageRef(p)
		if err != nil {
			return nil, err
		}
		s.Image = image
		r.runtimeArgs(env, p.RuntimeArguments)
	}
	argVals := map[string]string{} // value hint or flag name → value
	for _, a := range p.PackageArguments {
		v, ok := r.argument(a)
		if !ok {
			// Missing and required is recorded; optional is left out.
			continue
		}
		if a.Type == "named" && a.Name != "" {
			s.Args = append(s.Args, a.Name, v)
		} else {
			s.Args = append(s.Args, v)
		}
		for _, k := range []string{a.ValueHint, strings.TrimLeft(a.Name, "-")} {
			if k != "" {
				argVals[k] = v
			}
		}
	}
	if len(env) > 0 {
		s.Env = env
	}
	if runner != nil {
		if err := packageSpec(s, p, runner); err != nil {
			return nil, err
		}
	}
	switch t := strings.ToLower(transportType(p.Transport)); t {
	case TransportStdio:
		s.Transport = config.TransportStdio
	default:
		s.Transport = config.TransportHTTP
		if t == TransportSSE {
			s.Transport = config.TransportSSE
		}
		port, path, err := r.containerURL(p.Transport, argVals)
		if err != nil {
			return nil, err
		}
		s.Port, s.Path = port, path
	}
	return s, nil
}

// containerURL reads the port and path a container serves MCP on from its
// transport URL ("http://localhost:{port}/mcp"); placeholders are filled
// with the package arguments of that value hint, else the transport
// variable's value or default.
func (r *resolver) containerURL(t Transport, argVals map[string]string) (int, string, error) {
	raw := t.URL
	if raw == "" {
		r.warnings = append(r.warnings, "the package's transport has no url; assuming port 8080, path /mcp")
		return 8080, "/mcp", nil
	}
	filled := placeholderRe().ReplaceAllStringFunc(raw, func(m string) string {
		k := m[1 : len(m)-1]
		if v, ok := argVals[k]; ok {
			return v
		}
		if in, ok := t.Variables[k]; ok {
			if in.Value != "" {
				return in.Value
			}
			return in.Default
		}
		return m
	})
	u, err := url.Parse(filled)
	if err != nil || u.Host == "" {
		return 0, "", fmt.Errorf("transport url %q is not a URL", raw)
	}
	port := 80
	if u.Scheme == "https" {
		port = 443
	}
	if ps := u.Port(); ps != "" {
		n, err := strconv.Atoi(ps)
		if err != nil || n < 1 || n > 65535 {
			return 0, "", fmt.Errorf("transport url %q has no usable port", raw)
		}
		port = n
	}
	path := u.Path
	if path == "" {
		path = "/"
	}
	return port, path, nil
}

// runnerLine is the start of the command line that runs an npm or pypi
// package: its runner (runtimeHint, else npx or uvx), the runner's
// arguments (runtimeArguments), and the package at its version.
func (r *resolver) runnerLine(p Package, pkgType string) ([]string, error) {
	name := strings.TrimSpace(p.Identifier)
	if name == "" {
		return nil, fmt.Errorf("%s package has no identifier", pkgType)
	}
	runner := strings.TrimSpace(p.RuntimeHint)
	if runner == "" {
		runner = config.DefaultRunner(pkgType)
	}
	if config.PackageRunnerType(runner) != pkgType {
		return nil, fmt.Errorf("%s package %s: runtimeHint %q does not run %s packages", pkgType, name, runner, pkgType)
	}
	line := []string{runner}
	for _, a := range p.RuntimeArguments {
		v, ok := r.argument(a)
		if !ok {
			continue
		}
		if a.Type == "named" && a.Name != "" {
			if strings.Contains(a.Name, "=") || v == "" {
				line = append(line, a.Name)
				continue
			}
			line = append(line, a.Name, v)
			continue
		}
		line = append(line, v)
	}
	for _, a := range line[1:] {
		flag, _, _ := strings.Cut(a, "=")
		switch flag {
		case "--from", "--spec", "--with", "-p", "--package":
			// The runtime arguments name the package (and its version).
			return line, nil
		}
	}
	spec := name
	if v := strings.TrimSpace(p.Version); v != "" && v != "latest" {
		spec += "@" + v
	}
	return append(line, spec), nil
}

// packageSpec makes s run the npm or pypi package of the runner line
// (plus the package arguments already in s.Args) from its registry.
func packageSpec(s *config.Server, p Package, runner []string) error {
	line, err := packages.ParseLine(runner[0], append(runner[1:], s.Args...))
	if err != nil {
		return err
	}
	if line.Package == nil {
		return fmt.Errorf("%s package %s: its runtime arguments run a file, not the package", p.RegistryType, p.Identifier)
	}
	pkg := line.Package
	if base := strings.TrimRight(strings.TrimSpace(p.RegistryBaseURL), "/"); base != "" && pkg.Registry == "" {
		// registryBaseUrl is the registry's root; PyPI's simple index is
		// under it.
		pkg.Registry = base
		if pkg.Type == config.PackagePyPI && !strings.HasSuffix(base, "/simple") {
			pkg.Registry = base + "/simple/"
		}
		if field, msg := config.CheckPackage(*pkg); field != "" {
			return fmt.Errorf("%s package %s: %s: %s", p.RegistryType, p.Identifier, field, msg)
		}
	}
	s.Package, s.Args = pkg, nil
	if len(line.Args) > 0 {
		s.Args = line.Args
	}
	return nil
}

// runtimeArgs honours -e/--env and ignores every other runtime argument:
// the container's mounts, network, user, privileges and limits come from
// the gateway's hardening only.
func (r *resolver) runtimeArgs(env map[string]string, args []Argument) {
	for _, a := range args {
		if a.Type != "named" {
			r.warnings = append(r.warnings, fmt.Sprintf("runtime argument %q ignored: the gateway builds the container itself", a.Value))
			continue
		}
		flag, inline, hasInline := strings.Cut(a.Name, "=")
		switch {
		case flag == "-e" || flag == "--env":
			v := inline
			if !hasInline {
				var ok bool
				if v, ok = r.argument(a); !ok {
					continue
				}
			}
			k, val, hasVal := strings.Cut(v, "=")
			if !envNameRe().MatchString(k) {
				r.warnings = append(r.warnings, fmt.Sprintf("runtime argument %s %q ignored: not NAME=value", flag, v))
				continue
			}
			if !hasVal {
				// "-e NAME" passes the caller's NAME through.
				var ok bool
				if val, ok = r.fromEnv(k); !ok {
					continue
				}
			}
			env[k] = val
		case widening[strings.TrimLeft(flag, "-")]:
			r.warnings = append(r.warnings, fmt.Sprintf("runtime argument %s refused: mounts, networks, devices, users, privileges and limits "+
				"come only from the gateway's container hardening", flag))
		default:
			r.warnings = append(r.warnings, fmt.Sprintf("runtime argument %s ignored: the gateway builds the container itself", flag))
		}
	}
}

// widening are docker run flags that would loosen the hardening.
var widening = map[string]bool{
	"privileged": true, "cap-add": true, "device": true, "device-cgroup-rule": true, "gpus": true,
	"v": true, "volume": true, "mount": true, "volumes-from": true, "tmpfs": true,
	"network": true, "net": true, "network-alias": true, "p": true, "publish": true, "P": true, "publish-all": true,
	"add-host": true, "dns": true, "dns-search": true, "dns-option": true, "ip": true, "ip6": true, "link": true,
	"pid": true, "ipc": true, "uts": true, "userns": true, "cgroupns": true, "cgroup-parent": true,
	"security-opt": true, "u": true, "user": true, "group-add": true, "runtime": true, "sysctl": true, "ulimit": true,
	"memory": true, "m": true, "memory-swap": true, "cpus": true, "pids-limit": true, "oom-kill-disable": true,
}

// imageRef builds the image reference of an oci package: the identifier,
// prefixed with the package's registry host when it names one and the
// identifier does not, and tagged with the version when untagged.
func imageRef(p Package) (string, error) {
	ref := strings.TrimSpace(p.Identifier)
	if ref == "" {
		return "", fmt.Errorf("oci package has no identifier")
	}
	if base := strings.TrimSpace(p.RegistryBaseURL); base != "" {
		host := base
		if u, err := url.Parse(base); err == nil && u.Host != "" {
			host = u.Host
		}
		host = strings.TrimSuffix(host, "/")
		first, _, _ := strings.Cut(ref, "/")
		hasHost := strings.ContainsAny(first, ".:") || first == "localhost"
		switch host {
		case "docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com":
		default:
			if !hasHost && host != "" {
				ref = host + "/" + ref
			}
		}
	}
	if v := strings.TrimSpace(p.Version); v != "" && !hasTagOrDigest(ref) {
		ref += ":" + v
	}
	if !imageRe().MatchString(ref) || len(ref) > 255 || strings.Contains(ref, "..") {
		return "", fmt.Errorf("oci identifier %q is not an image reference", ref)
	}
	if first, _, _ := strings.Cut(ref, "/"); strings.Contains(first, ":") {
		_, port, err := net.SplitHostPort(first)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("oci identifier %q is not an image reference", ref)
		}
	}
	return ref, nil
}

var imageRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._/:@+-]*$`) })

func hasTagOrDigest(ref string) bool {
	if strings.Contains(ref, "@") {
		return true
	}
	return strings.Contains(lastSegment(ref), ":")
}

// remote builds a remote spec.
func (r *resolver) remote(id string, t Transport, exec config.Execution) (*config.Server, error) {
	endpoint, _ := r.template(t.URL, t.Variables)
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		if len(r.missing) > 0 {
			// The URL is incomplete because a variable is missing; that
			// is the answer.
			return config.NewServer(id, config.ModeRemote, exec), nil
		}
		return nil, fmt.Errorf("remote url %q is not an http(s) URL", t.URL)
	}
	s := config.NewServer(id, config.ModeRemote, exec)
	s.Endpoint = endpoint
	if strings.EqualFold(t.Type, TransportSSE) {
		s.Transport = config.TransportSSE
	}
	for _, h := range t.Headers {
		if h.Name == "" || strings.ContainsAny(h.Name, " :\r\n") {
			r.warnings = append(r.warnings, fmt.Sprintf("header %q ignored: not a valid name", h.Name))
			continue
		}
		if v, ok := r.input(h.Name, h.Input); ok {
			if s.Headers == nil {
				s.Headers = map[string]string{}
			}
			s.Headers[h.Name] = v
		}
	}
	return s, nil
}

// instructions tells the operator how to supply missing values.
func instructions(name string, missing []string, described map[string]string, plain bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s needs values the gateway's environment does not provide:\n", name)
	for _, m := range missing {
		if d := described[m]; d != "" {
			fmt.Fprintf(&b, "  - %s: %s\n", m, d)
		} else {
			fmt.Fprintf(&b, "  - %s\n", m)
		}
	}
	ex := missing[0]
	if plain {
		fmt.Fprintf(&b, "Set each in the gateway's environment as %s<NAME> (e.g. %s%s) or as <NAME> itself (e.g. %s)",
			config.SecretEnvPrefix, config.SecretEnvPrefix, ex, ex)
	} else {
		fmt.Fprintf(&b, "This server is unverified, so only %s<NAME> variables reach it: set e.g. %s%s in the gateway's environment",
			config.SecretEnvPrefix, config.SecretEnvPrefix, ex)
	}
	b.WriteString(" (docker run -e, or the environment: of the gateway's compose service), restart the gateway, " +
		"then call hangar_load again. The values go to the MCP server only and are never shown in answers.")
	return b.String()
}

// idInvalid are runs of characters a server ID may not have.
var idInvalid = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-zA-Z0-9_.-]+`) })

const maxIDLen = 63

// ProviderID is the provider ID for a registry name: its last segment
// made to match ^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$.
func ProviderID(name string) string {
	id := idInvalid().ReplaceAllString(lastSegment(strings.TrimSpace(name)), "-")
	id = strings.TrimLeft(id, "_.-")
	if len(id) > maxIDLen {
		id = id[:maxIDLen]
	}
	if id == "" {
		id = "mcp-server"
	}
	return id
}

// withSuffix returns id for n == 1, else id-n, shortened to stay valid.
func withSuffix(id string, n int) string {
	if n <= 1 {
		return id
	}
	suffix := "-" + strconv.Itoa(n)
	if len(id)+len(suffix) > maxIDLen {
		id = id[:maxIDLen-len(suffix)]
	}
	return id + suffix
}

// redact replaces every secret in s.
func redact(s string, secrets []string) string {
	sorted := slices.Clone(secrets)
	slices.SortFunc(sorted, func(a, b string) int { return len(b) - len(a) })
	for _, v := range sorted {
		if v != "" {
			s = strings.ReplaceAll(s, v, "[REDACTED]")
		}
	}
	return s
}
