package config

import (
	"path/filepath"
	"strings"

	"github.com/mcp-hangar/hangar/internal/hostaccess"
)

// OriginInstalled is Server.Origin of a server installed through the
// management protocol (mcp/install).
const OriginInstalled = "installed"

// Runtime is a container image that runs a package runner (npx, uvx, …)
// for servers installed from client configs: `runtimes: {npx: {image: …}}`.
type Runtime struct {
	Image string
	// Network the runner's container joins; default "bridge", because
	// package runners fetch their package at start.
	Network string
	Env     map[string]string
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
	if root.str("workspace", &cfg.Workspace) && strings.TrimSpace(cfg.Workspace) == "" {
		d.add("workspace", "must not be empty")
	}
	rt := root.sub("runtimes")
	for _, name := range sortedKeys(rt.m) {
		v, _ := rt.take(name)
		s := d.section(rt.at(name), v)
		var r Runtime
		if !s.str("image", &r.Image) || r.Image == "" {
			d.add(s.at("image"), "required")
		}
		r.Network = "bridge"
		if s.str("network", &r.Network) && strings.EqualFold(r.Network, "host") {
			d.add(s.at("network"), "host networking is not allowed: it bypasses container isolation")
		}
		s.strMap("env", &r.Env)
		s.finish()
		if cfg.Runtimes == nil {
			cfg.Runtimes = map[string]Runtime{}
		}
		cfg.Runtimes[name] = r
	}
	inst := root.sub("install")
	inst.boolean("allow_subprocess", &cfg.Install.AllowSubprocess)
	if inst.strList("allowed_egress", &cfg.Install.AllowedEgress) {
		cfg.Install.AllowedEgress = d.egressRules(inst.at("allowed_egress"), cfg.Install.AllowedEgress)
	}
	for _, k := range []struct {
		key string
		dst *[]string
	}{{"allowed_bind_roots", &cfg.Install.AllowedBindRoots}, {"allowed_env_file_roots", &cfg.Install.AllowedEnvFileRoots}} {
		if inst.strList(k.key, k.dst) {
			for i, r := range *k.dst {
				if why := hostaccess.ValidateRoot(r); why != "" {
					d.add(index(inst.at(k.key), i), "%s (got %q)", why, r)
				}
				(*k.dst)[i] = filepath.Clean(r)
			}
		}
	}
	if inst.strList("allowed_networks", &cfg.Install.AllowedNetworks) {
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
