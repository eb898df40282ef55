package backend

import (
	"context"
	"fmt"
	"maps"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

// launchDockerEgress starts a stdio provider on its server's egress
// network, whose only way out is the server's proxy: the container gets
// the proxy in its environment and no other route.
func launchDockerEgress(ctx context.Context, rt *dockerrt.Runtime, eg *dockerrt.Egress, s *config.Server) (*containerBackend, error) {
	if s.Transport == config.TransportHTTP || s.Transport == config.TransportSSE {
		// The config refuses it too; a server from elsewhere must not
		// get a container the gateway cannot reach.
		return nil, fmt.Errorf("egress: transport %s cannot be used with egress (the gateway cannot reach an internal network); use stdio", s.Transport)
	}
	if eg == nil {
		return nil, fmt.Errorf("egress: no egress proxy is configured for this gateway")
	}
	lease, err := eg.Acquire(ctx, s.ID, s.Egress.Allow)
	if err != nil {
		return nil, err
	}
	spec := SpecFor(s, "")
	// The proxy's settings win over the server's own: the server's env
	// cannot point its clients elsewhere (and elsewhere has no route).
	env := maps.Clone(spec.Env)
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, lease.Env)
	spec.Env = env
	spec.Network, spec.EgressNetwork = lease.Network, true
	c, err := rt.Run(ctx, spec)
	if err != nil {
		lease.Release()
		return nil, err
	}
	// The network is given back once the container is gone, however it
	// goes (stop, crash, idle GC, shutdown).
	go func() {
		<-c.Done()
		lease.Release()
	}()
	return connectContainer(ctx, c, mcpconn.Stdio(c.Stdout, c.Stdin), s.Protocol, s)
}
