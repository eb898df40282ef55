package frontdoor

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/redact"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// A server's catalog is known without starting it when it ran before: the
// provider keeps the tools of its last run in memory, and the front door
// keeps them in the store (when there is one) with their hash and the
// image they came from, so the next boot knows them too. A cached catalog
// is used only while the server still runs the same image.

// toolCatalog is one server's known tools.
type toolCatalog struct {
	Version string // catalog_version: a hash of Tools
	Image   string // what the catalog was read from (the image reference)
	Tools   []mcpconn.Tool
}

// storedCatalog is the JSON kept in store.CachedCatalog.Catalog: the
// tools, and the resources, templates and prompts when they were read.
type storedCatalog struct {
	Tools  []mcpconn.Tool `json:"tools"`
	Extras *extras        `json:"extras,omitempty"`
}

// imageOf is what a catalog is tied to: a container's image, or the
// endpoint or command of a server that has none.
func imageOf(s *config.Server) string {
	switch {
	case s == nil:
		return ""
	case s.Image != "":
		return s.Image
	case s.Package != nil:
		// What it runs is the package its version range is pinned to.
		return s.Package.String()
	case s.Endpoint != "":
		// Stored with the catalog: never with the endpoint's credentials.
		return redact.URL(s.Endpoint)
	}
	b, _ := json.Marshal(s.Command)
	return string(b)
}

// catalogImage is what sv's catalog is tied to: its image, or for a
// group its members' images (any member's catalog is the group's).
func catalogImage(sv Servable) string {
	if !sv.Group {
		return imageOf(sv.Spec)
	}
	imgs := make([]string, 0, len(sv.Members))
	for _, m := range sv.Members {
		imgs = append(imgs, imageOf(m))
	}
	return "group:" + strings.Join(imgs, "\n")
}

// storeTimeout bounds each store call: the front door must not hang on it.
const storeTimeout = 5 * time.Second

// loadCatalog returns the stored catalog of server when it was read from
// the same image.
func loadCatalog(ctx context.Context, st store.Catalogs, server, image string) (toolCatalog, *extras, bool, error) {
	if st == nil {
		return toolCatalog{}, nil, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	c, err := st.Catalog(ctx, server)
	if errors.Is(err, store.ErrNotFound) {
		return toolCatalog{}, nil, false, nil
	}
	if err != nil {
		return toolCatalog{}, nil, false, err
	}
	if c.ImageDigest != image {
		return toolCatalog{}, nil, false, nil
	}
	var sc storedCatalog
	if err := json.Unmarshal(c.Catalog, &sc); err != nil {
		return toolCatalog{}, nil, false, err
	}
	if sc.Extras != nil {
		sc.Extras.Image = image
	}
	return toolCatalog{Version: c.Version, Image: c.ImageDigest, Tools: sc.Tools}, sc.Extras, len(sc.Tools) > 0, nil
}

// saveCatalog keeps c (and x, when known) as server's catalog.
func saveCatalog(ctx context.Context, st store.Catalogs, server string, c toolCatalog, x *extras) error {
	if st == nil {
		return nil
	}
	b, err := json.Marshal(storedCatalog{Tools: c.Tools, Extras: x})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	return st.PutCatalog(ctx, store.CachedCatalog{Server: server, Version: c.Version, ImageDigest: c.Image, Catalog: b, UpdatedAt: time.Now()})
}

// CatalogSaver writes stored catalogs where no front door runs (egress
// mode), the same row the front door would write: same version, same
// image. With a front door, the front door alone writes them.
func CatalogSaver(st store.Catalogs, providers *provider.Manager) func(ctx context.Context, server string, tools []mcpconn.Tool) error {
	return func(ctx context.Context, server string, tools []mcpconn.Tool) error {
		var spec *config.Server
		if p, ok := providers.Get(server); ok {
			spec = p.Spec()
		}
		return saveCatalog(ctx, st, server, toolCatalog{Version: mcpconn.CatalogVersion(tools), Image: imageOf(spec), Tools: tools}, nil)
	}
}

// Learned takes a catalog read elsewhere as spec's known one: a discovery
// health check that has just run the server's handshake and tools/list
// (and, when b is not nil, can list its resources and prompts) hands it
// over, so that once the server is approved the front door lists it
// without starting it again. It is kept as a run's catalog is: in memory
// and in the store, tied to the image (or endpoint) it came from.
func (f *FrontDoor) Learned(ctx context.Context, spec *config.Server, tools []mcpconn.Tool, b Lister) {
	if spec == nil || len(tools) == 0 {
		return
	}
	c := toolCatalog{Version: mcpconn.CatalogVersion(tools), Image: imageOf(spec), Tools: tools}
	var xp *extras
	if b != nil {
		xctx, cancel := context.WithTimeout(ctx, extrasTimeout)
		x, err := readExtras(xctx, b)
		cancel()
		switch {
		case err == nil:
			x.Image = c.Image
			xp = &x
		case !errors.Is(err, provider.ErrNoExtras):
			f.log.Warn("resources and prompts not read", telemetry.FieldServer, spec.ID, telemetry.FieldError, err)
		}
	}
	f.refreshMu.Lock()
	f.cache[spec.ID] = c
	f.refreshMu.Unlock()
	if xp != nil {
		f.extrasMu.Lock()
		f.extras[spec.ID] = *xp
		f.extrasMu.Unlock()
	}
	if err := saveCatalog(ctx, f.Catalogs, spec.ID, c, xp); err != nil {
		f.log.Warn("catalog not stored", telemetry.FieldServer, spec.ID, telemetry.FieldError, err)
	}
	f.Kick()
}
