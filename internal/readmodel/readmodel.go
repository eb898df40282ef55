// Package readmodel is the one view of servers that every face shows:
// the hangar_* tools (hangar_details), the management protocol
// (mcp/server/details) and the web dashboard (/ui/). In the data flow it
// sits between those faces and the parts that own the facts: the catalog
// (which IDs exist, from which source), the provider manager and the
// group registry (what runs), the store (audit, cached catalogs,
// installs), the image gate (digests, pulls), the front door (callable
// names, bindings, resources and prompts), discovery (pending and
// quarantined candidates), metrics and the egress proxy. It reads them
// through the narrow interfaces below and owns none of those facts: a view
// is built once here, and each face only encodes it in its wire shape.
package readmodel

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/mcp-hangar/hangar/internal/backend"
	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/group"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/metrics"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/store"
)

// Providers is what the model reads of the provider manager.
type Providers interface {
	Get(id string) (*provider.Provider, bool)
	List() []*provider.Provider
}

// Groups is what the model reads of the group registry.
type Groups interface {
	Get(id string) (*group.Group, bool)
}

// Catalog is what the model reads of the catalog: the served IDs and
// the claims it refused.
type Catalog interface {
	Get(id string) (catalog.Entry, bool)
	List() []catalog.Entry
	Refused() []catalog.Refusal
}

// Audit is the audit trail, newest first.
type Audit interface {
	RecentAudit(ctx context.Context, server string, limit int) ([]store.AuditEntry, error)
}

// StoredCatalogs are the catalogs kept from earlier runs: a server that
// is not running shows its last known tools.
type StoredCatalogs interface {
	Catalog(ctx context.Context, server string) (store.CachedCatalog, error)
}

// Installs are the servers installed through mcp/install.
type Installs interface {
	Installs(ctx context.Context) ([]store.Install, error)
}

// Images is what the image gate knows of a server's image.
type Images interface {
	Status(server string) backend.ImageStatus
}

// FrontDoor is the front door's view of a server: its callable names and
// catalog version, as hangar_details shows them.
type FrontDoor interface {
	Details(server string) map[string]any
}

// Bindings are the callable names the front door bound lately.
type Bindings interface {
	RecentBindings(server string, limit int) []Binding
}

// Extras are the resources, resource templates and prompts the front
// door listed of a server (raw MCP JSON); nil when none is known.
type Extras func(server string) (resources, templates, prompts []json.RawMessage)

// Callables are the front door's names of a server's tools and prompts,
// by their names on the server (FrontDoor.Callables).
type Callables func(server string) (tools, prompts map[string]string)

// Discovery lists the candidates waiting for an operator.
type Discovery interface {
	Pending() []discovery.PendingEntry
	Quarantined() []discovery.QuarantineEntry
}

// Metrics reads the per-server call totals: the summary the server list
// shows, and the counts the traffic sampler reads.
type Metrics interface {
	Summarize() (*metrics.Summary, error)
	CallCounts() map[string]metrics.CallCounts
}

var (
	_ Metrics   = (*metrics.Metrics)(nil)
	_ Discovery = (*discovery.Service)(nil)
	_ Images    = (*backend.ImageGate)(nil)
	_ Catalog   = (*catalog.Catalog)(nil)
	_ Groups    = (*group.Registry)(nil)
	_ Providers = (*provider.Manager)(nil)
)

// Binding is one callable name the front door bound to a server's tool.
type Binding struct {
	CallableName   string    `json:"callable_name"`
	RawToolName    string    `json:"raw_tool_name"`
	CatalogVersion string    `json:"catalog_version,omitempty"`
	BoundAt        time.Time `json:"bound_at"`
}

// Model builds the views. Every source may be nil: the facts it owns are
// then absent from the views (a gateway without discovery has nothing
// pending). Set the sources before the first view is built.
type Model struct {
	Providers Providers
	Groups    Groups
	Catalog   Catalog
	Audit     Audit
	Stored    StoredCatalogs
	Installs  Installs
	Images    Images
	FrontDoor FrontDoor
	Bindings  Bindings
	Extras    Extras
	Callables Callables
	Discovery Discovery
	Metrics   Metrics
	// Egress is a server's egress control (allow-list, recent
	// refusals); nil for a server without it.
	Egress func(server string) any
	// OwnTools are the gateway's own tools (hangar_*).
	OwnTools func() []mcpconn.Tool
	// Replication and Containers are the replicas page's sources.
	Replication Replication
	Containers  Containers
	// TrafficStep is the traffic sampler's step (DefaultTrafficStep when
	// 0); set it before RunTraffic.
	TrafficStep time.Duration
	// Credentials are callers' upstream credentials; nil: no server has
	// upstream_auth.
	Credentials Credentials
	// Policy is the gateway's policy over calls in force (policy:); nil:
	// none is shown.
	Policy func() Rules
	Log    *slog.Logger

	rates   rateMeter
	traffic atomic.Pointer[traffic]
}

func (m *Model) log() *slog.Logger {
	if m.Log != nil {
		return m.Log
	}
	return slog.Default()
}
