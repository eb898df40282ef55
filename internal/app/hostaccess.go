package app

import (
	"slices"

	"github.com/mcp-hangar/hangar/internal/hostaccess"
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
