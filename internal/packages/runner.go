package packages

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/mcp-hangar/hangar/internal/config"
)

// Line is what a runner's command line (npx -y pkg args, uvx pkg, …)
// runs: a package and the server's arguments, or a file of the host.
type Line struct {
	// Package is the package the line runs; nil when it runs File.
	Package *config.Package
	// Args are the server's own arguments (after the package or file).
	Args []string
	// File is the host file `node FILE` or `python FILE` runs, with
	// Args holding the runner's options before it and the arguments after.
	File string
	// Warnings are options the gateway does not honour (the runtime
	// image decides the Python version, for one).
	Warnings []string
}

// ParseLine reads the command line of a package runner: runner is the
// command's base name (npx, uvx, uv, pipx, python, python3, node), args
// what follows it. An error says what the line asks for that the gateway
// cannot do; it never quotes an argument's value beyond the option's
// name, since arguments may hold secrets.
func ParseLine(runner string, args []string) (Line, error) {
	switch runner {
	case "npx":
		return parseNpx(args)
	case "uvx":
		return parseUvx(args, "uvx")
	case "uv":
		return parseUv(args)
	case "pipx":
		return parsePipx(args)
	case "python", "python3":
		return parsePython(runner, args)
	case "node":
		return parseNode(args)
	}
	return Line{}, fmt.Errorf("%q is not a package runner", runner)
}

// IsRunner reports whether ParseLine reads runner's lines.
func IsRunner(runner string) bool {
	return runner == "node" || config.PackageRunnerType(runner) != ""
}

// opts walks a runner's options: flags without a value, options with one
// (--x v or --x=v), anything else stops the walk.
type opts struct {
	args []string
	i    int
}

func (o *opts) more() bool {
	return o.i < len(o.args) && strings.HasPrefix(o.args[o.i], "-") && o.args[o.i] != "-"
}

// next returns the option's name and, for valued ones, its value.
func (o *opts) next(valued map[string]bool) (name, value string, err error) {
	a := o.args[o.i]
	o.i++
	if a == "--" {
		return a, "", nil
	}
	name, value, inline := strings.Cut(a, "=")
	if !valued[name] {
		if inline {
			return "", "", fmt.Errorf("option %s takes no value", name)
		}
		return name, "", nil
	}
	if inline {
		return name, value, nil
	}
	if o.i >= len(o.args) {
		return "", "", fmt.Errorf("option %s needs a value", name)
	}
	value = o.args[o.i]
	o.i++
	return name, value, nil
}

func (o *opts) rest() []string { return o.args[o.i:] }

var npxValued = map[string]bool{"-p": true, "--package": true, "-c": true, "--call": true, "--registry": true, "--cache": true,
	"--userconfig": true, "--loglevel": true, "-w": true, "--workspace": true}

// parseNpx reads `npx [options] <pkg>[@<version>] [args]` and
// `npx -p <pkg> <command> [args]`.
func parseNpx(args []string) (Line, error) {
	o := &opts{args: args}
	var pkgSpec, registry string
options:
	for o.more() {
		name, value, err := o.next(npxValued)
		if err != nil {
			return Line{}, fmt.Errorf("npx: %w", err)
		}
		switch name {
		case "--":
			break options
		case "-y", "--yes", "-q", "--quiet", "--silent", "--prefer-online", "--prefer-offline", "--no-update-notifier", "--ignore-existing":
		case "-p", "--package":
			if pkgSpec != "" {
				return Line{}, fmt.Errorf("npx: more than one --package: a server runs one package")
			}
			pkgSpec = value
		case "--registry":
			registry = value
		case "-c", "--call":
			return Line{}, fmt.Errorf("npx: %s runs a shell command, not a package: name the package and its command", name)
		case "--no", "--no-install":
			return Line{}, fmt.Errorf("npx: %s runs only what is installed already; the gateway installs the package", name)
		default:
			return Line{}, fmt.Errorf("npx: option %s is not supported", name)
		}
	}
	rest := o.rest()
	var command string
	if pkgSpec == "" {
		if len(rest) == 0 {
			return Line{}, fmt.Errorf("npx: no package named")
		}
		pkgSpec, rest = rest[0], rest[1:]
	} else {
		if len(rest) == 0 {
			return Line{}, fmt.Errorf("npx: --package %s names no command to run", pkgSpec)
		}
		command, rest = rest[0], rest[1:]
	}
	name, version, err := splitNpmSpec(pkgSpec)
	if err != nil {
		return Line{}, fmt.Errorf("npx: %w", err)
	}
	p := &config.Package{Type: config.PackageNPM, Name: name, Version: version, Runner: "npx", Command: command, Registry: registry}
	return checked(p, rest, nil)
}

// splitNpmSpec splits name[@version] (the name may be @scope/name).
func splitNpmSpec(spec string) (name, version string, err error) {
	at := strings.LastIndex(spec, "@")
	if at > 0 {
		name, version = spec[:at], spec[at+1:]
	} else {
		name = spec
	}
	switch {
	case strings.HasPrefix(spec, "npm:"), strings.Contains(spec, "://"), strings.HasPrefix(spec, "git"),
		strings.HasPrefix(spec, ".") || strings.HasPrefix(spec, "/") || strings.HasSuffix(name, ".tgz"):
		return "", "", fmt.Errorf("%s is not a registry package (a path, URL, git or alias spec): the gateway installs packages from a registry", firstWord(spec))
	case strings.HasPrefix(name, "@") && !strings.Contains(name, "/"):
		return "", "", fmt.Errorf("%s is not a package name", firstWord(spec))
	}
	if version == "latest" {
		version = ""
	}
	return name, version, nil
}

var uvxValued = map[string]bool{"--from": true, "--python": true, "-p": true, "--with": true, "--with-requirements": true,
	"--index-url": true, "-i": true, "--default-index": true, "--index": true, "--extra-index-url": true, "--cache-dir": true,
	"--prerelease": true, "--resolution": true, "--python-preference": true, "--spec": true, "--pip-args": true}

// uvOptions are the options uvx and `uv tool run` share with uv run.
func uvOption(runner, name, value string, p *config.Package, warn *[]string) error {
	switch name {
	case "-q", "--quiet", "-v", "--verbose", "--refresh", "--no-cache", "--isolated", "--offline", "--no-progress",
		"--native-tls", "--no-python-downloads", "--managed-python", "--no-managed-python", "--no-project":
	case "--python", "-p", "--python-preference":
		*warn = append(*warn, fmt.Sprintf("%s %s ignored: the server runs on the Python of its runtime image", runner, name))
	case "--index-url", "-i", "--default-index", "--index":
		p.Registry = value
	case "--with", "--with-requirements", "--extra-index-url":
		return fmt.Errorf("%s: %s is not supported: a server runs one package (its dependencies come with it)", runner, name)
	default:
		return fmt.Errorf("%s: option %s is not supported", runner, name)
	}
	return nil
}

// parseUvx reads `uvx [options] <command>[@version] [args]` and
// `uvx --from <requirement> <command> [args]`.
func parseUvx(args []string, runner string) (Line, error) {
	o := &opts{args: args}
	p := &config.Package{Type: config.PackagePyPI, Runner: "uvx"}
	var from string
	var warn []string
options:
	for o.more() {
		name, value, err := o.next(uvxValued)
		if err != nil {
			return Line{}, fmt.Errorf("%s: %w", runner, err)
		}
		switch name {
		case "--":
			break options
		case "--from":
			from = value
		default:
			if err := uvOption(runner, name, value, p, &warn); err != nil {
				return Line{}, err
			}
		}
	}
	rest := o.rest()
	if len(rest) == 0 {
		return Line{}, fmt.Errorf("%s: no command named", runner)
	}
	command := rest[0]
	rest = rest[1:]
	if from == "" {
		name, version, err := splitRequirement(command)
		if err != nil {
			return Line{}, fmt.Errorf("%s: %w", runner, err)
		}
		p.Name, p.Version, p.Command = name, version, name
	} else {
		if strings.ContainsAny(command, "@=<>!~") {
			return Line{}, fmt.Errorf("%s: with --from, %s must be a command, not a requirement", runner, firstWord(command))
		}
		name, version, err := splitRequirement(from)
		if err != nil {
			return Line{}, fmt.Errorf("%s: --from: %w", runner, err)
		}
		p.Name, p.Version, p.Command = name, version, command
	}
	return checked(p, rest, warn)
}

var requirementRe = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(.*)$`)

// splitRequirement reads a PyPI requirement as uv takes it: name,
// name@version (exact; @latest is the latest), or name followed by a
// version specifier (name==1.2, name>=1,<2).
func splitRequirement(req string) (name, version string, err error) {
	req = strings.TrimSpace(req)
	if strings.Contains(req, "://") || strings.HasPrefix(req, ".") || strings.HasPrefix(req, "/") || strings.HasPrefix(req, "git+") {
		return "", "", fmt.Errorf("%s is not a PyPI requirement (a path or URL): the gateway installs packages from an index", firstWord(req))
	}
	if n, v, ok := strings.Cut(req, "@"); ok {
		if v == "latest" {
			v = ""
		}
		if !strings.ContainsAny(n, "[=<>!~ ") && v != "" && !strings.ContainsAny(v[:1], "=<>!~") {
			v = "==" + v
		}
		return n, v, nil
	}
	m := requirementRe.FindStringSubmatch(req)
	if m == nil {
		return "", "", fmt.Errorf("%s is not a PyPI requirement", firstWord(req))
	}
	if m[2] != "" {
		return "", "", fmt.Errorf("%s: extras (%s) are not supported", m[1], m[2])
	}
	return m[1], strings.TrimSpace(m[3]), nil
}

// parseUv reads `uv tool run …` (uvx) and `uv run --with <pkg> <command>
// [args]`; a uv run of a local project is not a package.
func parseUv(args []string) (Line, error) {
	if len(args) >= 2 && args[0] == "tool" && args[1] == "run" {
		return parseUvx(args[2:], "uv tool run")
	}
	if len(args) == 0 || args[0] != "run" {
		what := "no command"
		if len(args) > 0 {
			what = firstWord(args[0])
		}
		return Line{}, fmt.Errorf("uv: %s runs a local project, not a package: use uvx <package>, or uv run --with <package> <command>", what)
	}
	o := &opts{args: args[1:]}
	p := &config.Package{Type: config.PackagePyPI, Runner: "uv"}
	var warn []string
	var with string
options:
	for o.more() {
		name, value, err := o.next(uvxValued)
		if err != nil {
			return Line{}, fmt.Errorf("uv run: %w", err)
		}
		switch name {
		case "--":
			break options
		case "--with":
			if with != "" {
				return Line{}, fmt.Errorf("uv run: more than one --with: a server runs one package")
			}
			with = value
		default:
			if err := uvOption("uv run", name, value, p, &warn); err != nil {
				return Line{}, err
			}
		}
	}
	if with == "" {
		return Line{}, fmt.Errorf("uv run without --with runs a local project, not a package: use uvx <package>, or uv run --with <package> <command>")
	}
	name, version, err := splitRequirement(with)
	if err != nil {
		return Line{}, fmt.Errorf("uv run: --with: %w", err)
	}
	p.Name, p.Version = name, version
	rest := o.rest()
	if len(rest) == 0 {
		return Line{}, fmt.Errorf("uv run: no command named")
	}
	if rest[0] == "python" || rest[0] == "python3" {
		mod, after, err := moduleArgs(rest[1:])
		if err != nil {
			return Line{}, fmt.Errorf("uv run: %w", err)
		}
		p.Module = mod
		return checked(p, after, warn)
	}
	p.Command = rest[0]
	return checked(p, rest[1:], warn)
}

var pipxValued = map[string]bool{"--spec": true, "--python": true, "--pip-args": true, "--index-url": true}

// parsePipx reads `pipx run [--spec <requirement>] <app> [args]`.
func parsePipx(args []string) (Line, error) {
	if len(args) == 0 || args[0] != "run" {
		return Line{}, fmt.Errorf("pipx: only pipx run starts a server")
	}
	o := &opts{args: args[1:]}
	p := &config.Package{Type: config.PackagePyPI, Runner: "pipx"}
	var spec string
	var warn []string
options:
	for o.more() {
		name, value, err := o.next(pipxValued)
		if err != nil {
			return Line{}, fmt.Errorf("pipx run: %w", err)
		}
		switch name {
		case "--":
			break options
		case "--spec":
			spec = value
		case "--no-cache", "-q", "--quiet", "-v", "--verbose":
		case "--python":
			warn = append(warn, "pipx run --python ignored: the server runs on the Python of its runtime image")
		case "--index-url":
			p.Registry = value
		default:
			return Line{}, fmt.Errorf("pipx run: option %s is not supported", name)
		}
	}
	rest := o.rest()
	if len(rest) == 0 {
		return Line{}, fmt.Errorf("pipx run: no app named")
	}
	req := rest[0]
	if spec != "" {
		req = spec
	}
	name, version, err := splitRequirement(req)
	if err != nil {
		return Line{}, fmt.Errorf("pipx run: %w", err)
	}
	p.Name, p.Version = name, version
	p.Command = rest[0]
	if spec == "" {
		p.Command = name
	}
	return checked(p, rest[1:], warn)
}

// parsePython reads `python -m <module> [args]`, which runs the PyPI
// project named like the module's top-level package
// (mcp_server_time → mcp-server-time), and `python <file> [args]`.
func parsePython(runner string, args []string) (Line, error) {
	for i, a := range args {
		switch {
		case a == "-m":
			mod, after, err := moduleArgs(args[i:])
			if err != nil {
				return Line{}, fmt.Errorf("%s: %w", runner, err)
			}
			top, _, _ := strings.Cut(mod, ".")
			p := &config.Package{Type: config.PackagePyPI, Name: NormalizePyPI(top), Runner: runner, Module: mod}
			return checked(p, after, nil)
		case a == "-c":
			return Line{}, fmt.Errorf("%s -c runs inline code, not a package", runner)
		case strings.HasPrefix(a, "-"):
			continue
		default:
			return Line{File: a, Args: args}, nil
		}
	}
	return Line{}, fmt.Errorf("%s: no module (-m) or file named", runner)
}

// moduleArgs reads "-m module args…".
func moduleArgs(args []string) (module string, rest []string, err error) {
	if len(args) < 2 || args[0] != "-m" {
		return "", nil, fmt.Errorf("want -m <module>")
	}
	return args[1], args[2:], nil
}

// parseNode reads `node [options] <file> [args]`: a file of the host.
func parseNode(args []string) (Line, error) {
	for _, a := range args {
		switch {
		case a == "-e" || a == "--eval" || a == "-p" || a == "--print":
			return Line{}, fmt.Errorf("node %s runs inline code, not a file or package", a)
		case strings.HasPrefix(a, "-"):
			continue
		default:
			return Line{File: a, Args: args}, nil
		}
	}
	return Line{}, fmt.Errorf("node: no file named")
}

// checked validates the package a line names.
func checked(p *config.Package, args []string, warn []string) (Line, error) {
	if field, msg := config.CheckPackage(*p); field != "" {
		return Line{}, fmt.Errorf("%s %s: %s", p.Type, field, msg)
	}
	return Line{Package: p, Args: args, Warnings: warn}, nil
}

var pypiSeparators = regexp.MustCompile(`[-_.]+`)

// NormalizePyPI is a PyPI project name as the simple index spells it
// (PEP 503): lower case, runs of -, _ and . as one -.
func NormalizePyPI(name string) string {
	return strings.ToLower(pypiSeparators.ReplaceAllString(name, "-"))
}

// firstWord is s cut at its first space and to 60 bytes, for messages.
func firstWord(s string) string {
	s, _, _ = strings.Cut(s, " ")
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}
