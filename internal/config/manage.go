package config

import (
	"path/filepath"
	"strings"

	"github.com/mcp-hangar/hangar/internal/hostaccess"
)

// OriginInstalled is Server.Origin of a server installed through the
// management protocol (mcp/install).
const OriginInstalled = "installed"

// Runtime is the container image a package runner (npx, uvx, …) runs
// in: `runtimes: {npx: {image: …, env: {…}}}`. For the package runners
// (PackageRunnerType) it is the image the gateway builds each package's
// image from, with a default (DefaultRuntimeImages); any other runner
// (bunx, deno, …) runs its command in it as written, at every start.
type Runtime struct {
	Image string
	// Network is where a package's install step fetches it from (the
	// registry must be reachable there), and where a runner that is not
	// a package runner runs; default "bridge". A package server itself
	// runs with its own network rules: none, or its egress.
	Network string
	// Env goes to the install step and to the server: a private
	// mirror's npm_config_registry, UV_INDEX_URL or PIP_INDEX_URL,
	// PIP_TRUSTED_HOST or UV_INSECURE_HOST.
	Env map[string]string
}

// Default runtime images of the package runners: the images a package
// server's image is built from when runtimes.<runner>.image is not set.
const (
	DefaultNodeImage   = "node:22-alpine"
	DefaultPythonImage = "ghcr.io/astral-sh/uv:python3.12-bookworm-slim"
)

// DefaultRuntimeImages are the runtime images of the runners that need no
// runtimes: entry.
var DefaultRuntimeImages = map[string]string{
	"npx": DefaultNodeImage, "node": DefaultNodeImage,
	"uvx": DefaultPythonImage, "uv": DefaultPythonImage, "pipx": DefaultPythonImage,
	"python": DefaultPythonImage, "python3": DefaultPythonImage,
}

// RuntimeFor is the runtime runner runs in: its runtimes: entry, with the
// default image when that sets none, else the default runtime; ok is
// false when runner has neither an entry with an image nor a default.
func RuntimeFor(runtimes map[string]Runtime, runner string) (Runtime, bool) {
	rt := runtimes[runner]
	if rt.Image == "" {
		rt.Image = DefaultRuntimeImages[runner]
	}
	if rt.Network == "" {
		rt.Network = "bridge"
	}
	return rt, rt.Image != ""
}

// Install configures the management protocol's mcp/install.
type Install struct {
	// AllowSubprocess lets installed entries whose command has no runtime
	// image run as child processes of the gateway (default false: the
	// gateway is container-native).
	AllowSubprocess bool
	// AllowedEgress is what installed and hot-loaded servers may ask to
	// reach (egress rules; default none): a server asking for a host
	// outside it is refused.
	AllowedEgress []string
	// AllowedBindRoots are the host directories under which an installed,
	// discovered or hot-loaded server may bind-mount (default none); see
	// package hostaccess for what stays refused under them.
	AllowedBindRoots []string
	// AllowedNetworks are the networks such a server may name (default
	// none: it gets no network unless the operator's config gives one).
	AllowedNetworks []string
	// AllowedEnvFileRoots are the directories --env-file/envFile may be
	// read from (default none: env files are refused).
	AllowedEnvFileRoots []string
}

// Access is the policy these keys make for servers not written in the
// config file; dataDir is never mountable.
func (i Install) Access(dataDir string) hostaccess.Policy {
	return hostaccess.Policy{
		BindRoots:    i.AllowedBindRoots,
		Networks:     i.AllowedNetworks,
		EnvFileRoots: i.AllowedEnvFileRoots,
		DataDir:      dataDir,
	}
}

// manage decodes workspace, runtimes and install.
func (d *decoder) manage(root *section, cfg *Config) {
	if root.str("workspace", &cfg.Workspace,
		"The one workspace the management protocol (mcp/*) serves; default the instance name.") && strings.TrimSpace(cfg.Workspace) == "" {
		d.add("workspace", "must not be empty")
	}
	rt := root.entries("runtimes",
		"The images package runners run in, by runner (npx, uvx, …): a package server's image is built on its runner's; any other runner (bunx, deno, …) runs its command in it (docs/runtimes.md).",
		"runner to runtime", "<runner>", nil)
	for _, name := range sortedKeys(rt.m) {
		v, _ := rt.take(name)
		s := rt.entry(name, v, nil)
		var r Runtime
		if s.str("image", &r.Image,
			"The runtime image; default "+DefaultNodeImage+" for npx and node, "+DefaultPythonImage+" for uvx, uv, pipx, python and python3, none for other runners, which must set it.") && r.Image == "" {
			d.add(s.at("image"), "must not be empty")
		} else if r.Image == "" && DefaultRuntimeImages[name] == "" {
			d.add(s.at("image"), "required: %s has no default runtime image", name)
		}
		r.Network = "bridge"
		if s.str("network", &r.Network,
			"Where a package's install step fetches it from (the registry must be reachable there), and where other runners run; host is refused.") && strings.EqualFold(r.Network, "host") {
			d.add(s.at("network"), "host networking is not allowed: it bypasses container isolation")
		}
		s.strMap("env", &r.Env,
			"Environment of the install step and the server: a private mirror's npm_config_registry, UV_INDEX_URL or PIP_INDEX_URL, PIP_TRUSTED_HOST or UV_INSECURE_HOST.")
		s.finish()
		if cfg.Runtimes == nil {
			cfg.Runtimes = map[string]Runtime{}
		}
		cfg.Runtimes[name] = r
	}
	inst := root.sub("install", "What servers not written in this file may get: those installed (mcp/install, hangar servers install, hangar import), found in files by discovery, or hot-loaded.")
	inst.boolean("allow_subprocess", &cfg.Install.AllowSubprocess,
		"Let installed entries whose command has no runtime image run as child processes of the gateway.")
	if inst.strList("allowed_egress", &cfg.Install.AllowedEgress,
		"Egress rules such servers may ask for (host[:port], *.domain); a server asking for a host outside them is refused. Default none.") {
		cfg.Install.AllowedEgress = d.egressRules(inst.at("allowed_egress"), cfg.Install.AllowedEgress)
	}
	for _, k := range []struct {
		key, doc string
		dst      *[]string
	}{
		{"allowed_bind_roots", "Host directories under which such servers may bind-mount (default none).", &cfg.Install.AllowedBindRoots},
		{"allowed_env_file_roots", "Directories --env-file and envFile may be read from (default none: env files are refused).", &cfg.Install.AllowedEnvFileRoots},
	} {
		if inst.strList(k.key, k.dst, k.doc) {
			for i, r := range *k.dst {
				if why := hostaccess.ValidateRoot(r); why != "" {
					d.add(index(inst.at(k.key), i), "%s (got %q)", why, r)
				}
				(*k.dst)[i] = filepath.Clean(r)
			}
		}
	}
	if inst.strList("allowed_networks", &cfg.Install.AllowedNetworks,
		"Networks such servers may name (default none: no network unless this file gives one).") {
		for i, n := range cfg.Install.AllowedNetworks {
			if why := hostaccess.ValidateNetwork(n); why != "" {
				d.add(index(inst.at("allowed_networks"), i), "%s (got %q)", why, n)
			}
		}
	}
	inst.finish()
}

// ParseSize reads a memory size as `docker run --memory` writes it (512m,
// 1g, a number of bytes).
func ParseSize(s string) (int64, error) { return parseSize(s) }

// ParseCPUs reads a CPU count as `docker run --cpus` writes it, as NanoCPUs.
func ParseCPUs(s string) (int64, bool) {
	_, n, ok := parseCPUs(s)
	return n, ok && n > 0
}
