package manage

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/provider"
)

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
	who, err := s.adminOn(ctx, p.Scope, p.Name)
	if err != nil {
		return nil, err
	}
	if p.Enabled == nil && p.AllowImplicitInvocation == nil {
		return nil, invalid("give enabled or allow_implicit_invocation (or both)")
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
	// Update (mcp/server/restart only) resolves an npm or PyPI server's
	// version range again and restarts it on what it resolves to now.
	Update bool `json:"update,omitempty"`
}

// RestartResult is mcp/server/restart's answer.
type RestartResult struct {
	Accepted bool `json:"accepted"`
	Server   Item `json:"server"`
	// Package is what an update changed: present with update only.
	Package *PackageUpdate `json:"package,omitempty"`
}

// Restart serves mcp/server/restart: the backend is stopped now and
// started again in the background; mcp/server/status_changed reports the
// transitions.
func (s *Service) Restart(ctx context.Context, p NameParams) (*RestartResult, error) {
	who, err := s.adminOn(ctx, p.Scope, p.Name)
	if err != nil {
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
	var upd *PackageUpdate
	if p.Update {
		srv, _ := s.Catalog.Server(p.Name)
		if srv.Spec == nil || srv.Spec.Package == nil {
			return nil, invalid("%q runs no npm or PyPI package: update applies to package servers only", p.Name)
		}
		if s.Options.Packages == nil {
			return nil, invalid("this gateway has no package runtimes to update %q with", p.Name)
		}
		from, img, err := s.Options.Packages.Update(ctx, srv.Spec, call.Progress{})
		if err != nil {
			// The server keeps its pin and image; say why nothing changed.
			s.audit(ctx, who, p.Name, "mcp/server/restart", "update failed")
			return nil, fmt.Errorf("update %s: %w", p.Name, err)
		}
		upd = &PackageUpdate{Type: srv.Spec.Package.Type, Name: srv.Spec.Package.Name, From: from, To: img.Version, Image: img.Ref}
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
	outcome := "accepted"
	if upd != nil {
		// The old release's container is gone now: its image can go.
		if _, err := s.Options.Packages.Sweep(context.WithoutCancel(ctx)); err != nil {
			s.Log.Warn("package images not swept after an update", "mcp_server", p.Name, "error", err)
		}
		outcome = fmt.Sprintf("accepted, updated %s %s from %s to %s", upd.Type, upd.Name, orNone(upd.From), upd.To)
	}
	s.audit(ctx, who, p.Name, "mcp/server/restart", outcome)
	it, _ := s.lookup(ctx, p.Name)
	return &RestartResult{Accepted: true, Server: it, Package: upd}, nil
}

// PackageUpdate is what mcp/server/restart with update did to an npm or
// PyPI server: the version it ran and the one it runs now (the same when
// nothing newer matches its range), and the image of that.
type PackageUpdate struct {
	Type  string `json:"type"`
	Name  string `json:"name"`
	From  string `json:"from"`
	To    string `json:"to"`
	Image string `json:"image"`
}

func orNone(v string) string {
	if v == "" {
		return "none"
	}
	return v
}

func (s *Service) lookupErr(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in, ok := s.installs[name]; ok && in.err != "" {
		return in.err
	}
	return "not registered"
}
