package config

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	npm "github.com/aquasecurity/go-npm-version/pkg"
	pep440 "github.com/aquasecurity/go-pep440-version"
)

// Package types: of a server's package: key, and of hot-loading's
// registry.package_types (which knows oci images too).
const (
	PackageOCI  = "oci"
	PackageNPM  = "npm"
	PackagePyPI = "pypi"
)

// Package is an npm or PyPI package a docker server runs: `package:` in
// the config file, or what an installed `npx`/`uvx`/… line or a
// hot-loaded registry entry maps to. The gateway resolves Version once to
// an exact version and its digest, builds an image of it on the runtime
// image of Runner, and runs that image (package internal/packages).
type Package struct {
	Type string // PackageNPM | PackagePyPI
	Name string // as the registry spells it: "@scope/name", "mcp-server-fetch"
	// Version is an exact version, a range (npm: "^1.2", PyPI: ">=1,<2"),
	// or "" for the latest release.
	Version string
	// Runner names the runtime (runtimes.<runner>) the package is
	// installed and run with: npx for npm; uvx, uv, pipx, python or
	// python3 for PyPI.
	Runner string
	// Command is the executable the package installs that the server
	// runs ("" for the package's own: its only bin, or the one named like
	// it); Module runs `python -m Module` instead (PyPI only).
	Command string
	Module  string
	// AllowScripts runs install-time code: npm's lifecycle scripts, and
	// building Python source distributions (default: neither).
	AllowScripts bool
	// Registry is where the package comes from: the npm registry's URL,
	// or the PyPI simple index's; "" for the runtime's (its env's
	// npm_config_registry, UV_INDEX_URL or PIP_INDEX_URL), else the
	// public one.
	Registry string
}

// String names the package as asked for: "npm:@scope/name@^1.2",
// "pypi:mcp-server-fetch@latest".
func (p Package) String() string {
	v := p.Version
	if v == "" {
		v = "latest"
	}
	return p.Type + ":" + p.Name + "@" + v
}

// Package runners: the commands of client configs that fetch and run a
// package, with the package type each installs.
var packageRunners = map[string]string{
	"npx": PackageNPM,
	"uvx": PackagePyPI, "uv": PackagePyPI, "pipx": PackagePyPI, "python": PackagePyPI, "python3": PackagePyPI,
}

// PackageRunnerType is the package type runner installs, "" when runner
// is not a package runner.
func PackageRunnerType(runner string) string { return packageRunners[runner] }

// DefaultRunner is the runner of a package type when none is named.
func DefaultRunner(pkgType string) string {
	if pkgType == PackagePyPI {
		return "uvx"
	}
	return "npx"
}

var (
	npmNameRe  = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)
	pypiNameRe = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9._-]*[a-z0-9])?$`)
	commandRe  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)
	moduleRe   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
)

// CheckPackage returns why p cannot be run, naming the field (its config
// key) as field: message, or "" when it can. It is the one check of a
// package, whichever source made it.
func CheckPackage(p Package) (field, msg string) {
	switch p.Type {
	case PackageNPM:
		if !npmNameRe.MatchString(strings.ToLower(p.Name)) {
			return "name", "not an npm package name (got " + strconv.Quote(p.Name) + ")"
		}
	case PackagePyPI:
		if !pypiNameRe.MatchString(p.Name) {
			return "name", "not a PyPI project name (got " + strconv.Quote(p.Name) + ")"
		}
	default:
		return "type", "must be npm or pypi (got " + strconv.Quote(p.Type) + ")"
	}
	if why := CheckVersion(p.Type, p.Version); why != "" {
		return "version", why
	}
	if p.Runner != "" && packageRunners[p.Runner] != p.Type {
		return "runner", "runner " + strconv.Quote(p.Runner) + " does not run " + p.Type + " packages (want " + strings.Join(runnersOf(p.Type), ", ") + ")"
	}
	if p.Command != "" && !commandRe.MatchString(p.Command) {
		return "command", "must be the name of an executable the package installs (got " + strconv.Quote(p.Command) + ")"
	}
	if p.Module != "" {
		switch {
		case p.Type != PackagePyPI:
			return "module", "only PyPI packages run a module (python -m)"
		case p.Command != "":
			return "module", "cannot be used together with command"
		case !moduleRe.MatchString(p.Module):
			return "module", "not a Python module name (got " + strconv.Quote(p.Module) + ")"
		}
	}
	if p.Registry != "" {
		if u, err := url.Parse(p.Registry); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "registry", "must be an http(s) URL (got " + strconv.Quote(p.Registry) + ")"
		}
	}
	return "", ""
}

// CheckVersion returns why version is neither empty, "latest", an exact
// version nor a range of pkgType, or "".
func CheckVersion(pkgType, version string) string {
	v := strings.TrimSpace(version)
	if v == "" || v == "latest" {
		return ""
	}
	switch pkgType {
	case PackageNPM:
		if _, err := npm.NewConstraints(v); err != nil {
			return "not an npm version or range (got " + strconv.Quote(version) + ")"
		}
	case PackagePyPI:
		if _, err := pep440.Parse(v); err == nil {
			return ""
		}
		if _, err := pep440.NewSpecifiers(v); err != nil {
			return "not a PyPI version or version specifier such as \">=1.2,<2\" (got " + strconv.Quote(version) + ")"
		}
	}
	return ""
}

func runnersOf(pkgType string) []string {
	var out []string
	for r, t := range packageRunners {
		if t == pkgType {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

const packageDoc = "An npm or PyPI package the server runs instead of an image: the gateway builds an image of it once, on its runner's runtime image (docs/runtimes.md)."

// serverPackage decodes a docker server's package: key.
func (d *decoder) serverPackage(s *section) *Package {
	ps := s.sub("package", packageDoc)
	p := &Package{}
	const typeDoc, nameDoc = "npm or pypi.", `The package's name as its registry spells it: "@scope/name", "mcp-server-fetch".`
	if !ps.has("type") {
		ps.def("type", typeDoc, "string")
		ps.take("type")
		d.add(ps.at("type"), "required (npm or pypi)")
	} else {
		ps.enum("type", &p.Type, typeDoc, PackageNPM, PackagePyPI)
	}
	if !ps.has("name") {
		ps.def("name", nameDoc, "string")
		ps.take("name")
		d.add(ps.at("name"), "required")
	} else {
		ps.str("name", &p.Name, nameDoc)
	}
	ps.str("version", &p.Version, `An exact version, a range (npm "^1.2", PyPI ">=1,<2") or latest; resolved once to an exact version and digest. Unset: the latest.`)
	ps.str("runner", &p.Runner, "The runtime it is installed and run with (runtimes.<runner>): npx for npm; uvx, uv, pipx, python or python3 for PyPI. Default npx or uvx.",
		oneOf(sortedKeys(packageRunners)...))
	ps.str("command", &p.Command, "The executable the package installs that the server runs; default the package's own.",
		match(func() *regexp.Regexp { return commandRe }))
	ps.str("module", &p.Module, "PyPI: run python -m module instead of a command.",
		match(func() *regexp.Regexp { return moduleRe }))
	ps.boolean("allow_scripts", &p.AllowScripts,
		"Run install-time code: npm's lifecycle scripts, building Python source distributions.")
	ps.str("registry", &p.Registry, "The npm registry's or PyPI simple index's URL; default the runtime's (its env), else the public one.",
		format("uri"))
	ps.finish()
	p.Version = strings.TrimSpace(p.Version)
	if p.Type != "" && p.Name != "" {
		if p.Runner == "" {
			p.Runner = DefaultRunner(p.Type)
		}
		if field, msg := CheckPackage(*p); field != "" {
			d.add(ps.at(field), "%s", msg)
		}
	}
	return p
}
