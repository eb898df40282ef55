package gateway_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// seedTools is the tool surface of seed 001, and its required parameters.
var seedTools = map[string][]string{
	"hangar_list": nil, "hangar_start": {"mcp_server"}, "hangar_stop": {"mcp_server"},
	"hangar_status": nil, "hangar_reload_config": nil,
	"hangar_load": {"name"}, "hangar_unload": {"mcp_server"},
	"hangar_tools": {"mcp_server"}, "hangar_details": {"mcp_server"}, "hangar_warm": nil,
	"hangar_health": nil, "hangar_metrics": nil,
	"hangar_discover": nil, "hangar_discovered": nil, "hangar_quarantine": nil,
	"hangar_approve": {"mcp_server"}, "hangar_sources": nil,
	"hangar_group_list": nil, "hangar_group_rebalance": {"group"},
	"hangar_call": {"calls"}, "hangar_fetch_continuation": {"continuation_id"},
	"hangar_delete_continuation": {"continuation_id"},
}

// TestToolSurface: exactly the 22 tools of seed 001, each with its required
// parameters, are listed, and every input schema is an object schema.
func TestToolSurface(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, nil)
	res, err := h.c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, tool := range res.Tools {
		got[tool.Name] = true
		want, known := seedTools[tool.Name]
		if !known {
			t.Errorf("tool %s is not in seed 001", tool.Name)
			continue
		}
		var schema struct {
			Type     string   `json:"type"`
			Required []string `json:"required"`
		}
		raw, _ := json.Marshal(tool.InputSchema)
		if len(tool.RawInputSchema) > 0 {
			raw = tool.RawInputSchema
		}
		if err := json.Unmarshal(raw, &schema); err != nil || schema.Type != "object" {
			t.Errorf("%s: input schema %s is not an object schema", tool.Name, raw)
		}
		slices.Sort(schema.Required)
		if !slices.Equal(schema.Required, want) && !(len(want) == 0 && len(schema.Required) == 0) {
			t.Errorf("%s: required = %v, want %v", tool.Name, schema.Required, want)
		}
	}
	for name := range seedTools {
		if !got[name] {
			t.Errorf("tool %s of seed 001 is missing", name)
		}
	}
	if len(res.Tools) != 22 {
		t.Errorf("%d tools listed, want 22", len(res.Tools))
	}
}
