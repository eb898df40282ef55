package mcpconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// What the front door forwards besides tools: the provider's resources,
// resource templates and prompts, listed and used as raw JSON so that
// nothing the provider sends is lost in mcp-go's types.

// Catalog kinds, as the list results name their arrays.
const (
	KindResources         = "resources"
	KindResourceTemplates = "resourceTemplates"
	KindPrompts           = "prompts"
)

// ListAll fetches every page of the list of kind and returns its items raw.
// A provider that does not offer kind has none.
func (c *Conn) ListAll(ctx context.Context, kind string) ([]json.RawMessage, error) {
	caps := c.c.GetServerCapabilities()
	switch kind {
	case KindResources, KindResourceTemplates:
		if caps.Resources == nil {
			return nil, nil
		}
	case KindPrompts:
		if caps.Prompts == nil {
			return nil, nil
		}
	default:
		return nil, fmt.Errorf("list %s: unknown kind", kind)
	}
	var out []json.RawMessage
	var cursor mcp.Cursor
	for range maxToolPages {
		var raw json.RawMessage
		rctx := withRawSink(ctx, &raw)
		var next mcp.Cursor
		var err error
		switch kind {
		case KindResources:
			req := mcp.ListResourcesRequest{}
			req.Params.Cursor = cursor
			var res *mcp.ListResourcesResult
			if res, err = c.c.ListResourcesByPage(rctx, req); err == nil {
				next = res.NextCursor
			}
		case KindResourceTemplates:
			req := mcp.ListResourceTemplatesRequest{}
			req.Params.Cursor = cursor
			var res *mcp.ListResourceTemplatesResult
			if res, err = c.c.ListResourceTemplatesByPage(rctx, req); err == nil {
				next = res.NextCursor
			}
		case KindPrompts:
			req := mcp.ListPromptsRequest{}
			req.Params.Cursor = cursor
			var res *mcp.ListPromptsResult
			if res, err = c.c.ListPromptsByPage(rctx, req); err == nil {
				next = res.NextCursor
			}
		}
		if err != nil {
			return nil, err
		}
		// Other fields of the result (ttl, _meta, nextCursor) are not
		// items.
		var page map[string]json.RawMessage
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("decode %s list: %w", kind, err)
		}
		if len(page[kind]) > 0 {
			if err := json.Unmarshal(page[kind], &items); err != nil {
				return nil, fmt.Errorf("decode %s list: %w", kind, err)
			}
		}
		out = append(out, items...)
		if next == "" {
			return out, nil
		}
		cursor = next
	}
	return nil, fmt.Errorf("list %s: more than %d pages", kind, maxToolPages)
}

// ReadResource reads uri and returns the raw result.
func (c *Conn) ReadResource(ctx context.Context, uri string) (json.RawMessage, error) {
	var raw json.RawMessage
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	ctx, op := telemetry.StartRequest(ctx, string(mcp.MethodResourcesRead), "", uri)
	req.Params.Meta = traceMeta(ctx, req.Params.Meta)
	_, err := c.c.ReadResource(withRawSink(ctx, &raw), req)
	if err != nil && len(raw) == 0 {
		op.EndRequest(err)
		return nil, err
	}
	op.EndRequest(nil)
	return raw, nil
}

// GetPrompt gets a prompt and returns the raw result.
func (c *Conn) GetPrompt(ctx context.Context, name string, args map[string]string) (json.RawMessage, error) {
	var raw json.RawMessage
	req := mcp.GetPromptRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	ctx, op := telemetry.StartRequest(ctx, string(mcp.MethodPromptsGet), name, "")
	req.Params.Meta = traceMeta(ctx, req.Params.Meta)
	_, err := c.c.GetPrompt(withRawSink(ctx, &raw), req)
	if err != nil && len(raw) == 0 {
		op.EndRequest(err)
		return nil, err
	}
	op.EndRequest(nil)
	return raw, nil
}

// Complete asks the provider for completions of a prompt argument (ref an
// mcp.PromptReference) or a resource template argument (an
// mcp.ResourceReference). A provider that does not offer completions has
// none to give: the answer is an empty list, not an error.
func (c *Conn) Complete(ctx context.Context, ref any, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	if c.c.GetServerCapabilities().Completions == nil {
		return &mcp.Completion{Values: []string{}}, nil
	}
	req := mcp.CompleteRequest{}
	req.Params.Ref = ref
	req.Params.Argument = arg
	req.Params.Context = cc
	res, err := c.c.Complete(ctx, req)
	if err != nil {
		return nil, err
	}
	return &res.Completion, nil
}

// ErrNoSubscriptions says the provider does not offer resource
// subscriptions.
var ErrNoSubscriptions = errors.New("this mcp server does not offer resource subscriptions")

// Subscribe asks the provider for notifications/resources/updated of uri;
// each one's params go to updated, which runs on the connection's read
// loop: it must not block, nor call the provider. Subscribing uri again
// replaces updated.
func (c *Conn) Subscribe(ctx context.Context, uri string, updated func(params map[string]any)) error {
	caps := c.c.GetServerCapabilities()
	if caps.Resources == nil || !caps.Resources.Subscribe {
		return ErrNoSubscriptions
	}
	if mcp.IsModernProtocol(c.proto) {
		// 2026-07-28 moved subscriptions into a subscriptions/listen
		// stream, which the gateway does not hold open to providers.
		return fmt.Errorf("%w on a %s session (resources/subscribe was removed from that protocol)", ErrNoSubscriptions, c.proto)
	}
	// Before the request: the first update may come right after the answer.
	c.updates.set(uri, updated)
	req := mcp.SubscribeRequest{}
	req.Params.URI = uri
	if err := c.c.Subscribe(ctx, req); err != nil {
		c.updates.set(uri, nil)
		return err
	}
	return nil
}

// Unsubscribe ends the subscription to uri; its updates stop at once.
func (c *Conn) Unsubscribe(ctx context.Context, uri string) error {
	c.updates.set(uri, nil)
	req := mcp.UnsubscribeRequest{}
	req.Params.URI = uri
	return c.c.Unsubscribe(ctx, req)
}

// updateRouter passes the provider's notifications/resources/updated on
// to the subscriber of their URI.
type updateRouter struct {
	mu    sync.Mutex
	byURI map[string]func(map[string]any)
}

func (r *updateRouter) set(uri string, f func(map[string]any)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f == nil {
		delete(r.byURI, uri)
		return
	}
	if r.byURI == nil {
		r.byURI = map[string]func(map[string]any){}
	}
	r.byURI[uri] = f
}

// dispatch is a client notification handler.
func (r *updateRouter) dispatch(n mcp.JSONRPCNotification) {
	if n.Method != mcp.MethodNotificationResourceUpdated {
		return
	}
	uri, _ := n.Params.AdditionalFields["uri"].(string)
	r.mu.Lock()
	f := r.byURI[uri]
	r.mu.Unlock()
	if f == nil {
		return
	}
	params := make(map[string]any, len(n.Params.AdditionalFields)+1)
	for k, v := range n.Params.AdditionalFields {
		params[k] = v
	}
	if len(n.Params.Meta) > 0 {
		params["_meta"] = n.Params.Meta
	}
	f(params)
}
