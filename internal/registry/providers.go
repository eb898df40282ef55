package registry

import (
	"context"
	"fmt"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// Providers is the Registrar (and Inspector) over the gateway's provider
// manager.
type Providers struct {
	M *provider.Manager
	// Taken reports IDs in use outside M (group IDs); nil: none.
	Taken func(id string) bool
}

var (
	_ Registrar = Providers{}
	_ Inspector = Providers{}
)

// Register adds a COLD provider unless the ID is in use.
func (p Providers) Register(s *config.Server) error {
	if p.Taken != nil && p.Taken(s.ID) {
		return fmt.Errorf("%w: %s", ErrIDTaken, s.ID)
	}
	if _, ok := p.M.AddIfAbsent(s); !ok {
		return fmt.Errorf("%w: %s", ErrIDTaken, s.ID)
	}
	return nil
}

// Deregister removes the provider and stops it for good.
func (p Providers) Deregister(ctx context.Context, id string) error {
	pr, ok := p.M.Remove(id)
	if !ok {
		return nil
	}
	return pr.Retire(ctx, ReasonUnloaded, false)
}

// Start starts the provider and returns its allowed tools' names.
func (p Providers) Start(ctx context.Context, id string) ([]string, error) {
	pr, ok := p.M.Get(id)
	if !ok {
		return nil, &provider.Error{Kind: provider.KindUnknownServer, ID: id}
	}
	tools, err := pr.Start(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return names, nil
}

// Inspect returns the provider's state and origin.
func (p Providers) Inspect(id string) (string, string, bool) {
	pr, ok := p.M.Get(id)
	if !ok {
		return "", "", false
	}
	return string(pr.State()), pr.Spec().Origin, true
}
