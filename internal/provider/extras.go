package provider

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/call"
)

// Extras is what a backend serves besides tools: resources, resource
// templates and prompts (as raw MCP JSON), their completions, and
// resource subscriptions. Backends over an MCP connection have it
// (mcpconn.Conn); the front door uses it.
type Extras interface {
	ListAll(ctx context.Context, kind string) ([]json.RawMessage, error)
	ReadResource(ctx context.Context, uri string) (json.RawMessage, error)
	GetPrompt(ctx context.Context, name string, args map[string]string) (json.RawMessage, error)
	// Complete answers completion/complete for ref (an mcp.PromptReference
	// by the provider's own prompt name, or an mcp.ResourceReference).
	Complete(ctx context.Context, ref any, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error)
	// Subscribe asks for notifications/resources/updated of uri, passed to
	// updated (on the connection's read loop: no blocking, no calls back)
	// until Unsubscribe or the backend ends.
	Subscribe(ctx context.Context, uri string, updated func(params map[string]any)) error
	Unsubscribe(ctx context.Context, uri string) error
}

// ErrNoExtras says the backend serves tools only.
var ErrNoExtras = errors.New("this mcp server's backend serves no resources or prompts")

// UseExtras runs f on the provider's backend the way Call runs a tool: it
// waits for the concurrency limits, starts a cold provider, and counts the
// use in flight. A client's resource and prompt requests carry no progress
// token: a start they cause reports to nobody.
func (p *Provider) UseExtras(ctx context.Context, f func(context.Context, Extras) error) error {
	release, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	inst, err := p.Ensure(ctx, call.Progress{}, false, true)
	if err != nil {
		return err
	}
	defer func() {
		p.mu.Lock()
		p.inflight--
		p.lastUsed = p.opts.Now()
		p.mu.Unlock()
	}()
	x, ok := inst.b.(Extras)
	if !ok {
		return ErrNoExtras
	}
	return f(p.withClient(ctx), x)
}

// ExtrasIfRunning runs f on the running backend and never starts one: it
// answers ErrNotRunning when there is none.
func (p *Provider) ExtrasIfRunning(ctx context.Context, f func(context.Context, Extras) error) error {
	p.mu.Lock()
	inst := p.inst
	if inst != nil {
		p.inflight++
	}
	p.mu.Unlock()
	if inst == nil {
		return ErrNotRunning
	}
	defer func() {
		p.mu.Lock()
		p.inflight--
		p.mu.Unlock()
	}()
	x, ok := inst.b.(Extras)
	if !ok {
		return ErrNoExtras
	}
	return f(ctx, x)
}
