package mcpconn

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// A provider may ask its client (the gateway) for sampling, elicitation or
// roots while it handles a call. The gateway passes such a request on to
// the client whose call it is handling. A provider session is shared by
// many calls, and the protocol does not say which call a server request
// belongs to; so it is relayed only when exactly one relaying call is in
// flight on the connection, and refused with a clear error otherwise:
// never sent to a client that did not make the call.

// Relay answers a provider's requests on behalf of the calling client.
type Relay interface {
	CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error)
	ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error)
}

// Errors a provider gets for a request nobody can answer.
var (
	ErrNoRelay        = errors.New("hangar: no call from a client is in flight on this session to answer the request")
	ErrNotRelayed     = errors.New("hangar: the call in flight was not made by a client that can answer")
	ErrAmbiguousRelay = errors.New("hangar: several calls from different clients are in flight on this session; the request cannot be attributed to one")
)

// relayHub is the connection's sampling, elicitation and roots handler. It
// counts every call in flight, a nil Relay standing for one that cannot
// answer (a call without CallOptions), so a request is never pinned on the
// wrong call.
type relayHub struct {
	mu     sync.Mutex
	seq    uint64
	active map[uint64]Relay
}

func (h *relayHub) add(r Relay) func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.active == nil {
		h.active = map[uint64]Relay{}
	}
	h.seq++
	id := h.seq
	h.active[id] = r
	return func() {
		h.mu.Lock()
		delete(h.active, id)
		h.mu.Unlock()
	}
}

func (h *relayHub) pick(method string) (Relay, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch len(h.active) {
	case 0:
		return nil, fmt.Errorf("%s: %w", method, ErrNoRelay)
	case 1:
		for _, r := range h.active {
			if r == nil {
				return nil, fmt.Errorf("%s: %w", method, ErrNotRelayed)
			}
			return r, nil
		}
	}
	return nil, fmt.Errorf("%s: %w", method, ErrAmbiguousRelay)
}

func (h *relayHub) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	r, err := h.pick(string(mcp.MethodSamplingCreateMessage))
	if err != nil {
		return nil, err
	}
	return r.CreateMessage(ctx, req)
}

func (h *relayHub) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	r, err := h.pick(string(mcp.MethodElicitationCreate))
	if err != nil {
		return nil, err
	}
	return r.Elicit(ctx, req)
}

func (h *relayHub) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	r, err := h.pick(string(mcp.MethodListRoots))
	if err != nil {
		return nil, err
	}
	return r.ListRoots(ctx, req)
}
