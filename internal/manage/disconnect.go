package manage

import (
	"context"
	"errors"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/readmodel"
)

// MethodDisconnect drops the calling identity's own upstream credential
// for one server (upstream_auth): its next call there asks it to log in
// again. Beyond seed 003, named in its style.
const MethodDisconnect = "mcp/server/disconnect"

// DisconnectResult is mcp/server/disconnect's answer.
type DisconnectResult struct {
	// Disconnected is false when the caller had no credential there.
	Disconnected bool `json:"disconnected"`
	Server       Item `json:"server"`
}

// Disconnect serves mcp/server/disconnect. It changes only what belongs
// to the caller, so it needs hangar:call (the scope that uses the
// credential), not hangar:admin, and a server inside the caller's filter.
func (s *Service) Disconnect(ctx context.Context, p NameParams) (*DisconnectResult, error) {
	who, err := need(ctx, auth.ScopeCall)
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
	it, err := s.lookup(ctx, p.Name)
	if err != nil {
		return nil, err
	}
	had, err := s.views().Disconnect(ctx, p.Name, who)
	if errors.Is(err, readmodel.ErrNoUpstreamAuth) {
		return nil, invalid("%s has no upstream_auth of type oauth: hangar keeps nothing of yours to disconnect there", p.Name)
	}
	if err != nil {
		return nil, err
	}
	return &DisconnectResult{Disconnected: had, Server: it}, nil
}
