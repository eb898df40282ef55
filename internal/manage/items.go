package manage

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/clientconfig"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/redact"
	"github.com/mcp-hangar/hangar/internal/store"
)

// ---------------------------------------------------------------------------
// Items

// Item is a server as mcp/list shows it.
type Item struct {
	ID                     string         `json:"id"`
	Name                   string         `json:"name"`
	DisplayName            string         `json:"display_name,omitempty"`
	Scope                  string         `json:"scope"`
	SourceKind             string         `json:"source_kind"`
	Policy                 Policy         `json:"policy"`
	Runtime                RuntimeView    `json:"runtime"`
	Status                 string         `json:"status"`
	StatusReason           string         `json:"status_reason,omitempty"`
	ToolsCount             int            `json:"tools_count"`
	ResourcesCount         int            `json:"resources_count"`
	ResourceTemplatesCount int            `json:"resource_templates_count"`
	PromptsCount           int            `json:"prompts_count"`
	Transport              map[string]any `json:"transport"`
}

// Policy of a server.
type Policy struct {
	Enabled                 bool `json:"enabled"`
	AllowImplicitInvocation bool `json:"allow_implicit_invocation"`
}

// RuntimeView is an item's runtime.
type RuntimeView struct {
	State      string `json:"state"`
	Live       bool   `json:"live"`
	LastSeenAt string `json:"last_seen_at,omitempty"`
	LastError  string `json:"last_error,omitempty"`
}

// runtimeState maps seed 002's states (and a group's) to seed 003's.
func runtimeState(rt Runtime, startedBefore, restarting bool) string {
	if rt.Group {
		switch rt.State {
		case "healthy":
			return StateReady
		case "degraded":
			return StateDegraded
		case "unavailable":
			return StateFailed
		}
		return StateNotStarted
	}
	switch provider.State(rt.State) {
	case provider.Cold:
		if restarting {
			return StateRestarting
		}
		if startedBefore {
			return StateStopped
		}
		return StateNotStarted
	case provider.Initializing:
		if restarting {
			return StateRestarting
		}
		return StateStarting
	case provider.Ready:
		return StateReady
	case provider.Degraded:
		return StateDegraded
	case provider.Dead:
		if authFailure(rt.LastError) {
			return StateAuthRequired
		}
		return StateFailed
	}
	return StateNotStarted
}

// authFailure recognises a remote server refusing our credentials.
func authFailure(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "401") || strings.Contains(m, "unauthorized") || strings.Contains(m, "403 forbidden")
}

func statusOf(state string) string {
	switch state {
	case StateDisabled:
		return "disabled"
	case StateFailed, StateAuthRequired:
		return "error"
	case StateDegraded:
		return "degraded"
	}
	return "ok"
}

// item builds the list item of id; srv is its catalog entry (ok false when
// it is installed but not served). Call without s.mu.
func (s *Service) item(ctx context.Context, id string, srv Server, served bool) Item {
	s.mu.Lock()
	in, isInstalled := s.installs[id]
	startedBefore, restarting := s.started[id], s.restarting[id]
	var rec store.Install
	var sealed clientconfig.Entry
	installErr := ""
	if isInstalled {
		rec, sealed, installErr = in.rec, in.sealed, in.err
	}
	s.mu.Unlock()

	it := Item{ID: id, Name: id, Scope: "workspace", Policy: Policy{Enabled: true, AllowImplicitInvocation: true}}
	if served {
		it.SourceKind = srv.Source
		it.ToolsCount = len(srv.Tools)
		it.Transport = s.transportOf(ctx, srv.Spec)
		it.Runtime = RuntimeView{State: runtimeState(srv.Runtime, startedBefore, restarting), Live: srv.Runtime.Alive,
			LastError: srv.Runtime.LastError}
		if !srv.Runtime.LastSeenAt.IsZero() {
			it.Runtime.LastSeenAt = srv.Runtime.LastSeenAt.UTC().Format(time.RFC3339Nano)
		}
		if srv.Spec != nil {
			it.DisplayName = srv.Spec.Description
		}
	}
	if isInstalled {
		it.SourceKind = SourceInstalled
		it.Policy = Policy{Enabled: rec.Enabled, AllowImplicitInvocation: rec.AllowImplicit}
		// The transport of an installed server is built from its sealed
		// entry: placeholders, never values.
		// Env files are not read for a listing: their names are enough.
		o := s.Options.Install
		o.Listing = true
		if spec, _ := clientconfig.Map(id, sealed, "", o); spec != nil {
			it.Transport = s.transportOf(ctx, spec)
		}
		switch {
		case !rec.Enabled:
			it.Runtime = RuntimeView{State: StateDisabled}
		case installErr != "":
			it.Runtime = RuntimeView{State: StateFailed, LastError: installErr}
		case !served:
			it.Runtime = RuntimeView{State: StateNotStarted}
		}
		if it.ToolsCount == 0 {
			if c, err := s.Store.Catalog(ctx, id); err == nil {
				var cc cachedCatalog
				if json.Unmarshal(c.Catalog, &cc) == nil {
					it.ToolsCount = len(cc.Tools)
				}
			}
		}
	}
	if s.Extras != nil {
		r, t, p := s.Extras(id)
		it.ResourcesCount, it.ResourceTemplatesCount, it.PromptsCount = len(r), len(t), len(p)
	}
	if it.Transport == nil {
		it.Transport = map[string]any{"kind": "unknown"}
	}
	it.Runtime.LastError = Scrub(it.Runtime.LastError, s.secretsOf(ctx, id))
	it.Status = statusOf(it.Runtime.State)
	switch it.Status {
	case "disabled":
		it.StatusReason = "disabled by policy (enabled=false)"
	case "error", "degraded":
		it.StatusReason = it.Runtime.LastError
	}
	return it
}

// transportOf describes how the gateway reaches a server: kind and
// redacted coordinates, header and environment key names only; for an npm
// or PyPI server, the package and what it is pinned to.
func (s *Service) transportOf(ctx context.Context, sp *config.Server) map[string]any {
	if sp == nil {
		return map[string]any{"kind": "unknown"}
	}
	t := map[string]any{}
	switch sp.Mode {
	case config.ModeRemote:
		t["kind"] = "streamable_http"
		if sp.Transport == config.TransportSSE {
			t["kind"] = "sse"
		}
		t["url"] = redact.URL(sp.Endpoint)
		if len(sp.Headers) > 0 {
			t["header_names"] = slices.Sorted(maps.Keys(sp.Headers))
		}
	case config.ModeDocker:
		t["kind"] = "stdio"
		if sp.Transport == config.TransportHTTP {
			t["kind"] = "streamable_http"
		} else if sp.Transport == config.TransportSSE {
			t["kind"] = "sse"
		}
		t["runtime"] = "container"
		if sp.Package == nil {
			t["image"] = sp.Image
			break
		}
		pkg := map[string]any{"type": sp.Package.Type, "name": sp.Package.Name, "version": sp.Package.Version, "runner": sp.Package.Runner}
		if s.Options.Packages != nil {
			if pin, ok := s.Options.Packages.Pin(ctx, sp); ok {
				pkg["pinned_version"], pkg["digest"] = pin.Version, pin.Integrity
				t["image"] = pin.Image
			}
		}
		t["package"] = pkg
	case config.ModeSubprocess:
		t["kind"] = "stdio"
		t["runtime"] = "subprocess"
		if len(sp.Command) > 0 {
			t["command"] = sp.Command[0]
		}
	case config.ModeGroup:
		t["kind"] = "group"
	default:
		t["kind"] = "unknown"
	}
	if len(sp.Env) > 0 {
		t["env_names"] = slices.Sorted(maps.Keys(sp.Env))
	}
	return t
}

// ---------------------------------------------------------------------------
// mcp/list

// ListResult is mcp/list's answer.
type ListResult struct {
	SnapshotVersion uint64 `json:"snapshot_version"`
	GeneratedAt     string `json:"generated_at"`
	Servers         []Item `json:"servers"`
}

// List serves mcp/list: every server the caller may read, whatever its
// source, and installed servers that are not served (disabled, failed).
func (s *Service) List(ctx context.Context, sc Scope) (*ListResult, error) {
	id, err := need(ctx, auth.ScopeRead)
	if err != nil {
		return nil, err
	}
	if err := s.checkScope(sc); err != nil {
		return nil, err
	}
	v, err := s.Store.SnapshotVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("snapshot version: %w", err)
	}
	res := &ListResult{SnapshotVersion: v, GeneratedAt: time.Now().UTC().Format(time.RFC3339Nano), Servers: []Item{}}
	seen := map[string]bool{}
	for _, srv := range s.Catalog.Servers() {
		seen[srv.ID] = true
		if id.MayReach(srv.ID) {
			res.Servers = append(res.Servers, s.item(ctx, srv.ID, srv, true))
		}
	}
	s.mu.Lock()
	var rest []string
	for name := range s.installs {
		if !seen[name] && id.MayReach(name) {
			rest = append(rest, name)
		}
	}
	s.mu.Unlock()
	for _, name := range rest {
		res.Servers = append(res.Servers, s.item(ctx, name, Server{}, false))
	}
	slices.SortFunc(res.Servers, func(a, b Item) int { return strings.Compare(a.ID, b.ID) })
	return res, nil
}

// lookup returns the item of name, or errNotFound.
func (s *Service) lookup(ctx context.Context, name string) (Item, error) {
	if srv, ok := s.Catalog.Server(name); ok {
		return s.item(ctx, name, srv, true), nil
	}
	s.mu.Lock()
	_, ok := s.installs[name]
	s.mu.Unlock()
	if ok {
		return s.item(ctx, name, Server{}, false), nil
	}
	return Item{}, fmt.Errorf("%w: no MCP server named %q", errNotFound, name)
}
