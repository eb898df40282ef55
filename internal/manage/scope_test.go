package manage_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/manage"
)

// TestManagementRefusalsAudited: a management request about a server
// outside the caller's filter is refused with seed 004's -32002 naming the
// server, alike whether it exists or not, and audited allowed=false with
// the reason (an install of such a name too).
func TestManagementRefusalsAudited(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.install(`{"mcpServers": {"theirs": {"url": "http://h/mcp"}}}`, nil)
	tests := []struct {
		method string
		params map[string]any
		server string
	}{
		{manage.MethodDetails, map[string]any{"server_id": "theirs"}, "theirs"},
		{manage.MethodPolicySet, map[string]any{"name": "theirs", "enabled": false}, "theirs"},
		{manage.MethodRestart, map[string]any{"name": "theirs"}, "theirs"},
		{manage.MethodUninstall, map[string]any{"name": "theirs"}, "theirs"},
		{manage.MethodDetails, map[string]any{"server_id": "nosuch"}, "nosuch"},
	}
	for _, tt := range tests {
		r := h.rpcAs("filtered", tt.method, tt.params)
		want := "Token missing required scope: server:" + tt.server
		if r.Error == nil || r.Error.Code != auth.CodeInsufficientScope || r.Error.Message != want {
			t.Errorf("%s %v: %s, want -32002 %q", tt.method, tt.params, r.Raw, want)
		}
		if !refusedIn(t, h, tt.server, tt.method, "forbidden: "+want) {
			t.Errorf("%s %v: no audit entry of the refusal", tt.method, tt.params)
		}
	}
	exists := h.rpcAs("filtered", manage.MethodDetails, map[string]any{"server_id": "theirs"})
	missing := h.rpcAs("filtered", manage.MethodDetails, map[string]any{"server_id": "zz"})
	if strings.ReplaceAll(exists.Raw, "theirs", "X") != strings.ReplaceAll(missing.Raw, "zz", "X") {
		t.Errorf("refusals differ for a server that exists and one that does not:\n%s\n%s", exists.Raw, missing.Raw)
	}
	r := h.rpcAs("filtered", manage.MethodInstall, map[string]any{"config_json": `{"mcpServers": {"other-name": {"url": "http://h/mcp"}}}`})
	if r.Error != nil || r.Result["status"] != "validation_error" {
		t.Fatalf("install outside the filter: %s", r.Raw)
	}
	if !refusedIn(t, h, "other-name", manage.MethodInstall, "forbidden: Token missing required scope: server:other-name") {
		t.Error("the install outside the filter was not audited as a refusal")
	}
	// Still there: the refusals changed nothing.
	if item(t, h.rpc(manage.MethodList, nil), "theirs") == nil {
		t.Error("theirs is gone")
	}
}

// refusedIn reports whether server's audit trail holds a refusal of
// action with reason by the filtered identity.
func refusedIn(t *testing.T, h *harness, server, action, reason string) bool {
	t.Helper()
	es, err := h.Store.RecentAudit(context.Background(), server, 50)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Action == action && !e.Allowed && e.Reason == reason && e.Identity == "filtered" && e.Outcome == "denied" {
			return true
		}
	}
	return false
}
