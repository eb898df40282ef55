package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// hotloadCatalog is the registry.catalog_file of the hot-load tests, the
// shared fixture testdata/registry/catalog.json: the testkit image under
// three server.json entries (verified through registry.verified_namespaces),
// one needing a secret that is set, one needing a secret that is not.
func hotloadCatalog() string { return filepath.Join(repoRoot, "testdata", "registry", "catalog.json") }

// hotloadSecret is HANGAR_SECRET_IT_HOTLOAD_TOKEN's value: it must reach
// the container and never appear in an answer.
const hotloadSecret = "s3cret-hotload-value"

// hangar_load and hangar_unload end to end against a catalog file (no
// registry is reachable here): load, call, list, status, unload (the
// container goes), missing secrets, not found.
//
// NOTE: needs the gateway wiring of hot-loading (Gateway.HotLoad, the
// hangar_load/hangar_unload tools, runtime_mcp_servers in hangar_list and
// hangar_status); it fails, saying so, until then.
//
// Not parallel: t.Setenv.
func TestHotLoad(t *testing.T) {
	t.Setenv("HANGAR_SECRET_IT_HOTLOAD_TOKEN", hotloadSecret)
	t.Setenv("IT_HOTLOAD_NEVER_SET", "")
	catalog := hotloadCatalog()
	g := startGateway(t, fmt.Sprintf(`
registry:
  url: ""
  catalog_file: %q
  verified_namespaces: ["io.github.mcp-hangar/"]
  max_hot_loaded: 5
`, catalog))
	s := connect(t, g.MCPURL)
	requireHotloadTools(t, s)

	// Before any load: empty runtime lists, and unloading anything is
	// refused.
	if rt := runtimeServers(t, s.mustCall(t, "hangar_list", nil)); len(rt) != 0 {
		t.Errorf("runtime_mcp_servers before any load = %v", rt)
	}
	if ans := s.mustCall(t, "hangar_unload", map[string]any{"mcp_server": "testkit"}); str(ans, "status") != "not_hot_loaded" {
		t.Errorf("hangar_unload before any load = %v, want not_hot_loaded", ans)
	}

	// Load by the last name segment.
	began := time.Now()
	ans := s.mustCall(t, "hangar_load", map[string]any{"name": "testkit"})
	if str(ans, "status") != "loaded" {
		t.Fatalf("hangar_load(testkit) = %v, want status loaded", ans)
	}
	id := str(ans, "mcp_server")
	if id == "" {
		t.Fatalf("hangar_load answer has no mcp_server: %v", ans)
	}
	tools := stringList(ans["tools"])
	if !slices.Contains(tools, "echo") || !slices.Contains(tools, "env") {
		t.Errorf("hangar_load tools = %v, want echo and env among them", tools)
	}
	t.Logf("loaded %s in %s", id, time.Since(began).Round(time.Millisecond))
	if n := countContainers(t, g.Instance, id); n != 1 {
		t.Errorf("%d containers for %s after hangar_load, want 1 (started)", n, id)
	}

	// Its tools work through hangar_call; the env default reached it.
	if r := s.callOne(t, id, "echo", map[string]any{"text": "hot"}); r["success"] != true || r["result"] != "hot" {
		t.Errorf("echo on %s = %v", id, r)
	}
	if r := s.callOne(t, id, "env", map[string]any{"name": "IT_HOTLOAD_GREETING"}); r["result"] != "hello" {
		t.Errorf("env IT_HOTLOAD_GREETING on %s = %v, want the server.json default", id, r)
	}

	// hangar_list and hangar_status show it as a runtime server.
	rt := runtimeServers(t, s.mustCall(t, "hangar_list", nil))
	entry := findRuntime(rt, "mcp_server", id)
	if entry == nil {
		t.Fatalf("hangar_list runtime_mcp_servers = %v, want %s in it", rt, id)
	}
	if entry["ephemeral"] != true || entry["verified"] != true || str(entry, "state") != "ready" ||
		!strings.Contains(str(entry, "source"), "io.github.mcp-hangar/testkit") {
		t.Errorf("runtime entry = %v, want ephemeral, verified, ready, its source", entry)
	}
	if _, err := time.Parse(time.RFC3339Nano, str(entry, "loaded_at")); err != nil {
		t.Errorf("loaded_at = %v: %v", entry["loaded_at"], err)
	}
	if l, isNum := entry["lifetime_seconds"].(float64); !isNum || l < 0 {
		t.Errorf("lifetime_seconds = %v", entry["lifetime_seconds"])
	}
	st := s.mustCall(t, "hangar_status", nil)
	srt := runtimeServers(t, st)
	if e := findRuntime(srt, "id", id); e == nil || str(e, "indicator") != "[READY]" || e["verified"] != true || str(e, "source") == "" {
		t.Errorf("hangar_status runtime_mcp_servers = %v", srt)
	}
	summary, _ := st["summary"].(map[string]any)
	if summary["runtime_mcp_servers"] != 1.0 || summary["runtime_healthy"] != 1.0 {
		t.Errorf("hangar_status summary = %v, want runtime_mcp_servers 1, runtime_healthy 1", summary)
	}

	// Loading it again answers the same server; no second container.
	if again := s.mustCall(t, "hangar_load", map[string]any{"name": "io.github.mcp-hangar/testkit"}); str(again, "status") != "loaded" || str(again, "mcp_server") != id {
		t.Errorf("hangar_load again = %v, want loaded as %s", again, id)
	}
	if n := countContainers(t, g.Instance, id); n != 1 {
		t.Errorf("%d containers for %s after loading it again, want 1", n, id)
	}

	// A secret from HANGAR_SECRET_<NAME> reaches the container and no
	// answer.
	sec, _, text := s.call(t, "hangar_load", map[string]any{"name": "with-secret"})
	if str(sec, "status") != "loaded" {
		t.Fatalf("hangar_load(with-secret) = %s", text)
	}
	if strings.Contains(text, hotloadSecret) {
		t.Errorf("hangar_load answer leaks the secret: %s", text)
	}
	secID := str(sec, "mcp_server")
	if r := s.callOne(t, secID, "env", map[string]any{"name": "IT_HOTLOAD_TOKEN"}); r["result"] != hotloadSecret {
		t.Errorf("env IT_HOTLOAD_TOKEN on %s = %v, want the secret passed in", secID, r)
	}
	for tool, args := range map[string]map[string]any{"hangar_list": nil, "hangar_status": nil, "hangar_details": {"mcp_server": secID}} {
		if _, _, text := s.call(t, tool, args); strings.Contains(text, hotloadSecret) {
			t.Errorf("%s leaks the secret: %s", tool, text)
		}
	}

	// Unload: the container goes, the runtime lists forget it.
	un := s.mustCall(t, "hangar_unload", map[string]any{"mcp_server": id})
	if str(un, "status") != "unloaded" || str(un, "mcp_server") != id {
		t.Fatalf("hangar_unload = %v, want unloaded", un)
	}
	if l, isNum := un["lifetime_seconds"].(float64); !isNum || l <= 0 {
		t.Errorf("lifetime_seconds = %v, want > 0", un["lifetime_seconds"])
	}
	waitFor(t, 15*time.Second, "the unloaded server's container to go", func() bool { return countContainers(t, g.Instance, id) == 0 })
	if e := findRuntime(runtimeServers(t, s.mustCall(t, "hangar_list", nil)), "mcp_server", id); e != nil {
		t.Errorf("hangar_list still shows %s after unload: %v", id, e)
	}
	if r, isErr, _ := s.call(t, "hangar_call", one(id, "echo", map[string]any{"text": "x"})); !isErr && firstResultOK(r) {
		t.Errorf("calling the unloaded %s succeeded: %v", id, r)
	}
	if again := s.mustCall(t, "hangar_unload", map[string]any{"mcp_server": id}); str(again, "status") != "not_hot_loaded" {
		t.Errorf("second hangar_unload = %v, want not_hot_loaded", again)
	}
	if un := s.mustCall(t, "hangar_unload", map[string]any{"mcp_server": secID}); str(un, "status") != "unloaded" {
		t.Errorf("hangar_unload(%s) = %v", secID, un)
	}

	// A required secret nobody set: missing_secrets, nothing started.
	ms := s.mustCall(t, "hangar_load", map[string]any{"name": "needs-secret"})
	if str(ms, "status") != "missing_secrets" || !slices.Contains(stringList(ms["missing"]), "IT_HOTLOAD_NEVER_SET") ||
		!strings.Contains(str(ms, "instructions"), "HANGAR_SECRET_IT_HOTLOAD_NEVER_SET") {
		t.Errorf("hangar_load(needs-secret) = %v, want missing_secrets for IT_HOTLOAD_NEVER_SET with instructions", ms)
	}
	if n := countContainers(t, g.Instance, "needs-secret"); n != 0 {
		t.Errorf("%d containers for needs-secret, want none", n)
	}

	// Unknown names.
	if nf := s.mustCall(t, "hangar_load", map[string]any{"name": "no-such-server"}); str(nf, "status") != "not_found" {
		t.Errorf("hangar_load(no-such-server) = %v, want not_found", nf)
	}
	waitFor(t, 15*time.Second, "every hot-loaded container to go", func() bool { return countContainers(t, g.Instance, "") == 0 })
}

// requireHotloadTools fails the test, naming the missing wiring, when the
// gateway does not offer the hot-loading tools.
func requireHotloadTools(t *testing.T, s *session) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := s.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"hangar_load", "hangar_unload"} {
		if !slices.Contains(names, want) {
			t.Fatalf("the gateway does not offer %s (tools: %v): hot-loading is not wired into the gateway yet "+
				"(Gateway.HotLoad, g.hotloadTools() in the tool list, registry.NewLoader in app.New)", want, names)
		}
	}
}

// runtimeServers returns an answer's runtime_mcp_servers.
func runtimeServers(t *testing.T, ans map[string]any) []map[string]any {
	t.Helper()
	raw, present := ans["runtime_mcp_servers"]
	if !present {
		b, _ := json.Marshal(ans)
		t.Fatalf("answer has no runtime_mcp_servers: %s", b)
	}
	list, _ := raw.([]any)
	out := make([]map[string]any, 0, len(list))
	for _, x := range list {
		if m, isMap := x.(map[string]any); isMap {
			out = append(out, m)
		}
	}
	return out
}

func findRuntime(list []map[string]any, key, id string) map[string]any {
	for _, m := range list {
		if str(m, key) == id {
			return m
		}
	}
	return nil
}

// firstResultOK reports whether a hangar_call answer's single result
// succeeded.
func firstResultOK(batch map[string]any) bool {
	r, err := firstResult(batch)
	return err == nil && r["success"] == true
}
