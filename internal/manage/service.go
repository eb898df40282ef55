// Package manage is the management protocol of seed 003: the mcp/*
// methods (install servers from the mcpServers JSON people keep in their
// MCP client configs, set their policy, restart, uninstall, read details)
// and the change notifications (mcp/changed, /events). In the data flow
// it is a face beside the hangar_* tools and the dashboard: it reads
// servers from the read model (mcp/server/details), maps an install's
// entries with internal/clientconfig, seals their secrets in the keystore,
// keeps installs in the store and publishes them to the catalog as the
// "installed" source.
package manage

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/clientconfig"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/packages"
	"github.com/mcp-hangar/hangar/internal/readmodel"
	"github.com/mcp-hangar/hangar/internal/store"
)

// Runtime states of seed 003.
const (
	StateNotStarted   = "not_started"
	StateDisabled     = "disabled"
	StateStarting     = "starting"
	StateReady        = "ready"
	StateDegraded     = "degraded"
	StateAuthRequired = "auth_required"
	StateFailed       = "failed"
	StateStopping     = "stopping"
	StateStopped      = "stopped"
	StateRestarting   = "restarting"
)

// Change actions of mcp/changed.
const (
	ActionInstalled   = "installed"
	ActionUpdated     = "updated"
	ActionPolicy      = "policy_changed"
	ActionUninstalled = "uninstalled"
	// ActionDiscovery: a discovered server moved between discovery's
	// pending and quarantine lists (offered, rejected, quarantined,
	// approved, gone). Beyond seed 003, whose readers re-list and find
	// mcp/list unchanged; the dashboard re-reads those lists.
	ActionDiscovery = "discovery_changed"
)

// Binding is one front-door name bound to a provider tool
// (recent_bindings), as the read model holds it.
type Binding = readmodel.Binding

// Bindings is the front door's record of names it bound; nil until the
// front door is merged (recent_bindings is then empty).
type Bindings interface {
	RecentBindings(server string, limit int) []Binding
}

// Options are the service's: the install policy entries are mapped under,
// and whom it tells of changes.
type Options struct {
	// Install is what the gateway's config says about running installed
	// entries (runtimes, subprocesses, egress, what they may get of the
	// host).
	Install clientconfig.Options
	// OnChanged, when set, is called after every install, update, policy
	// change or uninstall (the front door lists again).
	OnChanged func()
	// Packages builds the images of npm and PyPI servers at install (so
	// that a package that cannot be installed is the install's
	// diagnostic), updates them at mcp/server/restart with update, and
	// releases them at uninstall; nil: they are built at first start.
	Packages Packages
	// SaveCatalog, when set, keeps a server's catalog in the store after
	// a start brings a new one. nil: another owner (the gateway's front
	// door) keeps them, with the image they came from; this service only
	// reads them.
	SaveCatalog func(ctx context.Context, server string, tools []mcpconn.Tool) error
}

// Service is the management protocol.
type Service struct {
	Catalog  Catalog
	Store    Store
	Notifier *Notifier
	Bindings Bindings // may be nil
	// Extras returns a server's resources, resource templates and prompts
	// as the front door knows them (raw MCP JSON); nil: none known.
	Extras func(server string) (resources, templates, prompts []json.RawMessage)
	// Views is the read model mcp/server/details answers from, shared
	// with hangar_details and the dashboard; nil builds one over Catalog,
	// Store, Bindings and Extras.
	Views     *readmodel.Model
	Options   Options
	Workspace string
	Log       *slog.Logger

	// mu serializes mutations (install, policy, uninstall, restore) and
	// guards the maps below.
	mu         sync.Mutex
	installs   map[string]*installed
	started    map[string]bool // IDs that left COLD at least once
	restarting map[string]bool
	catalogVer map[string]string

	// emitMu orders notifications as their snapshot versions.
	emitMu sync.Mutex
	// disabled are the installed servers disabled by policy, rebuilt by
	// publish: Refuse runs before every call and must not wait for a
	// mutation holding mu.
	disabled atomic.Pointer[map[string]bool]
}

// installed is one installed server as the service holds it.
type installed struct {
	rec    store.Install
	sealed clientconfig.Entry
	// err says why an enabled install is not served (a secret missing
	// from the keystore, a runtime no longer configured); "" when served.
	err string
	// undecodable: the stored config could not be read back.
	undecodable bool
}

// Packages is what management needs of the package runtimes
// (*packages.Builder).
type Packages interface {
	Ensure(ctx context.Context, s *config.Server, progress call.Progress) (packages.Image, error)
	Update(ctx context.Context, s *config.Server, progress call.Progress) (from string, img packages.Image, err error)
	Release(ctx context.Context, s *config.Server)
	Pin(ctx context.Context, s *config.Server) (store.PackagePin, bool)
	Sweep(ctx context.Context) (int, error)
}

var _ Packages = (*packages.Builder)(nil)

// Errors the methods return; rpc.go turns them into JSON-RPC errors.
var (
	errInvalidParams = errors.New("invalid params")
	errNotFound      = errors.New("not found")
)

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errInvalidParams, fmt.Sprintf(format, a...))
}

// New returns a service; call Restore once, then Run.
func New(cat Catalog, st Store, n *Notifier, workspace string, o Options, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	if n == nil {
		n = NewNotifier(log)
	}
	return &Service{
		Catalog: cat, Store: st, Notifier: n, Workspace: workspace, Options: o, Log: log,
		installs: map[string]*installed{}, started: map[string]bool{}, restarting: map[string]bool{},
		catalogVer: map[string]string{},
	}
}

// Restore loads the installed servers from the store and serves the
// enabled ones (at start-up).
func (s *Service) Restore(ctx context.Context) error {
	list, err := s.Store.Installs(ctx)
	if err != nil {
		return fmt.Errorf("load installs: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rec := range list {
		var e clientconfig.Entry
		if err := json.Unmarshal(rec.Config, &e); err != nil {
			s.Log.Error("installed server not restored: its stored config does not decode", "mcp_server", rec.Name, "error", err)
			s.installs[rec.Name] = &installed{rec: rec, err: "stored config does not decode", undecodable: true}
			continue
		}
		s.installs[rec.Name] = &installed{rec: rec, sealed: e}
	}
	return s.publish(ctx)
}

// Reload reads the installed servers from the store again and serves
// them as they are now: another gateway replica installed, changed,
// uninstalled one or set its policy. What is the same is not touched.
// This replica's readers get one mcp/changed for what changed, with the
// actions the replica that made the change sent.
func (s *Service) Reload(ctx context.Context) error {
	changes, err := s.reload(ctx)
	if len(changes) > 0 {
		s.emitChanged(ctx, changes)
	}
	return err
}

// reloadAction is the mcp/changed action of an install read again: was
// before, now after (nil when there is none); "" when nothing changed.
func reloadAction(was, now *installed) string {
	switch {
	case was == nil && now == nil:
		return ""
	case was == nil:
		return ActionInstalled
	case now == nil:
		return ActionUninstalled
	case !bytes.Equal(was.rec.Config, now.rec.Config):
		return ActionUpdated
	case was.rec.Enabled != now.rec.Enabled || was.rec.AllowImplicit != now.rec.AllowImplicit:
		return ActionPolicy
	case !was.rec.UpdatedAt.Equal(now.rec.UpdatedAt):
		return ActionUpdated // installed again as it was
	}
	return ""
}

func (s *Service) reload(ctx context.Context) ([]Change, error) {
	list, err := s.Store.Installs(ctx)
	if err != nil {
		return nil, fmt.Errorf("load installs: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string]*installed, len(list))
	for _, rec := range list {
		var e clientconfig.Entry
		if err := json.Unmarshal(rec.Config, &e); err != nil {
			next[rec.Name] = &installed{rec: rec, err: "stored config does not decode", undecodable: true}
			continue
		}
		next[rec.Name] = &installed{rec: rec, sealed: e}
	}
	var changes []Change
	for _, name := range slices.Sorted(maps.Keys(s.installs)) {
		if _, ok := next[name]; !ok {
			delete(s.catalogVer, name)
			delete(s.started, name)
			changes = append(changes, Change{Name: name, Action: ActionUninstalled})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(next)) {
		if a := reloadAction(s.installs[name], next[name]); a != "" {
			changes = append(changes, Change{Name: name, Action: a})
		}
	}
	s.installs = next
	return changes, s.publish(ctx)
}

// specOf builds the spec of an installed server, secrets still sealed.
func (s *Service) specOf(name string, in *installed) (*config.Server, clientconfig.Diagnostics) {
	return clientconfig.Map(name, in.sealed, "mcpServers."+name, s.Options.Install)
}

// publish hands the enabled installs to the catalog, secrets still sealed
// (SecretLauncher resolves them at launch). An install whose secrets are
// not all in the keystore is not served; its err says why. Call with s.mu
// held.
func (s *Service) publish(ctx context.Context) error {
	var specs []*config.Server
	disabled := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(s.installs)) {
		in := s.installs[name]
		if !in.rec.Enabled {
			disabled[name] = true
		}
		if !in.rec.Enabled || in.undecodable {
			continue
		}
		in.err = ""
		spec, diags := s.specOf(name, in)
		if spec == nil {
			in.err = "the entry no longer maps to a server: " + firstError(diags)
			continue
		}
		err := Unseal(name, cloneSpec(spec), func(ref string) (string, error) {
			_, err := s.Store.Secret(ctx, ref)
			return "", err
		})
		if err != nil {
			in.err = err.Error()
			s.Log.Error("installed server not served", "mcp_server", name, "error", err)
			continue
		}
		specs = append(specs, spec)
	}
	// Refuse first, so no call starts a server being disabled.
	s.disabled.Store(&disabled)
	return s.Catalog.PublishInstalled(ctx, specs)
}

func firstError(d clientconfig.Diagnostics) string {
	for _, x := range d {
		if x.Level == clientconfig.LevelError {
			return x.Message
		}
	}
	return ""
}

// secretsOf returns the secret values of an installed server, to scrub
// them from stderr and errors.
func (s *Service) secretsOf(ctx context.Context, name string) []string {
	s.mu.Lock()
	in, ok := s.installs[name]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	var out []string
	for _, m := range placeholderRe().FindAllStringSubmatch(mustJSON(in.sealed), -1) {
		if b, err := s.Store.Secret(ctx, m[1]); err == nil {
			out = append(out, string(b))
		}
	}
	return out
}

// newGeneration names one install's secrets.
func newGeneration() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// ---------------------------------------------------------------------------
// Requests

// Scope are the fields every request may carry.
type Scope struct {
	WorkspaceID string `json:"workspace_id,omitempty"`
	ScopeKind   string `json:"scope_kind,omitempty"`
}

func (s *Service) checkScope(sc Scope) error {
	if sc.WorkspaceID != "" && sc.WorkspaceID != s.Workspace {
		return invalid("workspace_id %q is not served by this gateway: it serves workspace %q", sc.WorkspaceID, s.Workspace)
	}
	switch sc.ScopeKind {
	case "", "workspace":
		return nil
	case "user":
		return invalid(`scope_kind "user" is not supported yet: this gateway has workspace-scoped servers only`)
	}
	return invalid(`scope_kind %q is unknown (want "workspace")`, sc.ScopeKind)
}

func need(ctx context.Context, scope string) (auth.Identity, error) {
	id := identityOf(ctx)
	if !id.Has(scope) {
		return id, auth.MissingScope(scope)
	}
	return id, nil
}

// adminOn is the preamble of the methods that change one named server:
// hangar:admin, a workspace scope this gateway serves, a name, and a
// server inside the caller's filter.
func (s *Service) adminOn(ctx context.Context, scope Scope, name string) (auth.Identity, error) {
	who, err := need(ctx, auth.ScopeAdmin)
	if err != nil {
		return who, err
	}
	if err := s.checkScope(scope); err != nil {
		return who, err
	}
	if name == "" {
		return who, invalid("name is required")
	}
	return who, mayReach(who, name)
}

// mayReach refuses a server outside the caller's filter, with the error
// seed 004 gives for it.
func mayReach(id auth.Identity, server string) error {
	if !id.MayReach(server) {
		return auth.MissingScope(auth.ServerScope(server))
	}
	return nil
}
