package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/endpoint"
)

// toolServer is the provider or group a front-door tool is bound to (the
// front door's binding: a prefix or a hash suffix may hide it in the
// name), "" for hangar_* tools (whose target is an argument) and for a
// name nothing is bound to.
func (g *Gateway) toolServer(name string) string {
	if auth.GatewayTool(name) || g.FrontDoor == nil {
		return ""
	}
	if b := g.FrontDoor.Binding(name); b != nil {
		return b.Server
	}
	return ""
}

// actedOn is the provider or group a hangar_* call acts on, for the audit:
// the argument the tool itself reads (a group for hangar_group_rebalance,
// whatever else the call names). "" for tools without one target.
func actedOn(tool string, args any) string {
	m, _ := args.(map[string]any)
	key := "mcp_server"
	if tool == "hangar_group_rebalance" {
		key = "group"
	}
	s, _ := m[key].(string)
	return s
}

// mayCall is the tool filter: a tool the caller may not call is not
// listed, and a call of it is refused as of an unknown tool. Front-door
// tools are filtered per server by the front door (FrontDoor.visible).
func mayCall(ctx context.Context, t mcp.Tool) bool {
	return auth.Caller(ctx).Check(auth.ToolScope(t.Name), "") == nil
}

// authorize is the tool-handler middleware that refuses a call outside the
// caller's scopes or servers. On HTTP the guard below has already
// answered such a call with a JSON-RPC error; this is the second line, for
// every other way in.
func authorize(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if e := auth.CheckTool(auth.Caller(ctx), req.Params.Name, req.Params.Arguments); e != nil {
			return mcp.NewToolResultError(e.Message), nil
		}
		return next(ctx, req)
	}
}

// reachable is the caller's server filter, for answers that list servers.
func reachable(ctx context.Context) func(id string) bool { return auth.Caller(ctx).MayReach }

// hotLoadFor is g.HotLoad as the caller sees it: hot-loaded servers
// outside its filter are not listed.
func (g *Gateway) hotLoadFor(ctx context.Context) HotLoader {
	id := auth.Caller(ctx)
	if g.HotLoad == nil || len(id.Servers) == 0 {
		return g.HotLoad
	}
	return visibleHotLoader{g.HotLoad, id}
}

type visibleHotLoader struct {
	HotLoader
	id auth.Identity
}

func (v visibleHotLoader) Runtime() []RuntimeServer {
	var out []RuntimeServer
	for _, r := range v.HotLoader.Runtime() {
		if v.id.MayReach(r.ID) {
			out = append(out, r)
		}
	}
	return out
}

// hideUnserved answers resources/read of a URI whose server the caller is
// not served (outside its servers, quarantined, disabled) exactly as
// mcp-go answers a URI nobody serves, before mcp-go sees it: an error
// from the resource handler would carry another code (-32603), and the
// difference would tell a caller that the URI exists.
func (g *Gateway) unservedResource(w http.ResponseWriter, r *http.Request) bool {
	{
		env, ok := endpoint.RequestEnvelope(r.Context())
		if !ok || env.Method != string(mcp.MethodResourcesRead) || env.Kind != endpoint.KindRequest {
			return false
		}
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(env.Params, &p) != nil || p.URI == "" || !g.FrontDoor.UnservedURI(r.Context(), p.URI) {
			return false // mcp-go answers what is malformed
		}
		code := mcp.RESOURCE_NOT_FOUND
		if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || mcp.IsModernProtocol(env.MetaProtocolVersion()) {
			code = mcp.INVALID_PARAMS // 2026-07-28, as mcp-go's resourceNotFoundCode
		}
		auth.WriteError(w, http.StatusOK, auth.ScalarID(env.ID), &auth.Error{Code: code,
			Message: fmt.Sprintf("handler not found for resource URI '%s': %v", p.URI, server.ErrResourceNotFound)})
		return true
	}
}
