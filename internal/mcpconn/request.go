package mcpconn

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
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
	if _, err := c.c.ReadResource(withRawSink(ctx, &raw), req); err != nil && len(raw) == 0 {
		return nil, err
	}
	return raw, nil
}

// GetPrompt gets a prompt and returns the raw result.
func (c *Conn) GetPrompt(ctx context.Context, name string, args map[string]string) (json.RawMessage, error) {
	var raw json.RawMessage
	req := mcp.GetPromptRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	if _, err := c.c.GetPrompt(withRawSink(ctx, &raw), req); err != nil && len(raw) == 0 {
		return nil, err
	}
	return raw, nil
}
