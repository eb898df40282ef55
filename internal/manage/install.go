package manage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/clientconfig"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/store"
)

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
	Name        string                   `json:"name"`
	Status      string                   `json:"status"` // installed | updated | validation_error
	Diagnostics clientconfig.Diagnostics `json:"diagnostics"`
	Server      *Item                    `json:"server,omitempty"`
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
	names, entries, rootKey, err := clientconfig.Parse(p.ConfigJSON)
	if err != nil {
		return nil, invalid("%v", err)
	}
	res := &InstallResult{Servers: []ServerOutcome{}}
	var changes []Change

	// npm and PyPI packages are resolved, pinned and built before
	// anything is stored, and outside the lock: a build takes seconds.
	built := map[string]clientconfig.Diagnostics{}
	for _, name := range names {
		if mayReach(who, name) != nil {
			continue // installOne refuses it, and audits that
		}
		if srv, ok := s.Catalog.Server(name); ok && srv.Source != SourceInstalled {
			continue
		}
		built[name] = s.buildPackage(ctx, name, entries[name], rootKey+"."+name)
	}

	s.mu.Lock()
	for _, name := range names {
		out := s.installOne(ctx, who, name, entries[name], rootKey+"."+name, p, built[name])
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
	sweep := false
	for _, o := range res.Servers {
		if len(built[o.Name]) == 0 || built[o.Name].HasError() {
			continue
		}
		switch o.Status {
		case "validation_error":
			// Built, then refused: its pin and image go again.
			s.releaseEntry(ctx, o.Name, entries[o.Name], rootKey+"."+o.Name)
		case ActionUpdated:
			sweep = true
		}
	}
	if sweep {
		// An updated package server's old container is gone now: so can
		// the image it ran be, unless another server runs it.
		if _, err := s.Options.Packages.Sweep(context.WithoutCancel(ctx)); err != nil {
			s.Log.Warn("package images not swept after an install", "error", err)
		}
	}
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

// CodePackageUnavailable is the diagnostic of an npm or PyPI package that
// could not be installed: not in the registry, no such version, a file
// that does not match its digest, a registry that cannot be reached, a
// runner without a runtime image, a failed install.
const CodePackageUnavailable = "package_unavailable"

// buildPackage builds the image of the package an entry runs, if it runs
// one and it maps: diagnostics saying what was built, or why nothing
// could be (an error, which refuses the install).
func (s *Service) buildPackage(ctx context.Context, name string, raw json.RawMessage, field string) clientconfig.Diagnostics {
	if s.Options.Packages == nil || !clientconfig.ValidName(name) {
		return nil
	}
	e, diags := clientconfig.DecodeEntry(field, raw)
	if diags.HasError() {
		return nil
	}
	o := s.Options.Install
	o.Listing = true // only the package matters here
	spec, _ := clientconfig.Map(name, e, field, o)
	if spec == nil || spec.Package == nil {
		return nil
	}
	var out clientconfig.Diagnostics
	img, err := s.Options.Packages.Ensure(ctx, spec, call.Progress{})
	if err != nil {
		out.Add(clientconfig.LevelError, CodePackageUnavailable, field+".args", "%s", Scrub(err.Error(), secretValues(e)))
		return out
	}
	verb := "found its image"
	if img.Built {
		verb = "built its image"
	}
	out.Add(clientconfig.LevelInfo, clientconfig.CodePackage, field+".command", "%s %s was pinned to %s (%s) and %s %s on %s",
		spec.Package.Type, spec.Package.Name, img.Version, img.Integrity, verb, img.Ref, img.Runtime)
	return out
}

// releaseEntry releases the package image buildPackage built for an
// entry that was not installed after all.
func (s *Service) releaseEntry(ctx context.Context, name string, raw json.RawMessage, field string) {
	s.mu.Lock()
	_, installed := s.installs[name]
	s.mu.Unlock()
	if installed {
		return // an earlier install of the name keeps what it runs
	}
	e, _ := clientconfig.DecodeEntry(field, raw)
	o := s.Options.Install
	o.Listing = true
	if spec, _ := clientconfig.Map(name, e, field, o); spec != nil && spec.Package != nil {
		s.Options.Packages.Release(context.WithoutCancel(ctx), spec)
	}
}

// secretValues are the values an entry's env and headers hold, to keep
// them out of messages.
func secretValues(e clientconfig.Entry) []string {
	var out []string
	for _, v := range e.Env {
		out = append(out, v)
	}
	for _, v := range e.Headers {
		out = append(out, v)
	}
	return append(out, e.Token, e.Authorization)
}

// installOne validates, seals and stores one entry; built are its package
// build's diagnostics. Call with s.mu held.
func (s *Service) installOne(ctx context.Context, who auth.Identity, name string, raw json.RawMessage, field string, p InstallParams, built clientconfig.Diagnostics) ServerOutcome {
	out := ServerOutcome{Name: name, Status: "validation_error", Diagnostics: clientconfig.Diagnostics{}}
	if !clientconfig.ValidName(name) {
		out.Diagnostics.Add(clientconfig.LevelError, clientconfig.CodeInvalidName, field, "server name must match ^[A-Za-z0-9_-]{1,64}$")
		return out
	}
	if err := mayReach(who, name); err != nil {
		out.Diagnostics.Add(clientconfig.LevelError, clientconfig.CodeNameTaken, field, "%s", err.Error())
		var ae *auth.Error
		if errors.As(err, &ae) {
			s.auditRefusal(ctx, who, name, MethodInstall, ae)
		}
		return out
	}
	if srv, ok := s.Catalog.Server(name); ok && srv.Source != SourceInstalled {
		out.Diagnostics.Add(clientconfig.LevelError, clientconfig.CodeNameTaken, field, "the name %q is taken by a server from %s", name, srv.Source)
		return out
	}
	e, diags := clientconfig.DecodeEntry(field, raw)
	out.Diagnostics = append(out.Diagnostics, diags...)
	if diags.HasError() {
		return out
	}
	sealed := Seal(name, newGeneration(), e, field)
	spec, diags := clientconfig.Map(name, sealed.Entry, field, s.Options.Install)
	out.Diagnostics = append(out.Diagnostics, diags...)
	if spec == nil {
		return out
	}
	out.Diagnostics = append(out.Diagnostics, built...)
	if built.HasError() {
		return out
	}
	for _, f := range sealed.Fields {
		out.Diagnostics.Add(clientconfig.LevelInfo, clientconfig.CodeSecretStored, f, "value stored in the gateway keystore")
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
		out.Diagnostics.Add(clientconfig.LevelError, "store_error", field, "could not %s: the store refused the write", what)
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
	s.appendAudit(ctx, e)
}

// appendAudit writes e. What it records has happened (a change made, a
// refusal given): it is written even when the caller has gone meanwhile
// and its request's context is cancelled.
func (s *Service) appendAudit(ctx context.Context, e store.AuditEntry) {
	if err := s.Store.AppendAudit(context.WithoutCancel(ctx), e); err != nil {
		s.Log.Warn("audit not written", "mcp_server", e.Server, "action", e.Action, "error", err)
	}
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
	who, err := s.adminOn(ctx, p.Scope, p.Name)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	in, ok := s.installs[p.Name]
	if !ok {
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
	var spec *config.Server
	if !in.undecodable {
		spec, _ = s.specOf(p.Name, in)
	}
	delete(s.installs, p.Name)
	delete(s.catalogVer, p.Name)
	delete(s.started, p.Name)
	pubErr := s.publish(ctx)
	s.mu.Unlock()
	if pubErr != nil {
		s.Log.Warn("publish installed servers", "error", pubErr)
	}
	if spec != nil && spec.Package != nil && s.Options.Packages != nil {
		// Its container is gone with it: its image goes too, unless
		// another server runs the same release.
		s.Options.Packages.Release(context.WithoutCancel(ctx), spec)
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
