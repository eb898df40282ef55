package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// ReasonHotLoaded is the catalog reason of a hangar_load.
const ReasonHotLoaded = "hot_loaded"

// Providers is the Registrar (and Inspector) of the gateway: hot-loaded
// servers are claims of the catalog's hotload source, which decides
// whether an ID is free; M holds the providers the catalog registers.
type Providers struct {
	M       *provider.Manager
	Catalog *catalog.Catalog
}

var (
	_ Registrar = Providers{}
	_ Inspector = Providers{}
)

// Register claims s.ID for hot-load. An ID served from another source, or
// already hot-loaded, is ErrIDTaken (the Loader tries the next suffix); a
// group's or a group member's ID is reserved: that error is final and
// says which group holds it.
func (p Providers) Register(s *config.Server) error {
	if err := p.Catalog.Check(catalog.SourceHotload, s.ID); err != nil {
		if errors.Is(err, catalog.ErrReserved) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrIDTaken, err)
	}
	if e, ok := p.Catalog.Get(s.ID); ok && e.Source == catalog.SourceHotload {
		return fmt.Errorf("%w: %s is hot-loaded already", ErrIDTaken, s.ID)
	}
	if p.Catalog.RefusalOf(catalog.SourceHotload, s.ID) != nil {
		return fmt.Errorf("%w: %s", ErrIDTaken, s.ID)
	}
	ctx := context.Background()
	if err := p.Catalog.Put(ctx, catalog.SourceHotload, s, ReasonHotLoaded); err != nil {
		// Taken between the check and the claim: no lingering claim.
		p.Catalog.Delete(ctx, catalog.SourceHotload, s.ID, ReasonUnloaded)
		if errors.Is(err, catalog.ErrReserved) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrIDTaken, err)
	}
	return nil
}

// Deregister withdraws the hot-load claim on id; the catalog stops the
// provider if it served it. Other sources' servers of that ID stay.
func (p Providers) Deregister(ctx context.Context, id string) error {
	p.Catalog.Delete(ctx, catalog.SourceHotload, id, ReasonUnloaded)
	return nil
}

// Start starts the provider and returns its allowed tools' names.
func (p Providers) Start(ctx context.Context, id string, progress call.Progress) ([]string, error) {
	pr, ok := p.M.Get(id)
	if !ok {
		return nil, &provider.Error{Kind: provider.KindUnknownServer, ID: id}
	}
	tools, err := pr.Start(ctx, progress)
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
