package integration

// The catalog through a whole gateway: discovered containers against
// reserved group IDs, and the health check before a candidate is offered.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/discovery"
)

// discoveredEntry is name's entry in hangar_discovered, nil if none.
func discoveredEntry(t *testing.T, s *session, name string) map[string]any {
	t.Helper()
	for _, e := range s.mustCall(t, "hangar_discovered", nil)["pending"].([]any) {
		if m := e.(map[string]any); m["name"] == name {
			return m
		}
	}
	return nil
}

// A labelled container whose name is a group member's ID is refused, with
// the reason in hangar_discovered and in hangar_approve's error; it is not
// served, and the member is untouched.
func TestDiscoveryGroupMemberCollisionRefused(t *testing.T) {
	cli := discClient(t)
	member := discName("disc-member")
	g := startGateway(t, fmt.Sprintf(`
mcp_servers:
  pool:
    mode: group
    members:
      - {id: %s, mode: docker, image: mcp-hangar/testkit:dev}
discovery:
  enabled: true
  auto_register: true
  sources: [{type: docker, mode: additive}]
data_dir: %s
`, member, t.TempDir()))
	s := connect(t, g.MCPURL)

	id := discContainer(t, cli, member, map[string]string{
		discovery.LabelEnabled: "true", discovery.LabelName: member,
	}, false, "--transport", "http", "--port", "8080", "--path", "/mcp")
	discStart(t, cli, id)

	var e map[string]any
	discWait(t, 20*time.Second, "collision listed in hangar_discovered", func() bool {
		e = discoveredEntry(t, s, member)
		return e != nil
	})
	want := "mcp server id " + member + " is reserved: it is a member of group pool"
	if e["status"] != "refused" || e["reason"] != want {
		t.Errorf("hangar_discovered entry = %v, want status refused, reason %q", e, want)
	}
	r := s.mustCall(t, "hangar_approve", map[string]any{"mcp_server": member})
	if r["approved"] != false || !strings.Contains(str(r, "error"), want) {
		t.Errorf("hangar_approve = %v", r)
	}
	// The ID is still the member's: cold, the group's, no container of its own.
	d := s.mustCall(t, "hangar_details", map[string]any{"mcp_server": member})
	if d["state"] != "cold" || d["mode"] != "docker" {
		t.Errorf("hangar_details(%s) = %v, want the cold docker member", member, d)
	}
	for _, srv := range s.mustCall(t, "hangar_list", nil)["mcp_servers"].([]any) {
		if srv.(map[string]any)["mcp_server"] == member {
			t.Errorf("hangar_list serves the refused container: %v", srv)
		}
	}
}

// Without auto_register, a candidate is checked before it is offered: one
// that answers MCP is pending, one whose declared port does not answer is
// quarantined with the reason.
func TestDiscoveryPendingHandshakeFailsQuarantined(t *testing.T) {
	cli := discClient(t)
	g := startGateway(t, fmt.Sprintf(`
discovery:
  enabled: true
  auto_register: false
  sources: [{type: docker, mode: additive}]
data_dir: %s
`, t.TempDir()))
	s := connect(t, g.MCPURL)

	ok, broken := discName("disc-precheck-ok"), discName("disc-precheck-broken")
	okID := discContainer(t, cli, ok, map[string]string{discovery.LabelEnabled: "true", discovery.LabelName: ok},
		false, "--transport", "http", "--port", "8080")
	// The labels point at a port nothing listens on.
	brokenID := discContainer(t, cli, broken, map[string]string{
		discovery.LabelEnabled: "true", discovery.LabelName: broken, discovery.LabelPort: "9",
	}, false, "--transport", "http", "--port", "8080")
	discStart(t, cli, okID)
	discStart(t, cli, brokenID)

	var q map[string]any
	discWait(t, 60*time.Second, "broken candidate quarantined", func() bool {
		for _, e := range s.mustCall(t, "hangar_quarantine", nil)["quarantined"].([]any) {
			if m := e.(map[string]any); m["name"] == broken {
				q = m
				return true
			}
		}
		return false
	})
	if r := str(q, "reason"); !strings.HasPrefix(r, "health_check_failed: ") || !strings.Contains(r, ":9/mcp") {
		t.Errorf("quarantine reason %q, want health_check_failed naming the declared endpoint", r)
	}
	if q["source"] != "docker" || q["quarantine_time"] == nil {
		t.Errorf("quarantine entry %v", q)
	}
	if discoveredEntry(t, s, broken) != nil {
		t.Error("the quarantined candidate is also pending")
	}
	discWait(t, 60*time.Second, "healthy candidate pending", func() bool {
		e := discoveredEntry(t, s, ok)
		return e != nil && e["status"] == "pending"
	})
	// Offered, not registered.
	if d, isErr, _ := s.call(t, "hangar_details", map[string]any{"mcp_server": ok}); !isErr {
		t.Errorf("a pending candidate is served: %v", d)
	}
}

// A hot-load whose ID is a group's is refused, and the hangar_load answer
// says which group holds it; nothing is started.
func TestHotloadGroupIDRefused(t *testing.T) {
	catalog := hotloadCatalog()
	g := startGateway(t, fmt.Sprintf(`
mcp_servers:
  testkit:
    mode: group
    members:
      - {id: testkit-a, mode: docker, image: mcp-hangar/testkit:dev}
registry:
  url: ""
  catalog_file: %q
  verified_namespaces: ["io.github.mcp-hangar/"]
`, catalog))
	s := connect(t, g.MCPURL)

	ans := s.mustCall(t, "hangar_load", map[string]any{"name": "io.github.mcp-hangar/testkit"})
	if str(ans, "status") != "failed" || !strings.Contains(str(ans, "message"), "mcp server id testkit is reserved: it is the id of group testkit") {
		t.Errorf("hangar_load = %v, want failed naming the group", ans)
	}
	if rt := runtimeServers(t, s.mustCall(t, "hangar_list", nil)); len(rt) != 0 {
		t.Errorf("runtime_mcp_servers = %v, want none", rt)
	}
	if n := countContainers(t, g.Instance, ""); n != 0 {
		t.Errorf("%d containers after a refused load, want 0", n)
	}
}
