package gateway_test

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/config"
)

func TestUnknownServer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, nil, server("known"))
	for _, tool := range []string{"hangar_start", "hangar_stop", "hangar_tools", "hangar_details"} {
		t.Run(tool, func(t *testing.T) {
			got := h.fail(t, tool, map[string]any{"mcp_server": "nope"})
			if !strings.HasPrefix(got, "unknown_mcp_server: nope") {
				t.Errorf("%s error = %q, want prefix %q", tool, got, "unknown_mcp_server: nope")
			}
		})
	}
	t.Run("hangar_call", func(t *testing.T) {
		resp := h.ok(t, "hangar_call", map[string]any{"calls": []any{map[string]any{"mcp_server": "nope", "tool": "x"}}})
		r := obj(t, list(t, resp["results"])[0])
		if r["success"] != false || r["error_type"] != "unknown_mcp_server" || r["error"] != "unknown_mcp_server: nope" {
			t.Errorf("result = %v", r)
		}
	})
	t.Run("hangar_warm", func(t *testing.T) {
		resp := h.ok(t, "hangar_warm", map[string]any{"mcp_servers": "nope"})
		failed := list(t, resp["failed"])
		if len(failed) != 1 || obj(t, failed[0])["id"] != "nope" || obj(t, failed[0])["error"] != "unknown_mcp_server: nope" {
			t.Errorf("failed = %v", failed)
		}
		if resp["summary"] != "0 warmed, 0 already warm, 1 failed" {
			t.Errorf("summary = %v", resp["summary"])
		}
	})
	if n := h.l.launchCount("known"); n != 0 {
		t.Errorf("launches = %d", n)
	}
}

func TestMissingServerArgument(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, nil, server("a"))
	for _, tool := range []string{"hangar_start", "hangar_stop", "hangar_tools", "hangar_details"} {
		if got := h.fail(t, tool, map[string]any{}); !strings.Contains(got, "mcp_server") {
			t.Errorf("%s without mcp_server: %q", tool, got)
		}
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	a := server("a")
	a.Description = "Alpha server"
	a.Tools.Predefined = []config.ToolDef{{Name: "p1"}, {Name: "p2"}}
	b := server("b")
	h := newHarness(t, nil, nil, b, a) // added out of order
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "b"})

	resp := h.ok(t, "hangar_list", nil)
	if got := slices.Sorted(maps.Keys(resp)); !slices.Equal(got, []string{"groups", "mcp_servers", "runtime_mcp_servers"}) {
		t.Errorf("keys = %v", got)
	}
	if len(list(t, resp["groups"])) != 0 || len(list(t, resp["runtime_mcp_servers"])) != 0 {
		t.Errorf("groups %v runtime %v", resp["groups"], resp["runtime_mcp_servers"])
	}
	servers := list(t, resp["mcp_servers"])
	if len(servers) != 2 {
		t.Fatalf("mcp_servers = %v", servers)
	}
	want := []map[string]any{
		{"mcp_server": "a", "state": "cold", "mode": "docker", "alive": false, "tools_count": float64(2),
			"health_status": "unknown", "tools_predefined": true, "description": "Alpha server", "source": "config"},
		{"mcp_server": "b", "state": "ready", "mode": "docker", "alive": true, "tools_count": float64(5),
			"health_status": "healthy", "tools_predefined": false, "description": "", "source": "config"},
	}
	for i, w := range want {
		if got := obj(t, servers[i]); !reflect.DeepEqual(got, w) {
			t.Errorf("mcp_servers[%d] = %v, want %v", i, got, w)
		}
	}

	filters := []struct {
		filter string
		ids    []string
	}{
		{"ready", []string{"b"}},
		{"cold", []string{"a"}},
		{"dead", nil},
		{"degraded", nil},
		{"initializing", nil},
	}
	for _, f := range filters {
		resp := h.ok(t, "hangar_list", map[string]any{"state_filter": f.filter})
		var ids []string
		for _, s := range list(t, resp["mcp_servers"]) {
			ids = append(ids, obj(t, s)["mcp_server"].(string))
		}
		if !slices.Equal(ids, f.ids) {
			t.Errorf("state_filter %q: %v, want %v", f.filter, ids, f.ids)
		}
	}
	if got := h.fail(t, "hangar_list", map[string]any{"state_filter": "bogus"}); !strings.Contains(got, "state_filter") {
		t.Errorf("bad filter error = %q", got)
	}
}

func TestStartAndStop(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher()
	l.failing["broken"] = true
	h := newHarness(t, l, nil, server("b"), server("broken"))

	resp := h.ok(t, "hangar_start", map[string]any{"mcp_server": "b"})
	want := map[string]any{"mcp_server": "b", "state": "ready", "tools": []any{"add", "echo", "fail", "big", "block"}}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("hangar_start = %v, want %v", resp, want)
	}
	// Starting a READY server is a no-op.
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "b"})
	if n := l.launchCount("b"); n != 1 {
		t.Errorf("launches = %d, want 1", n)
	}

	resp = h.ok(t, "hangar_stop", map[string]any{"mcp_server": "b"})
	if want := map[string]any{"stopped": "b", "reason": "manual_stop"}; !reflect.DeepEqual(resp, want) {
		t.Errorf("hangar_stop = %v, want %v", resp, want)
	}
	if s := obj(t, list(t, h.ok(t, "hangar_list", map[string]any{"state_filter": "cold"})["mcp_servers"])[0]); s["mcp_server"] != "b" {
		t.Errorf("b not cold after stop: %v", s)
	}
	// Stopping a cold server is fine too.
	h.ok(t, "hangar_stop", map[string]any{"mcp_server": "b"})

	got := h.fail(t, "hangar_start", map[string]any{"mcp_server": "broken"})
	if !strings.HasPrefix(got, "start_failed: broken (") || !strings.Contains(got, "boom") {
		t.Errorf("failed start error = %q", got)
	}
	// How many launches hangar_start makes for a start that fails at once
	// is covered by provider.TestFastStartFailureIsOneAttempt.
}

func TestToolsPredefinedWithoutLaunch(t *testing.T) {
	t.Parallel()
	pre := server("pre")
	pre.Tools = config.Tools{
		AllowList: []string{"*_file"},
		DenyList:  []string{"write_*"},
		Predefined: []config.ToolDef{
			{Name: "read_file", Description: "Read a file", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "write_file", Description: "Write a file"},
			{Name: "delete_all"},
			{Name: "list_file"},
		},
	}
	live := server("live")
	live.Tools = config.Tools{DenyList: []string{"block", "big"}}
	h := newHarness(t, nil, nil, pre, live)

	resp := h.ok(t, "hangar_tools", map[string]any{"mcp_server": "pre"})
	if resp["mcp_server"] != "pre" || resp["state"] != "cold" || resp["predefined"] != true {
		t.Errorf("hangar_tools header = %v", resp)
	}
	tools := list(t, resp["tools"])
	want := []any{
		map[string]any{"name": "read_file", "description": "Read a file", "inputSchema": map[string]any{
			"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"},
		}},
		map[string]any{"name": "list_file", "description": "", "inputSchema": map[string]any{"type": "object"}},
	}
	if !reflect.DeepEqual(tools, want) {
		t.Errorf("tools = %v, want %v", tools, want)
	}
	if n := h.l.launchCount("pre"); n != 0 {
		t.Errorf("predefined tools launched the server %d times", n)
	}

	resp = h.ok(t, "hangar_tools", map[string]any{"mcp_server": "live"})
	var names []string
	for _, tool := range list(t, resp["tools"]) {
		names = append(names, obj(t, tool)["name"].(string))
	}
	if !slices.Equal(names, []string{"add", "echo", "fail"}) || resp["predefined"] != false || resp["state"] != "ready" {
		t.Errorf("live tools = %v (%v)", names, resp)
	}
	if n := h.l.launchCount("live"); n != 1 {
		t.Errorf("live launches = %d, want 1", n)
	}
}

func TestDetails(t *testing.T) {
	t.Parallel()
	s := server("d")
	s.Description = "details"
	s.Tools = config.Tools{AllowList: []string{"add", "echo"}, DenyList: []string{"echo"}}
	h := newHarness(t, nil, nil, s)
	h.ok(t, "hangar_call", map[string]any{"calls": []any{map[string]any{"mcp_server": "d", "tool": "add", "arguments": map[string]any{"a": 1.0, "b": 1.0}}}})

	resp := h.ok(t, "hangar_details", map[string]any{"mcp_server": "d"})
	if resp["state"] != "ready" || resp["alive"] != true || resp["mode"] != "docker" {
		t.Errorf("details = %v", resp)
	}
	pol := obj(t, resp["tools_policy"])
	if want := map[string]any{"type": "allow_and_deny", "has_allow_list": true, "has_deny_list": true, "filtered_count": float64(4)}; !reflect.DeepEqual(pol, want) {
		t.Errorf("tools_policy = %v, want %v", pol, want)
	}
	health := obj(t, resp["health"])
	if health["total_invocations"] != float64(1) || health["total_failures"] != float64(0) {
		t.Errorf("health = %v", health)
	}
	meta := obj(t, resp["meta"])
	if meta["container_id"] != "ctr-d-1" || meta["transport"] != "stdio" || meta["image"] != "example/d" || meta["description"] != "details" {
		t.Errorf("meta = %v", meta)
	}
	if len(list(t, resp["tools"])) != 1 {
		t.Errorf("tools = %v", resp["tools"])
	}
	if sc := list(t, meta["shadowed_claims"]); len(sc) != 0 {
		t.Errorf("shadowed_claims = %v, want none", sc)
	}

	// An install claiming the same ID is shadowed by the config file, and
	// details says so.
	inst := server("d")
	if err := h.g.Catalog.Put(t.Context(), catalog.SourceInstalled, inst, "test"); !errors.Is(err, catalog.ErrShadowed) {
		t.Fatalf("install of a configured ID: %v, want shadowed", err)
	}
	meta = obj(t, h.ok(t, "hangar_details", map[string]any{"mcp_server": "d"})["meta"])
	sc := list(t, meta["shadowed_claims"])
	if len(sc) != 1 || obj(t, sc[0])["source"] != string(catalog.SourceInstalled) ||
		!strings.Contains(obj(t, sc[0])["reason"].(string), "takes precedence") {
		t.Errorf("shadowed_claims = %v, want the install, shadowed by config", sc)
	}
}

func TestStatusDashboard(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher()
	l.failing["c"] = true
	h := newHarness(t, l, nil, server("a"), server("b"), server("c"))
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "a"})
	h.fail(t, "hangar_start", map[string]any{"mcp_server": "c"})

	resp := h.ok(t, "hangar_status", nil)
	formatted, _ := resp["formatted"].(string)
	lines := strings.Split(formatted, "\n")
	if len(lines) != 4 {
		t.Fatalf("formatted = %q", formatted)
	}
	if !strings.HasPrefix(lines[0], "hangar: 1/3 MCP servers ready, up ") {
		t.Errorf("header = %q", lines[0])
	}
	wantLines := []string{
		"[READY] a (docker, 5 tools)",
		"[COLD] b (docker)",
		"[DEAD] c (docker, start_failed: c (boom))",
	}
	if !slices.Equal(lines[1:], wantLines) {
		t.Errorf("lines = %q, want %q", lines[1:], wantLines)
	}
	sum := obj(t, resp["summary"])
	if sum["healthy_mcp_servers"] != float64(1) || sum["total_mcp_servers"] != float64(3) {
		t.Errorf("summary = %v", sum)
	}
	var indicators []string
	for _, s := range list(t, resp["mcp_servers"]) {
		indicators = append(indicators, obj(t, s)["indicator"].(string))
	}
	if !slices.Equal(indicators, []string{"[READY]", "[COLD]", "[DEAD]"}) {
		t.Errorf("indicators = %v", indicators)
	}
}

func TestStatusEmpty(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, nil)
	resp := h.ok(t, "hangar_status", nil)
	formatted, _ := resp["formatted"].(string)
	if !strings.HasPrefix(formatted, "hangar: 0/0 MCP servers ready, up ") || !strings.HasSuffix(formatted, "\n(no MCP servers configured)") {
		t.Errorf("formatted = %q", formatted)
	}
}

func TestWarm(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher()
	l.failing["c"] = true
	h := newHarness(t, l, nil, server("a"), server("b"), server("c"))
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "b"})

	resp := h.ok(t, "hangar_warm", map[string]any{"mcp_servers": " a, b ,c,"})
	if resp["summary"] != "1 warmed, 1 already warm, 1 failed" {
		t.Errorf("summary = %v", resp["summary"])
	}
	if !reflect.DeepEqual(resp["warmed"], []any{"a"}) || !reflect.DeepEqual(resp["already_warm"], []any{"b"}) {
		t.Errorf("warmed %v already %v", resp["warmed"], resp["already_warm"])
	}
	failed := list(t, resp["failed"])
	if len(failed) != 1 || obj(t, failed[0])["id"] != "c" || !strings.HasPrefix(obj(t, failed[0])["error"].(string), "start_failed: c (") {
		t.Errorf("failed = %v", failed)
	}

	// Without a list every server is warmed; c now waits for its backoff.
	resp = h.ok(t, "hangar_warm", nil)
	if resp["summary"] != "0 warmed, 2 already warm, 1 failed" {
		t.Errorf("warm all: %v", resp)
	}
}

// TestWarmUnknownAndFailingServers: warm appends an unknown ID to failed
// from the handler goroutine without holding mu, while a start running in
// the errgroup appends its failure to the same slice under mu. This is a
// data race (reported by -race) and can lose an entry. Not parallel, so a
// race report is attributed to this test only.
func TestWarmUnknownAndFailingServers(t *testing.T) {
	l := newFakeLauncher()
	l.failing["c"] = true
	h := newHarness(t, l, nil, server("c"))
	resp := h.ok(t, "hangar_warm", map[string]any{"mcp_servers": "c,nope"})
	if resp["summary"] != "0 warmed, 0 already warm, 2 failed" {
		t.Errorf("summary = %v", resp["summary"])
	}
	var ids []string
	for _, f := range list(t, resp["failed"]) {
		ids = append(ids, obj(t, f)["id"].(string))
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"c", "nope"}) {
		t.Errorf("failed ids = %v", ids)
	}
}

func TestHealthTool(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher()
	l.failing["c"] = true
	h := newHarness(t, l, nil, server("a"), server("c"))
	resp := h.ok(t, "hangar_health", nil)
	if resp["status"] != "healthy" {
		t.Errorf("status = %v", resp["status"])
	}
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "a"})
	h.fail(t, "hangar_start", map[string]any{"mcp_server": "c"})
	resp = h.ok(t, "hangar_health", nil)
	if resp["status"] != "degraded" {
		t.Errorf("status with a dead server = %v", resp["status"])
	}
	servers := obj(t, resp["mcp_servers"])
	if servers["total"] != float64(2) {
		t.Errorf("total = %v", servers["total"])
	}
	by := obj(t, servers["by_state"])
	if by["ready"] != float64(1) || by["dead"] != float64(1) || by["cold"] != float64(0) {
		t.Errorf("by_state = %v", by)
	}
}
