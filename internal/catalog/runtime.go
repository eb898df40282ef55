package catalog

import (
	"context"
	"fmt"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/group"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// Apply is the Runtime of a gateway: its provider manager and group
// registry.
type Apply struct {
	Providers *provider.Manager
	Groups    *group.Registry
}

var _ Runtime = Apply{}

// AddServer registers a COLD provider; an ID still held in the manager
// (by something the catalog did not register) is an error.
func (a Apply) AddServer(spec *config.Server) error {
	if _, ok := a.Providers.AddIfAbsent(spec); !ok {
		return fmt.Errorf("mcp server id %s is already registered with the provider manager", spec.ID)
	}
	return nil
}

// AddGroup registers a group and its members.
func (a Apply) AddGroup(spec *config.Server) error {
	_, err := a.Groups.Add(spec)
	return err
}

// Remove unregisters a group (with its members) or a server.
func (a Apply) Remove(id string) (func(context.Context, string, bool) error, bool) {
	if g, ok := a.Groups.Remove(id); ok {
		return g.Retire, true
	}
	if p, ok := a.Providers.Remove(id); ok {
		return p.Retire, true
	}
	return nil, false
}
