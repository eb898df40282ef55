package auth

import (
	"encoding/json"
	"slices"
	"testing"
)

// The guard reads a call's targets as the tool does: keys exactly, every
// target key, every name of a list.
func TestRawTargets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw  string
		want []string
	}{
		{`{"mcp_server":"a"}`, []string{"a"}},
		{`{"group":"g","mcp_server":"a"}`, []string{"a", "g"}},
		{`{"mcp_servers":" a, b ,,c"}`, []string{"a", "b", "c"}},
		{`{"mcp_server":"secret","Mcp_Server":"a"}`, []string{"secret"}},
		{`{"MCP_SERVER":"a"}`, nil},
		{`{"mcp_server":7}`, nil},
		{`{"calls":[{"mcp_server":"x"}]}`, nil},
		{`not json`, nil},
	}
	for _, tt := range tests {
		if got := RawTargets(json.RawMessage(tt.raw)); !slices.Equal(got, tt.want) {
			t.Errorf("RawTargets(%s) = %v, want %v", tt.raw, got, tt.want)
		}
	}
}
