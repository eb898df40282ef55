// Package relay carries what passes between a client and a provider
// during one call through the gateway, beside the call itself: the
// provider's sampling, elicitation and roots requests (as server-to-client
// requests up to 2025-11-25, as multi round trips on 2026-07-28: rounds.go)
// and the progress notifications written on the call's response stream
// (progress.go). A tool handler's call.Request is built here (NewRequest:
// the caller, the session, the relay and the progress reporter leave the
// context at this point and travel as an argument down the call path); the
// endpoint's stages (RootsParams, CountProgress) shape the responses.
package relay

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

// A provider's sampling, elicitation and roots requests during a call made
// through the gateway (a callable name, or hangar_call) go on to the client
// that made the call, if it declared it can answer them:
//
//   - up to 2025-11-25, as server-to-client requests on the caller's
//     session (clientRelay). Over streamable HTTP mcp-go sends sampling and
//     roots requests on the session's GET stream only (elicitation on the
//     call's own response stream): without one open they would wait for an
//     answer that cannot come, so they are refused at once instead;
//   - on 2026-07-28, which has no server-to-client requests, by multi round
//     trip: the client's call is answered with input_required and the
//     provider waits for the client to call again (relay_rounds.go).

// errNotListening refuses a request a 2025-11-25 client over HTTP could not
// receive.
var errNotListening = errors.New("hangar: the calling client has no GET stream open on its session to receive the request; " +
	"keep one open while calling (with mcp-go: transport.WithContinuousListening)")

// relayKey carries a 2026-07-28 call's multi round trip relay from the
// rounds Middleware to the tool handler, which puts it in its
// call.Request: mcp-go's tool middlewares pass handlers a context and the
// request, nothing else.
type relayKey struct{}

// withRelay returns ctx carrying the relay of the call made with it.
func withRelay(ctx context.Context, r mcpconn.Relay) context.Context {
	return context.WithValue(ctx, relayKey{}, r)
}

// RelayOf returns the relay for a call made with ctx: the multi round trip
// one a 2026-07-28 call was given, else one to the caller's session.
func RelayOf(ctx context.Context) mcpconn.Relay {
	if r, ok := ctx.Value(relayKey{}).(mcpconn.Relay); ok {
		return r
	}
	return newClientRelay(ctx)
}

// clientRelay passes a provider's requests during a call on to the client
// that made the call, as server-to-client requests on its session.
type clientRelay struct {
	ctx  context.Context // the calling client's request: its session
	srv  *server.MCPServer
	caps *mcp.ClientCapabilities // nil when the session does not say
	// modern: a 2026-07-28 request without a multi round trip relay, which
	// can only refuse.
	modern bool
	// stream is the call's own stream, for a call the gateway runs itself
	// (stream.go); nil on mcp-go's path, where mcp-go writes it.
	stream *CallStream
}

var _ mcpconn.Relay = clientRelay{}

func newClientRelay(ctx context.Context) mcpconn.Relay {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		// It only refuses, so it needs no server (a direct call has none:
		// calls.go).
		r := clientRelay{ctx: ctx, modern: true, caps: info.ClientCapabilities}
		if r.caps == nil {
			r.caps = &mcp.ClientCapabilities{}
		}
		return r
	}
	r := clientRelay{ctx: ctx, srv: server.ServerFromContext(ctx)}
	if d, ok := ctx.Value(directKey{}).(directCall); ok {
		// A call the gateway runs itself on a session (gateway/calls.go).
		r.srv, r.stream = d.srv, d.stream
	}
	if r.srv == nil {
		return nil
	}
	if session, told := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); told {
		caps := session.GetClientCapabilities()
		r.caps = &caps
	}
	return r
}

func undeclared(what string) error {
	return fmt.Errorf("hangar: the calling client did not declare the %s capability", what)
}

// elicitationDeclared reports whether caps declare the elicitation mode
// of params: URL mode needs elicitation.url; form mode is what a bare
// elicitation: {} means (2025-11-25).
func elicitationDeclared(caps *mcp.ClientCapabilities, params mcp.ElicitationParams) bool {
	if caps.Elicitation == nil {
		return false
	}
	if params.Mode == mcp.ElicitationModeURL {
		return caps.Elicitation.URL != nil
	}
	return caps.Elicitation.Form != nil || caps.Elicitation.URL == nil
}

// elicitationCapability names the capability params needs.
func elicitationCapability(params mcp.ElicitationParams) string {
	if params.Mode == mcp.ElicitationModeURL {
		return "elicitation.url"
	}
	return "elicitation"
}

// check refuses what the calling client cannot receive. stream: the
// request goes on the session's GET stream.
// declared is whether the client declared the capability, when it says.
func (r clientRelay) check(declared func(*mcp.ClientCapabilities) bool, what string, stream bool) error {
	if r.caps != nil && !declared(r.caps) {
		return undeclared(what)
	}
	if r.modern {
		return fmt.Errorf("hangar: %s requests cannot be relayed to this 2026-07-28 call", what)
	}
	if open, known := endpoint.Listening(r.ctx); stream && known && !open {
		return errNotListening
	}
	return nil
}

func (r clientRelay) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if err := r.check(func(c *mcp.ClientCapabilities) bool { return c.Sampling != nil }, "sampling", true); err != nil {
		return nil, err
	}
	return r.srv.RequestSampling(r.ctx, req)
}

func (r clientRelay) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	// Elicitation requests go on the call's own response stream: mcp-go
	// writes them there for the calls it runs, the CallStream for a call
	// the gateway runs.
	declared := func(c *mcp.ClientCapabilities) bool { return elicitationDeclared(c, req.Params) }
	if err := r.check(declared, elicitationCapability(req.Params), false); err != nil {
		return nil, err
	}
	if r.stream != nil {
		if err := req.Params.Validate(); err != nil {
			return nil, err
		}
		return r.stream.Elicit(r.ctx, req)
	}
	return r.srv.RequestElicitation(r.ctx, req)
}

func (r clientRelay) ListRoots(_ context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	if err := r.check(func(c *mcp.ClientCapabilities) bool { return c.Roots != nil }, "roots", true); err != nil {
		return nil, err
	}
	return r.srv.RequestRoots(r.ctx, req)
}
