package frontdoor

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// A provider's result goes back to the client as the provider wrote it.
// mcp-go's CallToolResult re-encodes what it decoded, which turns large
// integers in _meta into floats and drops content types it does not know;
// so each part is carried as raw JSON through the types mcp-go marshals.

// rawContent is one content item kept as its raw JSON, never decoded:
// it only goes out. Embedding the interface (nil) makes it an mcp.Content,
// whose method set is closed and never called.
type rawContent struct {
	mcp.Content
	raw json.RawMessage
}

func (c rawContent) MarshalJSON() ([]byte, error) { return c.raw, nil }

// rawResult turns a raw tools/call result into a CallToolResult that
// encodes to the same JSON, field by field. It is the one decode of a
// forwarded result (mcpconn hands the client a stand-in, tap.go).
func rawResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var fields struct {
		Meta              json.RawMessage   `json:"_meta"`
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
		IsError           bool              `json:"isError"`
	}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	res := &mcp.CallToolResult{IsError: fields.IsError, Content: make([]mcp.Content, 0, len(fields.Content))}
	for _, c := range fields.Content {
		res.Content = append(res.Content, rawContent{raw: c})
	}
	if len(fields.StructuredContent) > 0 && string(fields.StructuredContent) != "null" {
		res.RawStructuredContent = fields.StructuredContent
		res.StructuredContent = fields.StructuredContent
	}
	if len(fields.Meta) > 0 && string(fields.Meta) != "null" {
		res.Meta = rawMeta(fields.Meta)
	}
	return res, nil
}

// rawMeta keeps each _meta field as raw JSON; nil when raw is not an
// object.
func rawMeta(raw json.RawMessage) *mcp.Meta {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil
	}
	meta := &mcp.Meta{AdditionalFields: make(map[string]any, len(m))}
	for k, v := range m {
		if k == "progressToken" {
			meta.ProgressToken = v
			continue
		}
		meta.AdditionalFields[k] = v
	}
	return meta
}
