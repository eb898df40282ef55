package frontdoor

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// completion/complete on the front door: mcp-go serves the method and asks
// the front door (its prompt and resource completion provider), which
// forwards the request to the server owning the prompt or resource, under
// the provider's own prompt name. The caller's scopes and servers apply as
// for prompts/get (a prompt it may not see is unknown) and resources/read
// (hangar:call, and a resource outside its servers is refused naming the
// scope).

var (
	_ server.PromptCompletionProvider   = (*FrontDoor)(nil)
	_ server.ResourceCompletionProvider = (*FrontDoor)(nil)
)

// CompletePromptArgument implements server.PromptCompletionProvider: name
// is a callable prompt name.
func (f *FrontDoor) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	f.mu.RLock()
	b := f.view.prompts[name]
	f.mu.RUnlock()
	if b == nil || !f.mayUse(ctx, b.Server) {
		// The words of prompts/get for a prompt not served to this caller.
		return nil, fmt.Errorf("prompt '%s' not found", name)
	}
	if err := f.admit(ctx, string(mcp.MethodCompletionComplete), b.Server, "", b.Tool); err != nil {
		return nil, err
	}
	return f.complete(ctx, b.Server, mcp.PromptReference{Type: "ref/prompt", Name: b.Tool}, arg, cc)
}

// CompleteResourceArgument implements server.ResourceCompletionProvider:
// uri is a resource URI or a URI template.
func (f *FrontDoor) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	owner, ok := f.ownerOf(uri)
	if !ok || !f.serves(ctx, owner) {
		// One answer for a URI nobody serves and one served to others.
		return nil, errResourceNotServed(uri)
	}
	if e := auth.Caller(ctx).Check(auth.MethodScope(string(mcp.MethodCompletionComplete)), ""); e != nil {
		return nil, e
	}
	if err := f.admit(ctx, string(mcp.MethodCompletionComplete), owner, uri, ""); err != nil {
		return nil, err
	}
	return f.complete(ctx, owner, mcp.ResourceReference{Type: "ref/resource", URI: uri}, arg, cc)
}

// errResourceNotServed is the answer for a URI the caller is not served,
// whether or not anyone else is.
func errResourceNotServed(uri string) error {
	return fmt.Errorf("resource '%s' not found: no resource or resource template with that URI is served", uri)
}

// complete forwards completion/complete to owner, which may be started.
func (f *FrontDoor) complete(ctx context.Context, owner string, ref any, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	var out *mcp.Completion
	err := f.src.Extras(ctx, owner, true, func(ctx context.Context, b provider.Extras) error {
		var err error
		out, err = b.Complete(ctx, ref, arg, cc)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("completion/complete from %s: %w", owner, err)
	}
	return out, nil
}
