package app

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/hostaccess"
	"github.com/mcp-hangar/hangar/internal/preflight"
)

// hostAccess is what a container not written in the config file may get
// of the host: the install.allowed_* keys of the current config, never the
// data dir, and the networks the config itself puts such containers on
// (a runtime's network, the network HTTP providers are reached on).
func (a *App) hostAccess() hostaccess.Policy {
	cfg := a.Config
	if a.Gateway != nil {
		cfg = a.Gateway.Config()
	}
	p := cfg.Install.Access(a.DataDir)
	p.OperatorNetworks = []string{a.httpNetwork()}
	for _, rt := range cfg.Runtimes {
		if rt.Network != "" && !slices.Contains(p.OperatorNetworks, rt.Network) {
			p.OperatorNetworks = append(p.OperatorNetworks, rt.Network)
		}
	}
	return p
}

// installRootProblems are what `hangar config check` says about the
// install.allowed_* roots when the host is visible: a root the gateway
// cannot see admits nothing, and one that resolves into a refused place
// would be refused at every mount.
func installRootProblems(in config.Install, host preflight.Host) []preflight.Problem {
	if host == nil {
		return nil
	}
	var out []preflight.Problem
	for _, k := range []struct {
		key   string
		roots []string
	}{{"install.allowed_bind_roots", in.AllowedBindRoots}, {"install.allowed_env_file_roots", in.AllowedEnvFileRoots}} {
		for i, r := range k.roots {
			path := fmt.Sprintf("%s[%d]", k.key, i)
			real, err := host.EvalSymlinks(r)
			switch {
			case err != nil:
				out = append(out, preflight.Problem{Path: path, Msg: fmt.Sprintf("%s cannot be resolved on the host, so nothing under it is allowed", r),
					Fix: "create it, or mount it into the gateway's container at the same path"})
			case hostaccess.ValidateRoot(real) != "":
				out = append(out, preflight.Problem{Path: path, Msg: fmt.Sprintf("%s leads to %s, which %s", r, real, strings.TrimPrefix(hostaccess.ValidateRoot(real), "cannot be allowed: ")),
					Fix: "allow a directory that holds only what servers may mount"})
			}
		}
	}
	return out
}
