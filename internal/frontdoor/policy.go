package frontdoor

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// What the front door does for the gateway's policy (internal/policy):
// it names what a request reaches (the binding of a callable name, the
// owner of a URI or a prompt), asks the gateway's decision before a read,
// get, completion or subscription reaches a provider (Admit), and keys
// its cached listings by the caller's view of the policy (View), which
// hides tools no call of the caller could pass.

// Annotations are the annotations of the tool b calls, as its server
// lists them (raw JSON; nil when none).
func (b *Binding) Annotations() json.RawMessage {
	if b == nil || b.def == nil {
		return nil
	}
	return b.def.Annotations
}

// Bound is the binding of server's raw tool, nil when it has no callable
// name.
func (f *FrontDoor) Bound(server, tool string) *Binding {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, b := range f.byServer[server] {
		if b.Tool == tool {
			return b
		}
	}
	return nil
}

// OwnerOf is the server that serves uri on the front door (a listed
// resource, or the first template it matches), as resources/read finds it.
func (f *FrontDoor) OwnerOf(uri string) (string, bool) { return f.ownerOf(uri) }

// PromptOf is the server and raw name of the prompt listed as name.
func (f *FrontDoor) PromptOf(name string) (server, raw string, ok bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	b := f.view.prompts[name]
	if b == nil {
		return "", "", false
	}
	return b.Server, b.Tool, true
}

// admit asks the gateway's decision on a use of server that is not a
// tool call (resources/read, prompts/get, completion/complete,
// resources/subscribe): nil lets it through.
func (f *FrontDoor) admit(ctx context.Context, method, server, uri, prompt string) error {
	if f.Admit == nil {
		return nil
	}
	return f.Admit(ctx, Use{Method: method, Server: server, URI: uri, Prompt: prompt})
}

// Use is one use of a server the policy decides, besides a tool call.
type Use struct {
	Method string // resources/read, prompts/get, completion/complete, resources/subscribe
	Server string
	// URI is the resource's (or template's) URI; Prompt the prompt's raw
	// name on its server.
	URI, Prompt string
}

// PolicyChanged tells every client that its tools may have changed: a new
// policy hides other tools. The listings kept need no dropping: their
// keys hold the policy's view (View), which a change of the policy
// changes. It takes no lock of the front door's, so that the catalog may
// call it while it applies a change.
func (f *FrontDoor) PolicyChanged() {
	if srv := f.mcp.Load(); srv != nil {
		srv.SendNotificationToAllClients(mcp.MethodNotificationToolsListChanged, nil)
	}
}
