// Package backend starts provider backends: it joins a way of running a
// provider (a container, a remote endpoint) with an MCP connection to it,
// and gives the provider package the Backend it supervises.
package backend

import (
	"context"
	"fmt"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// Launcher starts a backend for any supported mode.
type Launcher struct {
	Docker *dockerrt.Runtime // nil when no engine is configured
}

var _ provider.Launcher = (*Launcher)(nil)

// Launch implements provider.Launcher.
func (l *Launcher) Launch(ctx context.Context, s *config.Server) (provider.Backend, error) {
	switch s.Mode {
	case config.ModeDocker:
		if l.Docker == nil {
			return nil, fmt.Errorf("mode docker needs a Docker engine, and none is connected")
		}
		if s.Transport != "" && s.Transport != config.TransportStdio {
			return nil, fmt.Errorf("transport %q for mode docker is not supported yet", s.Transport)
		}
		return launchDockerStdio(ctx, l.Docker, s)
	default:
		return nil, fmt.Errorf("mode %q is not supported", s.Mode)
	}
}
