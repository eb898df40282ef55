package manage

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
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
)

// Binding is one front-door name bound to a provider tool
// (recent_bindings).
type Binding struct {
	CallableName   string    `json:"callable_name"`
	RawToolName    string    `json:"raw_tool_name"`
	CatalogVersion string    `json:"catalog_version,omitempty"`
	BoundAt        time.Time `json:"bound_at"`
}

// Bindings is the front door's record of names it bound; nil until the
// front door is merged (recent_bindings is then empty).
type Bindings interface {
	RecentBindings(server string, limit int) []Binding
}

// Service is the management protocol.
type Service struct {
	Catalog   Catalog
	Store     Store
	Notifier  *Notifier
	Bindings  Bindings // may be nil
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
	sealed Entry
	// err says why an enabled install is not served (a secret missing
	// from the keystore, a runtime no longer configured); "" when served.
	err string
	// undecodable: the stored config could not be read back.
	undecodable bool
}

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
		var e Entry
		if err := json.Unmarshal(rec.Config, &e); err != nil {
			s.Log.Error("installed server not restored: its stored config does not decode", "mcp_server", rec.Name, "error", err)
			s.installs[rec.Name] = &installed{rec: rec, err: "stored config does not decode", undecodable: true}
			continue
		}
		s.installs[rec.Name] = &installed{rec: rec, sealed: e}
	}
	return s.publish(ctx)
}

// specOf builds the spec of an installed server, secrets still sealed.
func (s *Service) specOf(name string, in *installed) (*config.Server, Diagnostics) {
	return Map(name, in.sealed, "mcpServers."+name, s.Options)
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

func firstError(d Diagnostics) string {
	for _, x := range d {
		if x.Level == LevelError {
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
	for _, m := range placeholderRe.FindAllStringSubmatch(mustJSON(in.sealed), -1) {
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

// mayReach refuses a server outside the caller's filter, with the error
// seed 004 gives for it.
func mayReach(id auth.Identity, server string) error {
	if !id.MayReach(server) {
		return auth.MissingScope(auth.ServerScope(server))
	}
	return nil
}

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
	var sealed Entry
	installErr := ""
	if isInstalled {
		rec, sealed, installErr = in.rec, in.sealed, in.err
	}
	s.mu.Unlock()

	it := Item{ID: id, Name: id, Scope: "workspace", Policy: Policy{Enabled: true, AllowImplicitInvocation: true}}
	if served {
		it.SourceKind = srv.Source
		it.ToolsCount = len(srv.Tools)
		it.Transport = transportOf(srv.Spec)
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
		o := s.Options
		o.ReadFile = func(string) ([]byte, error) { return nil, nil }
		if spec, _ := Map(id, sealed, "", o); spec != nil {
			it.Transport = transportOf(spec)
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
// redacted coordinates, header and environment key names only.
func transportOf(sp *config.Server) map[string]any {
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
		t["url"] = redactURL(sp.Endpoint)
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
		t["image"] = sp.Image
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

// redactURL drops userinfo and the values of credential-like query
// parameters (placeholders of sealed ones stay: they are refs).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "[invalid url]"
	}
	u.User = nil
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			k, v, ok := strings.Cut(p, "=")
			if ok && secretish.MatchString(k) && !placeholderRe.MatchString(v) {
				parts[i] = k + "=[redacted]"
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	return u.String()
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

// ---------------------------------------------------------------------------
// mcp/install

// InstallParams are mcp/install's.
type InstallParams struct {
	Scope
	ConfigJSON              string `json:"config_json"`
	Enabled                 *bool  `json:"enabled,omitempty"`
	AllowImplicitInvocation *bool  `json:"allow_implicit_invocation,omitempty"`
}

// InstallResult is mcp/install's answer.
type InstallResult struct {
	Status  string          `json:"status"` // ok | partial | validation_error
	Servers []ServerOutcome `json:"servers"`
}

// ServerOutcome is one server of an install.
type ServerOutcome struct {
	Name        string      `json:"name"`
	Status      string      `json:"status"` // installed | updated | validation_error
	Diagnostics Diagnostics `json:"diagnostics"`
	Server      *Item       `json:"server,omitempty"`
}

// Change is one entry of mcp/changed.
type Change struct {
	Name   string `json:"name"`
	Action string `json:"action"`
}

// Install serves mcp/install.
func (s *Service) Install(ctx context.Context, p InstallParams) (*InstallResult, error) {
	who, err := need(ctx, auth.ScopeAdmin)
	if err != nil {
		return nil, err
	}
	if err := s.checkScope(p.Scope); err != nil {
		return nil, err
	}
	names, entries, rootKey, err := Parse(p.ConfigJSON)
	if err != nil {
		return nil, invalid("%v", err)
	}
	res := &InstallResult{Servers: []ServerOutcome{}}
	var changes []Change

	s.mu.Lock()
	for _, name := range names {
		out := s.installOne(ctx, who, name, entries[name], rootKey+"."+name, p)
		if out.Status != "validation_error" {
			changes = append(changes, Change{Name: name, Action: out.Status})
		}
		res.Servers = append(res.Servers, out)
	}
	var pubErr error
	if len(changes) > 0 {
		pubErr = s.publish(ctx)
	}
	s.mu.Unlock()
	if pubErr != nil {
		s.Log.Warn("publish installed servers", "error", pubErr)
	}

	ok := 0
	for i := range res.Servers {
		o := &res.Servers[i]
		if o.Status == "validation_error" {
			continue
		}
		ok++
		if it, err := s.lookup(ctx, o.Name); err == nil {
			o.Server = &it
		}
	}
	switch {
	case ok == len(res.Servers) && ok > 0:
		res.Status = "ok"
	case ok == 0:
		res.Status = "validation_error"
	default:
		res.Status = "partial"
	}
	if len(changes) > 0 {
		s.emitChanged(ctx, changes)
	}
	return res, nil
}

// installOne validates, seals and stores one entry. Call with s.mu held.
func (s *Service) installOne(ctx context.Context, who auth.Identity, name string, raw json.RawMessage, field string, p InstallParams) ServerOutcome {
	out := ServerOutcome{Name: name, Status: "validation_error", Diagnostics: Diagnostics{}}
	if !ValidName(name) {
		out.Diagnostics.add(LevelError, CodeInvalidName, field, "server name must match ^[A-Za-z0-9_-]{1,64}$")
		return out
	}
	if err := mayReach(who, name); err != nil {
		out.Diagnostics.add(LevelError, CodeNameTaken, field, "%s", err.Error())
		return out
	}
	if srv, ok := s.Catalog.Server(name); ok && srv.Source != SourceInstalled {
		out.Diagnostics.add(LevelError, CodeNameTaken, field, "the name %q is taken by a server from %s", name, srv.Source)
		return out
	}
	e, diags := DecodeEntry(field, raw)
	out.Diagnostics = append(out.Diagnostics, diags...)
	if diags.HasError() {
		return out
	}
	sealed := Seal(name, newGeneration(), e, field)
	spec, diags := Map(name, sealed.Entry, field, s.Options)
	out.Diagnostics = append(out.Diagnostics, diags...)
	if spec == nil {
		return out
	}
	for _, f := range sealed.Fields {
		out.Diagnostics.add(LevelInfo, CodeSecretStored, f, "value stored in the gateway keystore")
	}

	now := time.Now().UTC()
	prev, exists := s.installs[name]
	rec := store.Install{Name: name, Enabled: true, CreatedAt: now, UpdatedAt: now}
	if exists {
		rec.Enabled, rec.AllowImplicit, rec.CreatedAt = prev.rec.Enabled, prev.rec.AllowImplicit, prev.rec.CreatedAt
	}
	if p.Enabled != nil {
		rec.Enabled = *p.Enabled
	}
	if p.AllowImplicitInvocation != nil {
		rec.AllowImplicit = *p.AllowImplicitInvocation
	}
	rec.Config, _ = json.Marshal(sealed.Entry)

	fail := func(what string, err error) ServerOutcome {
		s.Log.Error("install failed", "mcp_server", name, "step", what, "error", err)
		out.Status = "validation_error"
		out.Diagnostics.add(LevelError, "store_error", field, "could not %s: the store refused the write", what)
		return out
	}
	if err := s.Store.DeleteSecrets(ctx, SecretPrefix(name)); err != nil {
		return fail("replace the secrets", err)
	}
	for _, ref := range slices.Sorted(maps.Keys(sealed.Secrets)) {
		if err := s.Store.PutSecret(ctx, ref, []byte(sealed.Secrets[ref])); err != nil {
			return fail("store a secret", err)
		}
	}
	if err := s.Store.PutInstall(ctx, rec); err != nil {
		return fail("store the install", err)
	}
	s.installs[name] = &installed{rec: rec, sealed: sealed.Entry}
	out.Status = ActionInstalled
	if exists {
		out.Status = ActionUpdated
	}
	s.audit(ctx, who, name, "mcp/install", out.Status)
	return out
}

func (s *Service) audit(ctx context.Context, who auth.Identity, server, action, outcome string) {
	e := store.AuditEntry{At: time.Now().UTC(), Server: server, Identity: who.Name, Action: action, Allowed: true,
		Reason: "hangar:admin", Outcome: outcome}
	if err := s.Store.AppendAudit(ctx, e); err != nil {
		s.Log.Warn("audit not written", "mcp_server", server, "action", action, "error", err)
	}
}

// ---------------------------------------------------------------------------
// mcp/policy/set

// PolicyParams are mcp/policy/set's.
type PolicyParams struct {
	Scope
	Name                    string `json:"name"`
	Enabled                 *bool  `json:"enabled,omitempty"`
	AllowImplicitInvocation *bool  `json:"allow_implicit_invocation,omitempty"`
}

// PolicyResult is mcp/policy/set's answer.
type PolicyResult struct {
	Policy Policy `json:"policy"`
	Server Item   `json:"server"`
}

// SetPolicy serves mcp/policy/set. Disabling stops the server (its
// containers are removed) but keeps it installed.
func (s *Service) SetPolicy(ctx context.Context, p PolicyParams) (*PolicyResult, error) {
	who, err := need(ctx, auth.ScopeAdmin)
	if err != nil {
		return nil, err
	}
	if err := s.checkScope(p.Scope); err != nil {
		return nil, err
	}
	if p.Name == "" {
		return nil, invalid("name is required")
	}
	if p.Enabled == nil && p.AllowImplicitInvocation == nil {
		return nil, invalid("give enabled or allow_implicit_invocation (or both)")
	}
	if err := mayReach(who, p.Name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	in, ok := s.installs[p.Name]
	if !ok {
		s.mu.Unlock()
		if srv, found := s.Catalog.Server(p.Name); found {
			return nil, invalid("%q comes from %s: only installed servers have a policy this round", p.Name, srv.Source)
		}
		return nil, fmt.Errorf("%w: no MCP server named %q", errNotFound, p.Name)
	}
	rec := in.rec
	if p.Enabled != nil {
		rec.Enabled = *p.Enabled
	}
	if p.AllowImplicitInvocation != nil {
		rec.AllowImplicit = *p.AllowImplicitInvocation
	}
	rec.UpdatedAt = time.Now().UTC()
	if err := s.Store.PutInstall(ctx, rec); err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("store the policy: %w", err)
	}
	in.rec = rec
	pubErr := s.publish(ctx)
	s.mu.Unlock()
	if pubErr != nil {
		s.Log.Warn("publish installed servers", "error", pubErr)
	}
	s.audit(ctx, who, p.Name, "mcp/policy/set", fmt.Sprintf("enabled=%v allow_implicit_invocation=%v", rec.Enabled, rec.AllowImplicit))
	s.emitChanged(ctx, []Change{{Name: p.Name, Action: ActionPolicy}})
	it, _ := s.lookup(ctx, p.Name)
	return &PolicyResult{Policy: Policy{Enabled: rec.Enabled, AllowImplicitInvocation: rec.AllowImplicit}, Server: it}, nil
}

// Refuse returns the error a call to a disabled server gets, nil when the
// server is not disabled. The gateway asks before every call.
func (s *Service) Refuse(id string) error {
	if d := s.disabled.Load(); d != nil && (*d)[id] {
		return &provider.Error{Kind: KindDisabled, ID: id, Detail: "disabled by policy: enabled=false; mcp/policy/set with enabled=true serves it again"}
	}
	return nil
}

// KindDisabled is the error kind of a call to a disabled server.
const KindDisabled = "mcp_server_disabled"

// Policy returns an installed server's policy (the front door reads
// allow_implicit_invocation); ok is false for servers of other sources.
func (s *Service) Policy(id string) (Policy, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.installs[id]
	if !ok {
		return Policy{}, false
	}
	return Policy{Enabled: in.rec.Enabled, AllowImplicitInvocation: in.rec.AllowImplicit}, true
}

// ---------------------------------------------------------------------------
// mcp/server/restart

// NameParams are the params of methods naming one server.
type NameParams struct {
	Scope
	Name string `json:"name"`
}

// RestartResult is mcp/server/restart's answer.
type RestartResult struct {
	Accepted bool `json:"accepted"`
	Server   Item `json:"server"`
}

// Restart serves mcp/server/restart: the backend is stopped now and
// started again in the background; mcp/server/status_changed reports the
// transitions.
func (s *Service) Restart(ctx context.Context, p NameParams) (*RestartResult, error) {
	who, err := need(ctx, auth.ScopeAdmin)
	if err != nil {
		return nil, err
	}
	if err := s.checkScope(p.Scope); err != nil {
		return nil, err
	}
	if p.Name == "" {
		return nil, invalid("name is required")
	}
	if err := mayReach(who, p.Name); err != nil {
		return nil, err
	}
	if err := s.Refuse(p.Name); err != nil {
		return nil, invalid("%v", err)
	}
	if _, ok := s.Catalog.Server(p.Name); !ok {
		if _, err := s.lookup(ctx, p.Name); err != nil {
			return nil, err
		}
		return nil, invalid("%q is installed but not served: %s", p.Name, s.lookupErr(p.Name))
	}
	s.mu.Lock()
	s.restarting[p.Name] = true
	s.mu.Unlock()
	if err := s.Catalog.Restart(ctx, p.Name); err != nil {
		s.mu.Lock()
		delete(s.restarting, p.Name)
		s.mu.Unlock()
		return nil, fmt.Errorf("restart %s: %w", p.Name, err)
	}
	s.audit(ctx, who, p.Name, "mcp/server/restart", "accepted")
	it, _ := s.lookup(ctx, p.Name)
	return &RestartResult{Accepted: true, Server: it}, nil
}

func (s *Service) lookupErr(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in, ok := s.installs[name]; ok && in.err != "" {
		return in.err
	}
	return "not registered"
}

// ---------------------------------------------------------------------------
// mcp/uninstall

// UninstallResult is mcp/uninstall's answer.
type UninstallResult struct {
	Removed  bool   `json:"removed"`
	ServerID string `json:"server_id"`
	Name     string `json:"name"`
}

// Uninstall serves mcp/uninstall: the server is stopped (its containers
// removed), its install, secrets and cached catalog deleted.
func (s *Service) Uninstall(ctx context.Context, p NameParams) (*UninstallResult, error) {
	who, err := need(ctx, auth.ScopeAdmin)
	if err != nil {
		return nil, err
	}
	if err := s.checkScope(p.Scope); err != nil {
		return nil, err
	}
	if p.Name == "" {
		return nil, invalid("name is required")
	}
	if err := mayReach(who, p.Name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if _, ok := s.installs[p.Name]; !ok {
		s.mu.Unlock()
		if srv, found := s.Catalog.Server(p.Name); found {
			return nil, invalid("%q comes from %s, not from mcp/install: it cannot be uninstalled", p.Name, srv.Source)
		}
		return nil, fmt.Errorf("%w: no installed MCP server named %q", errNotFound, p.Name)
	}
	if err := s.Store.DeleteInstall(ctx, p.Name); err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("delete the install: %w", err)
	}
	delete(s.installs, p.Name)
	delete(s.catalogVer, p.Name)
	delete(s.started, p.Name)
	pubErr := s.publish(ctx)
	s.mu.Unlock()
	if pubErr != nil {
		s.Log.Warn("publish installed servers", "error", pubErr)
	}
	if err := s.Store.DeleteSecrets(ctx, SecretPrefix(p.Name)); err != nil {
		s.Log.Warn("secrets of an uninstalled server not deleted", "mcp_server", p.Name, "error", err)
	}
	if err := s.Store.DeleteCatalog(ctx, p.Name); err != nil && !errors.Is(err, store.ErrNotFound) {
		s.Log.Warn("cached catalog of an uninstalled server not deleted", "mcp_server", p.Name, "error", err)
	}
	s.audit(ctx, who, p.Name, "mcp/uninstall", "removed")
	s.emitChanged(ctx, []Change{{Name: p.Name, Action: ActionUninstalled}})
	return &UninstallResult{Removed: true, ServerID: p.Name, Name: p.Name}, nil
}

// ---------------------------------------------------------------------------
// mcp/server/details

// DetailsParams are mcp/server/details's.
type DetailsParams struct {
	Scope
	ServerID string `json:"server_id"`
	Name     string `json:"name,omitempty"` // accepted as an alias of server_id
}

// DetailsResult is mcp/server/details's answer.
type DetailsResult struct {
	SnapshotVersion uint64      `json:"snapshot_version"`
	Server          Item        `json:"server"`
	Catalog         CatalogView `json:"catalog"`
	Health          HealthView  `json:"health"`
	Audit           []AuditView `json:"audit"`
	RecentBindings  []Binding   `json:"recent_bindings"`
}

// CatalogView is a server's catalog.
type CatalogView struct {
	CatalogVersion    string     `json:"catalog_version"`
	Tools             []ToolView `json:"tools"`
	Resources         []any      `json:"resources"`
	ResourceTemplates []any      `json:"resource_templates"`
	Prompts           []any      `json:"prompts"`
}

// ToolView is one tool of a catalog.
type ToolView struct {
	Name               string          `json:"name"`
	Title              string          `json:"title,omitempty"`
	Description        string          `json:"description,omitempty"`
	InputSchemaSummary map[string]any  `json:"input_schema_summary"`
	Annotations        json.RawMessage `json:"annotations,omitempty"`
}

// HealthView is a server's health.
type HealthView struct {
	State          string `json:"state"`
	StatusReason   string `json:"status_reason,omitempty"`
	LastError      string `json:"last_error,omitempty"`
	RetryAttempt   int    `json:"retry_attempt"`
	NextRetryAt    any    `json:"next_retry_at"`
	CatalogVersion string `json:"catalog_version"`
	StderrTail     string `json:"stderr_tail"`
}

// AuditView is one audit entry.
type AuditView struct {
	At         string  `json:"at"`
	Identity   string  `json:"identity"`
	Action     string  `json:"action"`
	Tool       string  `json:"tool,omitempty"`
	Allowed    bool    `json:"allowed"`
	Reason     string  `json:"reason,omitempty"`
	Outcome    string  `json:"outcome,omitempty"`
	DurationMs float64 `json:"duration_ms,omitempty"`
}

// historyLimit is how many audit entries and bindings details shows.
const historyLimit = 50

// Details serves mcp/server/details.
func (s *Service) Details(ctx context.Context, p DetailsParams) (*DetailsResult, error) {
	who, err := need(ctx, auth.ScopeRead)
	if err != nil {
		return nil, err
	}
	if err := s.checkScope(p.Scope); err != nil {
		return nil, err
	}
	id := p.ServerID
	if id == "" {
		id = p.Name
	}
	if id == "" {
		return nil, invalid("server_id is required")
	}
	if err := mayReach(who, id); err != nil {
		return nil, err
	}
	it, err := s.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	v, err := s.Store.SnapshotVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("snapshot version: %w", err)
	}
	secrets := s.secretsOf(ctx, id)
	srv, served := s.Catalog.Server(id)
	tools := srv.Tools
	if len(tools) == 0 {
		if c, err := s.Store.Catalog(ctx, id); err == nil {
			var cc cachedCatalog
			if json.Unmarshal(c.Catalog, &cc) == nil {
				tools = cc.Tools
			}
		}
	}
	res := &DetailsResult{SnapshotVersion: v, Server: it, Audit: []AuditView{}, RecentBindings: []Binding{}}
	res.Catalog = CatalogView{CatalogVersion: catalogVersion(tools), Tools: []ToolView{}, Resources: []any{},
		ResourceTemplates: []any{}, Prompts: []any{}}
	for _, t := range tools {
		res.Catalog.Tools = append(res.Catalog.Tools, ToolView{Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchemaSummary: schemaSummary(t.InputSchema), Annotations: t.Annotations})
	}
	res.Health = HealthView{State: it.Runtime.State, StatusReason: it.StatusReason, LastError: it.Runtime.LastError,
		CatalogVersion: res.Catalog.CatalogVersion}
	if served {
		res.Health.RetryAttempt = srv.Runtime.RetryAttempt
		res.Health.StderrTail = Scrub(srv.Runtime.Stderr, secrets)
	}
	if entries, err := s.Store.RecentAudit(ctx, id, historyLimit); err == nil {
		for _, e := range entries {
			res.Audit = append(res.Audit, AuditView{At: e.At.UTC().Format(time.RFC3339Nano), Identity: e.Identity, Action: e.Action,
				Tool: e.Tool, Allowed: e.Allowed, Reason: e.Reason, Outcome: e.Outcome, DurationMs: e.DurationMs})
		}
	} else {
		s.Log.Warn("audit not read", "mcp_server", id, "error", err)
	}
	if s.Bindings != nil {
		if b := s.Bindings.RecentBindings(id, historyLimit); b != nil {
			res.RecentBindings = b
		}
	}
	return res, nil
}

// catalogVersion hashes a catalog: it changes exactly when the catalog does.
func catalogVersion(tools []mcpconn.Tool) string {
	sum := sha256.Sum256(encodeCatalog(tools))
	return hex.EncodeToString(sum[:8])
}

// schemaSummary condenses an input schema to its property names, types
// and required list.
func schemaSummary(raw json.RawMessage) map[string]any {
	var sch struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	out := map[string]any{"type": "object", "properties": map[string]string{}, "required": []string{}}
	if len(raw) == 0 || json.Unmarshal(raw, &sch) != nil {
		return out
	}
	if sch.Type != "" {
		out["type"] = sch.Type
	}
	props := map[string]string{}
	for k, v := range sch.Properties {
		var p struct {
			Type any `json:"type"`
		}
		_ = json.Unmarshal(v, &p)
		props[k] = fmt.Sprint(p.Type)
		if p.Type == nil {
			props[k] = "any"
		}
	}
	out["properties"] = props
	if sch.Required != nil {
		out["required"] = sch.Required
	}
	return out
}

// ---------------------------------------------------------------------------
// Notifications

// emit publishes a notification under the next snapshot version; build
// gets the version. Notifications leave in version order.
func (s *Service) emit(ctx context.Context, method, server string, build func(v uint64) map[string]any) {
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	v, err := s.Store.NextSnapshotVersion(ctx)
	if err != nil {
		s.Log.Error("snapshot version not advanced; notification not sent", "method", method, "error", err)
		return
	}
	s.Notifier.Publish(method, server, build(v))
}

func (s *Service) emitChanged(ctx context.Context, changes []Change) {
	// A reader sees the changes about servers it may reach only.
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	v, err := s.Store.NextSnapshotVersion(ctx)
	if err != nil {
		s.Log.Error("snapshot version not advanced; notification not sent", "method", MethodChanged, "error", err)
		return
	}
	if len(changes) == 1 {
		s.Notifier.Publish(MethodChanged, changes[0].Name, map[string]any{"snapshot_version": v, "changed": changes})
		return
	}
	s.Notifier.PublishFiltered(MethodChanged, func(id auth.Identity) (map[string]any, bool) {
		var mine []Change
		for _, c := range changes {
			if id.MayReach(c.Name) {
				mine = append(mine, c)
			}
		}
		return map[string]any{"snapshot_version": v, "changed": mine}, len(mine) > 0
	})
}

// Run turns provider state changes into mcp/server/status_changed (and
// mcp/server/catalog_changed when a start brings a new catalog) until ctx
// ends.
func (s *Service) Run(ctx context.Context, sink *Sink) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sink.signal:
		}
		for _, c := range sink.take() {
			s.stateChanged(ctx, c)
		}
	}
}

func (s *Service) stateChanged(ctx context.Context, c stateChange) {
	if c.healthy {
		if srv, ok := s.Catalog.Server(c.id); ok && !srv.Runtime.Group {
			if _, member := s.memberOf(c.id); !member {
				s.checkCatalog(ctx, c.id, srv.Tools)
			}
		}
		return
	}
	s.mu.Lock()
	if c.to != provider.Cold {
		s.started[c.id] = true
	}
	if c.to == provider.Ready || c.to == provider.Dead {
		delete(s.restarting, c.id)
	}
	s.mu.Unlock()
	if c.from == "" {
		return // registration, not a transition
	}
	srv, ok := s.Catalog.Server(c.id)
	if !ok {
		return // removed meanwhile (uninstall, unload)
	}
	if _, member := s.memberOf(c.id); member {
		return
	}
	srv.Runtime.State = string(c.to)
	it := s.item(ctx, c.id, srv, true)
	s.emit(ctx, MethodStatusChanged, c.id, func(v uint64) map[string]any {
		return map[string]any{"snapshot_version": v, "server": map[string]any{
			"id": it.ID, "name": it.Name, "runtime": it.Runtime, "status": it.Status, "status_reason": it.StatusReason,
		}}
	})
	if c.to == provider.Ready {
		s.checkCatalog(ctx, c.id, srv.Tools)
	}
}

// memberOf hides group members: their group is the listed server.
func (s *Service) memberOf(id string) (string, bool) {
	if pc, ok := s.Catalog.(*ProviderCatalog); ok {
		return pc.Providers.GroupOf(id)
	}
	return "", false
}

// checkCatalog sends catalog_changed when id's catalog hash differs from
// the last one known (in memory, else in the store).
func (s *Service) checkCatalog(ctx context.Context, id string, tools []mcpconn.Tool) {
	ver := catalogVersion(tools)
	s.mu.Lock()
	prev, known := s.catalogVer[id]
	s.catalogVer[id] = ver
	s.mu.Unlock()
	if !known {
		if c, err := s.Store.Catalog(ctx, id); err == nil {
			prev, known = c.Version, true
		}
	}
	if known && prev == ver {
		return
	}
	if err := s.Store.PutCatalog(ctx, store.CachedCatalog{Server: id, Version: ver, Catalog: encodeCatalog(tools), UpdatedAt: time.Now().UTC()}); err != nil {
		s.Log.Warn("catalog not cached", "mcp_server", id, "error", err)
	}
	s.emit(ctx, MethodCatalogChanged, id, func(v uint64) map[string]any {
		return map[string]any{"snapshot_version": v, "server_id": id, "name": id, "catalog_version": ver,
			"tools_count": len(tools), "resources_count": 0, "resource_templates_count": 0, "prompts_count": 0}
	})
}
