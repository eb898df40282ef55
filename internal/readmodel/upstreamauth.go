package readmodel

import (
	"context"
	"errors"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/upstreamauth"
)

// Credentials are callers' upstream credentials (upstream_auth): what a
// caller sees of theirs, and their way to drop it.
type Credentials interface {
	Status(ctx context.Context, spec *config.Server, caller auth.Identity) upstreamauth.Status
	Disconnect(ctx context.Context, server string, caller auth.Identity) (bool, error)
}

var _ Credentials = (*upstreamauth.Manager)(nil)

// ErrNoUpstreamAuth: the server keeps no credential of the caller's own
// to drop (only upstream_auth type oauth does: an exchanged token is
// derived from the caller's JWT, a service token is nobody's).
var ErrNoUpstreamAuth = errors.New("the server has no upstream_auth of type oauth")

// UpstreamAuth is the caller's upstream credential for server id (the
// hangar_details and mcp/server/details field upstream_auth, the
// dashboard's "connected" badge); nil when the server has no upstream_auth
// or is not served. A view of one caller: it takes the caller.
func (m *Model) UpstreamAuth(ctx context.Context, id string, caller auth.Identity) *upstreamauth.Status {
	spec := m.spec(id)
	if spec == nil || spec.UpstreamAuth == nil || m.Credentials == nil {
		return nil
	}
	st := m.Credentials.Status(ctx, spec, caller)
	return &st
}

// Disconnect drops the caller's upstream credential for server id
// (mcp/server/disconnect, the dashboard's disconnect button); false when
// they had none. A server without upstream_auth type oauth is
// ErrNoUpstreamAuth.
func (m *Model) Disconnect(ctx context.Context, id string, caller auth.Identity) (bool, error) {
	spec := m.spec(id)
	if spec == nil || spec.UpstreamAuth == nil || spec.UpstreamAuth.Type != config.UpstreamOAuth || m.Credentials == nil {
		return false, ErrNoUpstreamAuth
	}
	return m.Credentials.Disconnect(ctx, id, caller)
}

func (m *Model) spec(id string) *config.Server {
	if m.Providers == nil {
		return nil
	}
	p, ok := m.provider(id)
	if !ok {
		return nil
	}
	return p.Spec()
}
