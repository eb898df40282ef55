package auth

import "strings"

// toolScopes is the scope each hangar_* tool needs (issue 10). A hangar_*
// tool missing here needs hangar:admin: new tools fail closed until
// someone decides they are safe for less.
var toolScopes = map[string]string{
	"hangar_list":                ScopeRead,
	"hangar_status":              ScopeRead,
	"hangar_details":             ScopeRead,
	"hangar_tools":               ScopeRead,
	"hangar_health":              ScopeRead,
	"hangar_metrics":             ScopeRead,
	"hangar_discovered":          ScopeRead,
	"hangar_quarantine":          ScopeRead,
	"hangar_sources":             ScopeRead,
	"hangar_group_list":          ScopeRead,
	"hangar_find_tools":          ScopeRead,
	"hangar_call":                ScopeCall,
	"hangar_fetch_continuation":  ScopeCall,
	"hangar_delete_continuation": ScopeCall,
	"hangar_start":               ScopeAdmin,
	"hangar_stop":                ScopeAdmin,
	"hangar_warm":                ScopeAdmin,
	"hangar_reload_config":       ScopeAdmin,
	"hangar_load":                ScopeAdmin,
	"hangar_unload":              ScopeAdmin,
	"hangar_discover":            ScopeAdmin,
	"hangar_approve":             ScopeAdmin,
	"hangar_group_rebalance":     ScopeAdmin,
}

// GatewayTool reports whether name is one of the gateway's own tools
// (hangar_*), not a provider's tool on the front door.
func GatewayTool(name string) bool { return strings.HasPrefix(name, "hangar_") }

// ToolScope is the scope a tool needs. Provider tools (the front door's
// <server>__<tool>, anything not starting with "hangar_") need hangar:call;
// the caller also checks MayReach for the tool's provider.
func ToolScope(name string) string {
	if s, ok := toolScopes[name]; ok {
		return s
	}
	if GatewayTool(name) {
		return ScopeAdmin
	}
	return ScopeCall
}

// methodScopes are the JSON-RPC methods that need a scope before mcp-go
// sees them. tools/list and prompts/list need none: their answers are
// filtered per identity. tools/call needs the scope of its tool.
var methodScopes = map[string]string{
	"initialize":               "",
	"ping":                     "",
	"server/discover":          "",
	"subscriptions/listen":     "",
	"logging/setLevel":         "",
	"tools/list":               "",
	"prompts/list":             "",
	"resources/list":           ScopeRead,
	"resources/templates/list": ScopeRead,
	"resources/subscribe":      ScopeRead,
	"resources/unsubscribe":    ScopeRead,
	"resources/read":           ScopeCall,
	"prompts/get":              ScopeCall,
	"completion/complete":      ScopeCall,
	"tools/call":               ScopeCall,
	// Seed 003: reading needs hangar:read, every other mcp/* method
	// hangar:admin, but the one that drops the caller's own credential.
	"mcp/list":           ScopeRead,
	"mcp/server/details": ScopeRead,
	// The caller's own upstream credential: what uses it may drop it.
	"mcp/server/disconnect": ScopeCall,
}

// MethodScope is the scope a JSON-RPC method needs ("" for none).
// Notifications need none; the management methods (mcp/*) but the two
// that read, and any method not known here, need hangar:admin (fail
// closed).
func MethodScope(method string) string {
	if s, ok := methodScopes[method]; ok {
		return s
	}
	if strings.HasPrefix(method, "notifications/") {
		return ""
	}
	if strings.HasPrefix(method, "tasks/") {
		return ScopeCall
	}
	return ScopeAdmin
}

// Check reports the refusal for an identity using a tool on a provider
// (server "" when the tool is not bound to one), or nil.
func (id Identity) Check(scope, server string) *Error {
	if scope != "" && !id.Has(scope) {
		return MissingScope(scope)
	}
	if server != "" && !id.MayReach(server) {
		return MissingScope(ServerScope(server))
	}
	return nil
}
