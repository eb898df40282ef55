package telemetry

import "github.com/mark3labs/mcp-go/mcp"

// MethodOther is the mcp.method.name of a JSON-RPC method the protocol
// does not define: a caller chooses method names, and each distinct one
// would otherwise become a new metric series (and span name) that nothing
// bounds.
const MethodOther = "_OTHER"

// methods are the JSON-RPC methods of MCP (both protocol versions the
// gateway speaks) and of seed 003's management protocol: the only values
// mcp.method.name takes besides MethodOther.
var methods = func() map[string]bool {
	m := map[string]bool{}
	for _, name := range []mcp.MCPMethod{
		mcp.MethodInitialize, mcp.MethodPing,
		mcp.MethodResourcesList, mcp.MethodResourcesTemplatesList, mcp.MethodResourcesRead,
		mcp.MethodResourcesSubscribe, mcp.MethodResourcesUnsubscribe,
		mcp.MethodPromptsList, mcp.MethodPromptsGet,
		mcp.MethodToolsList, mcp.MethodToolsCall,
		mcp.MethodSetLogLevel, mcp.MethodElicitationCreate, mcp.MethodListRoots,
		mcp.MethodSamplingCreateMessage, mcp.MethodCompletionComplete,
		mcp.MethodTasksGet, mcp.MethodTasksList, mcp.MethodTasksResult, mcp.MethodTasksCancel,
		mcp.MethodServerDiscover, mcp.MethodSubscriptionsListen,
		mcp.MethodNotificationInitialized, mcp.MethodNotificationCancelled,
		mcp.MethodNotificationProgress, mcp.MethodNotificationMessage,
		mcp.MethodNotificationElicitationComplete,
	} {
		m[string(name)] = true
	}
	for _, name := range []string{
		mcp.MethodNotificationResourcesListChanged, mcp.MethodNotificationResourceUpdated,
		mcp.MethodNotificationPromptsListChanged, mcp.MethodNotificationToolsListChanged,
		mcp.MethodNotificationRootsListChanged, mcp.MethodNotificationTasksStatus,
		mcp.MethodNotificationSubscriptionsAcknowledged,
		// Seed 003 (package manage names them; its test checks they are
		// all here).
		"mcp/list", "mcp/install", "mcp/policy/set", "mcp/server/restart", "mcp/uninstall",
		"mcp/server/details", "mcp/changed", "mcp/server/status_changed", "mcp/server/catalog_changed",
	} {
		m[name] = true
	}
	return m
}()

// MethodName is method as mcp.method.name (a span's name, a metric's
// label): method itself when the protocol defines it, else MethodOther.
func MethodName(method string) string {
	if methods[method] {
		return method
	}
	return MethodOther
}
