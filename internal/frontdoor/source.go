package frontdoor

import (
	"context"
	"sort"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// Source is everything the front door needs from the rest of the
// gateway: which servers may be served, a way to call them, and a way to
// learn a catalog. Today it is the provider manager and the group registry
// (ManagerSource); the catalog can take its place.
type Source interface {
	// Servable lists the servers agents may see, sorted by ID: top-level
	// providers and groups; never a group member, nor a pending server
	// (a quarantined one is marked). It does no I/O and starts nothing.
	Servable() []Servable
	// Call invokes tool on server (a provider or a group ID) the way
	// hangar_call does: single-flight cold start, limits, breaker and
	// failover, metrics, for rq (its caller, relay, progress, _meta and
	// raw result sink). args go to the provider as they are (raw JSON).
	Call(ctx context.Context, rq *call.Request, server, tool string, args any) (*mcp.CallToolResult, error)
	// Prefetch learns the catalog of a COLD provider (for a group, of its
	// first member): it starts it, reads its tools, runs whileUp (which
	// reads the rest) and stops it again. A provider that is not COLD is
	// left alone.
	Prefetch(ctx context.Context, server string, whileUp func(context.Context)) error
	// Extras runs f on server's backend (for a group, a member's): with
	// start it is started if need be, like a call; without, f runs only on
	// a backend already running, else provider.ErrNotRunning.
	Extras(ctx context.Context, server string, start bool, f func(context.Context, provider.Extras) error) error
	// Learn reads the catalog of server (a provider or a group) for a
	// call that names it: like a call, it starts what is needed and
	// keeps it running (its idle TTL applies).
	Learn(ctx context.Context, server string) error
}

// Servable is one server as the front door sees it.
type Servable struct {
	ID    string
	Group bool
	Spec  *config.Server // prefix, image
	// Hidden: its tools are not listed (expose: false, or an installed
	// server without allow_implicit_invocation); it stays callable.
	Hidden bool
	// Tools is the catalog the server has now (after its tool access
	// policy), from its last run or from config; empty when not known.
	Tools []mcpconn.Tool
	// Predefined says Tools come from the config, not from the server.
	Predefined bool
	// Cold says the server has no backend running (prefetch candidates).
	Cold bool
	// Quarantined: its tools are withheld (a quarantine, until an
	// approval): none is listed or found by search, not even those of
	// the catalog kept from before; a call by name gets the quarantine's
	// answer. Its resources and prompts are read still, and withheld per
	// request (FrontDoor.Withheld).
	Quarantined bool
	// Members are a group's members, in order; CatalogFrom is the one
	// whose catalog Tools is, and Disagree the others whose known
	// catalog differs from it.
	Members     []*config.Server
	CatalogFrom string
	Disagree    []string
}

// ReasonPrefetched is the stop reason of a provider started only to read
// its catalog.
const ReasonPrefetched = "catalog_prefetched"

func SortServable(s []Servable) {
	sort.Slice(s, func(i, j int) bool { return s[i].ID < s[j].ID })
}
