package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDetailsShowRecentAudit: hangar_details lists the server's newest
// audit entries (at most 20, newest first) and never an argument value.
func TestDetailsShowRecentAudit(t *testing.T) {
	t.Parallel()
	h := newPinHarness(t, server("s"), server("other"))
	for range 22 {
		h.ok(t, "hangar_call", map[string]any{"calls": []any{callEntry("s", "add", map[string]any{"a": 1, "b": 2, "secret": "hunter2"})}})
	}
	h.callAs(t, "agent", "hangar_call", map[string]any{"calls": []any{callEntry("s", "nope", nil)}})
	h.ok(t, "hangar_call", map[string]any{"calls": []any{callEntry("other", "add", nil)}})

	d := h.ok(t, "hangar_details", map[string]any{"mcp_server": "s"})
	entries := list(t, d["recent_audit"])
	if len(entries) != 20 {
		t.Fatalf("recent_audit has %d entries, want 20", len(entries))
	}
	first := obj(t, entries[0])
	if first["tool"] != "nope" || first["identity"] != "agent" || first["action"] != "hangar_call" || first["at"] == nil {
		t.Errorf("newest entry = %v, want the call of nope by agent", first)
	}
	for _, e := range entries {
		if obj(t, e)["tool"] == "other" {
			t.Errorf("another server's entry: %v", e)
		}
	}
	b, _ := json.Marshal(d)
	if strings.Contains(string(b), "hunter2") {
		t.Error("an argument value is in hangar_details")
	}
}
