// Package backend starts provider backends: it joins a way of running a
// provider (a container, a process, a remote endpoint) with an MCP
// connection to it, and gives the provider package the Backend it
// supervises.
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
	// HTTPNetwork is where containers serving MCP over HTTP are attached:
	// the gateway's own network when it runs in a container, else the
	// default bridge (reachable from the host).
	HTTPNetwork string
	// Images checks and fetches images before a start (Prepare); nil
	// leaves images to the engine as they are.
	Images *ImageGate
	// Egress puts servers with an egress allow-list behind their proxy;
	// nil refuses to start them.
	Egress *dockerrt.Egress
}

var _ provider.Launcher = (*Launcher)(nil)

// Launch implements provider.Launcher.
func (l *Launcher) Launch(ctx context.Context, s *config.Server) (provider.Backend, error) {
	switch s.Mode {
	case config.ModeDocker:
		if l.Docker == nil {
			return nil, fmt.Errorf("mode docker needs a Docker engine, and none is connected")
		}
		switch {
		case s.AttachContainer != "":
			return nilIfErr(attachDockerStdio(ctx, l.Docker, s))
		case s.Egress != nil:
			return nilIfErr(launchDockerEgress(ctx, l.Docker, l.Egress, s))
		case s.Transport == config.TransportHTTP || s.Transport == config.TransportSSE:
			network := l.HTTPNetwork
			if network == "" {
				network = "bridge"
			}
			return nilIfErr(launchDockerHTTP(ctx, l.Docker, network, s))
		default:
			return nilIfErr(launchDockerStdio(ctx, l.Docker, s))
		}
	case config.ModeRemote:
		return nilIfErr(launchRemote(ctx, s))
	case config.ModeSubprocess:
		return nilIfErr(launchSubprocess(ctx, s))
	default:
		return nil, fmt.Errorf("mode %q cannot be launched", s.Mode)
	}
}

// nilIfErr converts a concrete backend to the interface, as nil when err is
// set (a nil *T in an interface is not nil).
func nilIfErr[T provider.Backend](b T, err error) (provider.Backend, error) {
	if err != nil {
		return nil, err
	}
	return b, nil
}
