// Package backend starts provider backends: it joins a way of running a
// provider (a container, a process, a remote endpoint) with an MCP
// connection to it, and gives the provider package the Backend it
// supervises.
package backend

import (
	"context"
	"fmt"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/packages"
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
	// Credentials are callers' upstream credentials (upstream_auth); nil
	// refuses to start servers that have it.
	Credentials Credentials
	// Packages builds the images of npm and PyPI servers (Prepare) and
	// names the one to run (Launch); nil refuses to start them.
	Packages *packages.Builder
}

var _ provider.Launcher = (*Launcher)(nil)

// Launch implements provider.Launcher.
func (l *Launcher) Launch(ctx context.Context, s *config.Server) (provider.Backend, error) {
	if s.UpstreamAuth != nil {
		if l.Credentials == nil {
			return nil, fmt.Errorf("upstream_auth needs the gateway's credential vault, and none is set up")
		}
		switch s.Mode {
		case config.ModeRemote:
			return launchRemoteWithAuth(s, l.Credentials), nil
		case config.ModeDocker:
			return launchDockerWithAuth(s, l.Credentials, l.launchDocker), nil
		}
		return nil, fmt.Errorf("mode %q cannot have upstream_auth", s.Mode)
	}
	switch s.Mode {
	case config.ModeDocker:
		return l.launchDocker(ctx, s)
	case config.ModeRemote:
		return nilIfErr(launchRemote(ctx, s, connectClient()))
	case config.ModeSubprocess:
		return nilIfErr(launchSubprocess(ctx, s))
	default:
		return nil, fmt.Errorf("mode %q cannot be launched", s.Mode)
	}
}

// launchDocker starts a container backend in the way s asks.
func (l *Launcher) launchDocker(ctx context.Context, s *config.Server) (provider.Backend, error) {
	if l.Docker == nil {
		return nil, fmt.Errorf("mode docker needs a Docker engine, and none is connected")
	}
	if s.Package != nil {
		if l.Packages == nil {
			return nil, fmt.Errorf("%s needs the package runtimes, which this gateway has not set up", packages.Describe(*s.Package))
		}
		// Prepare found or built it; Ensure again only if it did not
		// run.
		img, ok := l.Packages.Ready(s)
		if !ok {
			var err error
			if img, err = l.Packages.Ensure(ctx, s, call.Progress{}); err != nil {
				return nil, err
			}
		}
		s = packages.RunSpec(s, img)
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
}

// nilIfErr converts a concrete backend to the interface, as nil when err is
// set (a nil *T in an interface is not nil).
func nilIfErr[T provider.Backend](b T, err error) (provider.Backend, error) {
	if err != nil {
		return nil, err
	}
	return b, nil
}
