package packages

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
)

// Where a package image keeps what the gateway installed. The install
// runs as the server's user, which owns /opt/hangar; the run mounts the
// root read-only, so the server cannot change its own code.
const (
	installRoot = "/opt/hangar"
	installEnv  = installRoot + "/install.env"
	installSh   = installRoot + "/install.sh"
	srcDir      = installRoot + "/src"
	npmPrefix   = installRoot + "/npm"
	venvDir     = installRoot + "/venv"
	basePATH    = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// recipe changes whenever what an install does changes, so that images
// built the old way are not taken for current ones.
const recipe = "1"

// Image labels of a package image, besides the gateway's own (managed,
// owner, server).
const (
	LabelPackageType    = "io.mcp-hangar.package.type"
	LabelPackageName    = "io.mcp-hangar.package.name"
	LabelPackageVersion = "io.mcp-hangar.package.version"
	LabelPackageDigest  = "io.mcp-hangar.package.digest"
	LabelPackageRuntime = "io.mcp-hangar.package.runtime"
	// LabelPackageBase is the ID the runtime image had at the build.
	LabelPackageBase = "io.mcp-hangar.package.base"
)

// uid and gid of the install, the user DefaultUser names.
const installUID, installGID = 65534, 65534

// plan is one image to build: the package's file and how to install and
// run it.
type plan struct {
	pkg      config.Package
	art      Artifact
	data     []byte
	command  string // the executable run (npm bin, console script); "" with pkg.Module
	env      map[string]string
	registry string
	base     dockerrt.ImageInfo
	runtime  string // the runtime image as configured
	tag      string
}

// imageTag names the image of a package release built on the runtime
// image runtime (as configured: a reference that moves later does not
// make the built image stale, only a runtime the config changes does) by
// owner: readable (type, name, version) and unique to everything that
// shapes it. The command it runs is not part of it: the package's content
// (its digest) and pkg.Command or pkg.Module decide that.
func imageTag(owner string, runtime string, pkg config.Package, version, integrity string) string {
	h := sha256.New()
	for _, s := range []string{recipe, owner, runtime, pkg.Type, pkg.Name, version, integrity, pkg.Command, pkg.Module,
		fmt.Sprint(pkg.AllowScripts)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	sum := hex.EncodeToString(h.Sum(nil))[:12]
	return "hangar-pkg/" + pkg.Type + "-" + repoPart(pkg.Name) + ":" + tagPart(version) + "-" + sum
}

var (
	repoInvalid = regexp.MustCompile(`[^a-z0-9]+`)
	tagInvalid  = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)
)

func repoPart(name string) string {
	s := strings.Trim(repoInvalid.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(s) > 80 {
		s = s[:80]
	}
	if s == "" {
		s = "package"
	}
	return s
}

func tagPart(version string) string {
	s := strings.Trim(tagInvalid.ReplaceAllString(version, "_"), "._-")
	if len(s) > 60 {
		s = s[:60]
	}
	if s == "" {
		s = "v"
	}
	return s
}

var envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// installEnvFile is the install step's environment as a file the script
// reads and deletes first thing: the runtime's env (which may hold a
// mirror's credentials) never enters the image's configuration, and the
// committed layer never holds the file.
func installEnvFile(env map[string]string) ([]byte, error) {
	var b strings.Builder
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range env {
			if !yield(k) {
				return
			}
		}
	}) {
		if !envNameRe.MatchString(k) {
			return nil, fmt.Errorf("runtime env %q is not a variable name", k)
		}
		fmt.Fprintf(&b, "export %s=%s\n", k, shQuote(env[k]))
	}
	return []byte(b.String()), nil
}

// shQuote quotes s for sh.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// registryEnv is what tells the package manager in the install step where
// packages come from: npm's registry, or the index for pip and uv (both
// spelled, whichever the image has), with an http index's host trusted
// (it has no TLS to check; the operator or the registry entry named it).
func registryEnv(pkgType, registry string, env map[string]string) {
	switch pkgType {
	case config.PackageNPM:
		env["npm_config_registry"] = registry
	case config.PackagePyPI:
		env["PIP_INDEX_URL"], env["UV_INDEX_URL"], env["UV_DEFAULT_INDEX"] = registry, registry, registry
		if u, err := url.Parse(registry); err == nil && u.Scheme == "http" {
			host := u.Hostname()
			for _, k := range []string{"PIP_TRUSTED_HOST", "UV_INSECURE_HOST"} {
				if !slices.Contains(strings.Fields(env[k]), host) {
					env[k] = strings.TrimSpace(env[k] + " " + host)
				}
			}
		}
	}
}

// registryFor is the registry a package comes from: one the package names
// (a registry entry's registryBaseUrl, an --index-url), unless it is the
// public one and the runtime names a mirror; else the runtime's mirror;
// else the public registry.
func registryFor(pkg config.Package, runtimeEnv map[string]string) string {
	var mirror, public string
	switch pkg.Type {
	case config.PackageNPM:
		public = DefaultNPMRegistry
		mirror = firstSet(runtimeEnv, "npm_config_registry", "NPM_CONFIG_REGISTRY")
	case config.PackagePyPI:
		public = DefaultPyPIIndex
		mirror = firstSet(runtimeEnv, "UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL")
	}
	switch {
	case pkg.Registry != "" && (mirror == "" || !samePlace(pkg.Registry, public)):
		return pkg.Registry
	case mirror != "":
		return mirror
	}
	return public
}

func firstSet(env map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := strings.TrimSpace(env[k]); v != "" {
			return v
		}
	}
	return ""
}

// samePlace compares registry URLs loosely (scheme, host, path without
// its trailing slash).
func samePlace(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return strings.EqualFold(ua.Host, ub.Host) && strings.TrimRight(ua.Path, "/") == strings.TrimRight(ub.Path, "/")
}

var fileRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// script is the install step: it runs as the server's user in the
// runtime image, with the registry reachable and nothing else of the
// server's; npm installs without lifecycle scripts and pip without
// building sources unless the package allows scripts. It ends by checking
// that what the server runs is there.
func (p *plan) script() (string, error) {
	file := p.art.File
	if p.pkg.Type == config.PackageNPM {
		file = "package.tgz"
	}
	if !fileRe.MatchString(file) {
		return "", fmt.Errorf("%w: file name %q is not one the gateway installs", ErrUnusable, short(file))
	}
	src := shQuote(srcDir + "/" + file)
	var b strings.Builder
	b.WriteString("set -eu\n")
	fmt.Fprintf(&b, ". %s\nrm -f %s\n", installEnv, installEnv)
	b.WriteString("export HOME=/tmp\n")
	switch p.pkg.Type {
	case config.PackageNPM:
		b.WriteString(`command -v npm >/dev/null 2>&1 || { echo "hangar: the runtime image has no npm" >&2; exit 127; }` + "\n")
		b.WriteString("export npm_config_cache=/tmp/.npm npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false npm_config_loglevel=warn\n")
		scripts := " --ignore-scripts"
		if p.pkg.AllowScripts {
			scripts = ""
		}
		fmt.Fprintf(&b, "npm install --global --prefix %s%s %s\n", npmPrefix, scripts, src)
		fmt.Fprintf(&b, "test -e %s || { echo \"hangar: the package installed no command %s\" >&2; exit 3; }\n",
			shQuote(npmPrefix+"/bin/"+p.command), p.command)
	case config.PackagePyPI:
		b.WriteString("export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore UV_CACHE_DIR=/tmp/.uv UV_PYTHON_DOWNLOADS=never UV_NO_PROGRESS=1\n")
		b.WriteString(`PY=$(command -v python3 || command -v python || true)` + "\n")
		b.WriteString(`[ -n "$PY" ] || { echo "hangar: the runtime image has no python3" >&2; exit 127; }` + "\n")
		binary := " --only-binary=:all:"
		if p.pkg.AllowScripts {
			binary = ""
		}
		fmt.Fprintf(&b, "if command -v uv >/dev/null 2>&1; then\n")
		fmt.Fprintf(&b, "  uv venv --quiet --python \"$PY\" %s\n", venvDir)
		fmt.Fprintf(&b, "  uv pip install --quiet --python %s/bin/python%s %s\n", venvDir, binary, src)
		b.WriteString("else\n")
		fmt.Fprintf(&b, "  \"$PY\" -m venv %s\n", venvDir)
		fmt.Fprintf(&b, "  %s/bin/python -m pip install --quiet%s %s\n", venvDir, binary, src)
		b.WriteString("fi\n")
		if p.command != "" {
			fmt.Fprintf(&b, "test -x %s || { echo \"hangar: the package installed no command %s\" >&2; exit 3; }\n",
				shQuote(venvDir+"/bin/"+p.command), p.command)
		}
	}
	fmt.Fprintf(&b, "rm -rf %s %s\n", srcDir, installSh)
	return b.String(), nil
}

// entrypoint is what the image runs, and pathDir the directory its PATH
// starts with.
func (p *plan) entrypoint() (entry []string, pathDir string) {
	switch {
	case p.pkg.Type == config.PackageNPM:
		return []string{npmPrefix + "/bin/" + p.command}, npmPrefix + "/bin"
	case p.pkg.Module != "":
		return []string{venvDir + "/bin/python", "-m", p.pkg.Module}, venvDir + "/bin"
	}
	return []string{venvDir + "/bin/" + p.command}, venvDir + "/bin"
}

// commitSpec is the build of p for server.
func (p *plan) commitSpec(server string) (dockerrt.CommitSpec, error) {
	sh, err := p.script()
	if err != nil {
		return dockerrt.CommitSpec{}, err
	}
	envFile, err := installEnvFile(p.env)
	if err != nil {
		return dockerrt.CommitSpec{}, err
	}
	file := p.art.File
	if p.pkg.Type == config.PackageNPM {
		file = "package.tgz"
	}
	entry, pathDir := p.entrypoint()
	path := basePATH
	for _, e := range p.base.Env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			path = v
		}
	}
	dir := func(path string, mode int64) dockerrt.File {
		return dockerrt.File{Path: path, Dir: true, Mode: mode, UID: installUID, GID: installGID}
	}
	file0 := func(path string, mode int64, data []byte) dockerrt.File {
		return dockerrt.File{Path: path, Mode: mode, UID: installUID, GID: installGID, Data: data}
	}
	return dockerrt.CommitSpec{
		ServerID: server,
		Base:     p.base.ID,
		Files: []dockerrt.File{
			dir(installRoot, 0o755), dir(srcDir, 0o755),
			file0(installSh, 0o644, []byte(sh)),
			file0(installEnv, 0o600, envFile),
			file0(srcDir+"/"+file, 0o644, p.data),
		},
		Cmd:  []string{"/bin/sh", installSh},
		User: fmt.Sprintf("%d:%d", installUID, installGID),
		Tag:  p.tag,
		Labels: map[string]string{
			LabelPackageType: p.pkg.Type, LabelPackageName: p.pkg.Name, LabelPackageVersion: p.art.Version,
			LabelPackageDigest: p.art.Integrity, LabelPackageRuntime: p.runtime, LabelPackageBase: p.base.ID,
		},
		Entrypoint: entry,
		Env:        []string{"PATH=" + pathDir + ":" + path, "HOME=/tmp"},
		WorkingDir: "/tmp",
	}, nil
}
