package frontdoor

import (
	"encoding/json"
	"testing"

	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

// TestValidHeaderAnnotations: the shortcut skips only schemas that cannot
// spell x-mcp-header; everything else gets mcp-go's verdict, which
// SetTools would otherwise give as a panic.
func TestValidHeaderAnnotations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema string
		bad          bool
	}{
		{"no annotation", `{"type":"object","properties":{"a":{"type":"number"}}}`, false},
		{"no schema", ``, false},
		{"a good annotation", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`, false},
		{"on an object", `{"type":"object","properties":{"o":{"type":"object","x-mcp-header":"O"}}}`, true},
		{"an empty header", `{"type":"object","properties":{"s":{"type":"string","x-mcp-header":""}}}`, true},
		{"its name escaped", `{"type":"object","properties":{"o":{"type":"object","x\u002dmcp-header":"O"}}}`, true},
		{"nested", `{"type":"object","properties":{"p":{"type":"object","properties":{"o":{"type":"array","x-mcp-header":"O"}}}}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tool := toMCPTool("s__t", mcpconn.Tool{Name: "t", InputSchema: json.RawMessage(tt.schema)})
			if err := validHeaderAnnotations(&tool); (err != nil) != tt.bad {
				t.Errorf("error %v, want one: %v", err, tt.bad)
			}
		})
	}
}
