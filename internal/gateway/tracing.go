package gateway

import (
	"context"
	"net"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// traceRequests starts the SERVER span of each MCP request on /mcp, after
// the envelope check (which read the method, id and params) and before
// the scope guard, so a refusal is a span with its error too. With OTLP
// off (metrics only) the operation is a start time and an error type.
func (g *Gateway) traceRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := g.Telemetry
		env, ok := endpoint.RequestEnvelope(r.Context())
		if t == nil || !ok || env.Kind != endpoint.KindRequest {
			next.ServeHTTP(w, r)
			return
		}
		version := r.Header.Get(mcp.HeaderProtocolVersion)
		if version == "" {
			version = env.MetaProtocolVersion()
		}
		client, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			client = r.RemoteAddr
		}
		ctx, op := t.StartServer(r.Context(), telemetry.ServerRequest{
			Method: env.Method, Params: env.Params, ID: env.ID, ProtocolVersion: version,
			SessionID: r.Header.Get(server.HeaderKeySessionID), ClientAddress: client,
			Transport: telemetry.TransportTCP, Header: r.Header, Identity: auth.Caller(r.Context()).Name,
		})
		defer op.End()
		next.ServeHTTP(telemetry.WatchResponse(w, op), r.WithContext(ctx))
	})
}

// tracedChain puts the telemetry middleware outermost in the tool chain,
// when telemetry is on: it sees every outcome, a recovered panic too.
func (g *Gateway) tracedChain(ms []server.ToolHandlerMiddleware) []server.ToolHandlerMiddleware {
	if g.Telemetry == nil {
		return ms
	}
	identity := func(ctx context.Context) string { return auth.Caller(ctx).Name }
	return append([]server.ToolHandlerMiddleware{g.Telemetry.ToolMiddleware(identity)}, ms...)
}

// traceTarget notes on the SERVER span which provider or group a call by
// name went to (a hangar_call batch's calls say it on their own CLIENT
// spans), and marks a group's context so the member's span names it.
func traceTarget(ctx context.Context, action, id string, group bool) context.Context {
	if action != audit.ActionHangarCall {
		telemetry.ServerOp(ctx).Target(id, group)
	}
	if group {
		return telemetry.WithGroup(ctx, id)
	}
	return ctx
}
