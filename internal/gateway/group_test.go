package gateway_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/metrics"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// poolSpec is a round-robin group of the given members with the config
// defaults.
func poolSpec(id string, members ...string) *config.Server {
	s := &config.Server{
		ID:             id,
		Mode:           config.ModeGroup,
		Description:    "a pool",
		Strategy:       config.StrategyRoundRobin,
		MinHealthy:     1,
		Health:         config.GroupHealth{UnhealthyThreshold: 2, HealthyThreshold: 1},
		CircuitBreaker: config.CircuitBreaker{FailureThreshold: 10, ResetTimeout: time.Minute},
	}
	for _, m := range members {
		ms := server(m)
		ms.Weight, ms.Priority = 1, 1
		s.Members = append(s.Members, ms)
	}
	return s
}

// newGroupHarness is newHarness with metrics on, built from cfg (servers
// and groups).
func newGroupHarness(t *testing.T, l *fakeLauncher, cfg *config.Config) *harness {
	t.Helper()
	return harnessFor(t, l, cfg, metrics.New())
}

func keys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

func TestGroupTools(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Servers["solo"] = server("solo")
	cfg.Servers["pool"] = poolSpec("pool", "m1", "m2")
	h := newGroupHarness(t, nil, cfg)

	// hangar_list: members are not MCP servers of their own there.
	resp := h.ok(t, "hangar_list", nil)
	servers := list(t, resp["mcp_servers"])
	if len(servers) != 1 || obj(t, servers[0])["mcp_server"] != "solo" {
		t.Errorf("mcp_servers = %v", servers)
	}
	groups := list(t, resp["groups"])
	if len(groups) != 1 {
		t.Fatalf("groups = %v", groups)
	}
	want := map[string]any{"group_id": "pool", "state": "cold", "strategy": "round_robin",
		"healthy_count": float64(2), "total_members": float64(2)}
	if got := obj(t, groups[0]); !maps.Equal(got, want) {
		t.Errorf("group = %v, want %v", got, want)
	}
	if got := list(t, h.ok(t, "hangar_list", map[string]any{"state_filter": "ready"})["groups"]); len(got) != 0 {
		t.Errorf("state_filter ready: groups %v", got)
	}

	// hangar_call through the group: round robin over the members.
	for range 4 {
		r := obj(t, list(t, h.ok(t, "hangar_call", map[string]any{"calls": []any{
			map[string]any{"mcp_server": "pool", "tool": "add", "arguments": map[string]any{"a": 1, "b": 2}},
		}})["results"])[0])
		if r["success"] != true || r["result"] != float64(3) {
			t.Fatalf("call through pool = %v", r)
		}
	}
	for _, m := range []string{"m1", "m2"} {
		d := h.ok(t, "hangar_details", map[string]any{"mcp_server": m})
		if inv := obj(t, d["health"])["total_invocations"]; inv != float64(2) {
			t.Errorf("%s total_invocations = %v, want 2", m, inv)
		}
	}

	// hangar_details of the group.
	d := h.ok(t, "hangar_details", map[string]any{"mcp_server": "pool"})
	wantKeys := []string{"circuit_open", "description", "front_door", "group_id", "healthy_count", "is_available", "members",
		"min_healthy", "state", "strategy", "total_members"}
	if !slices.Equal(keys(d), wantKeys) {
		t.Errorf("details keys = %v, want %v", keys(d), wantKeys)
	}
	if d["state"] != "healthy" || d["description"] != "a pool" || d["is_available"] != true || d["circuit_open"] != false {
		t.Errorf("details = %v", d)
	}
	m1 := obj(t, list(t, d["members"])[0])
	wantMember := map[string]any{"id": "m1", "state": "ready", "in_rotation": true, "weight": float64(1),
		"priority": float64(1), "consecutive_failures": float64(0)}
	if !maps.Equal(m1, wantMember) {
		t.Errorf("member = %v, want %v", m1, wantMember)
	}

	// hangar_tools of the group.
	tl := h.ok(t, "hangar_tools", map[string]any{"mcp_server": "pool"})
	if !slices.Equal(keys(tl), []string{"group", "mcp_server", "state", "tools"}) || tl["group"] != true || len(list(t, tl["tools"])) != 5 {
		t.Errorf("hangar_tools = %v", tl)
	}

	// hangar_status.
	st := h.ok(t, "hangar_status", nil)
	sg := list(t, st["groups"])
	wantStatus := map[string]any{"id": "pool", "indicator": "[READY]", "state": "healthy",
		"healthy_members": float64(2), "total_members": float64(2)}
	if len(sg) != 1 || !maps.Equal(obj(t, sg[0]), wantStatus) {
		t.Errorf("status groups = %v", sg)
	}
	if f, _ := st["formatted"].(string); !strings.Contains(f, "\n[READY] pool (group, round_robin, 2/2 members healthy)") {
		t.Errorf("formatted = %q", f)
	}
	if sum := obj(t, st["summary"]); sum["total_mcp_servers"] != float64(1) {
		t.Errorf("summary = %v", sum)
	}

	// hangar_health and hangar_metrics.
	hh := h.ok(t, "hangar_health", nil)
	wantHealth := map[string]any{"total": float64(1), "total_members": float64(2), "healthy_members": float64(2),
		"by_state": map[string]any{"cold": float64(0), "healthy": float64(1), "degraded": float64(0), "unavailable": float64(0)}}
	if got := obj(t, hh["groups"]); !equalJSON(got, wantHealth) {
		t.Errorf("health groups = %v, want %v", got, wantHealth)
	}
	if obj(t, hh["mcp_servers"])["total"] != float64(1) {
		t.Errorf("health mcp_servers = %v", hh["mcp_servers"])
	}
	mt := h.ok(t, "hangar_metrics", nil)
	wantMetrics := map[string]any{"state": "healthy", "strategy": "round_robin", "total_members": float64(2), "healthy_members": float64(2)}
	if got := obj(t, obj(t, mt["groups"])["pool"]); !maps.Equal(got, wantMetrics) {
		t.Errorf("metrics group = %v", got)
	}
	if obj(t, mt["summary"])["total_groups"] != float64(1) {
		t.Errorf("metrics summary = %v", mt["summary"])
	}

	// hangar_warm skips groups.
	w := h.ok(t, "hangar_warm", nil)
	if got := list(t, w["warmed"]); len(got) != 1 || got[0] != "solo" {
		t.Errorf("warm all: %v", w)
	}
	w = h.ok(t, "hangar_warm", map[string]any{"mcp_servers": "pool"})
	failed := list(t, w["failed"])
	if len(failed) != 1 || !strings.HasPrefix(obj(t, failed[0])["error"].(string), "group_skipped: pool") {
		t.Errorf("warm pool: %v", w)
	}

	// hangar_stop and hangar_start of the group.
	stop := h.ok(t, "hangar_stop", map[string]any{"mcp_server": "pool"})
	if !maps.Equal(stop, map[string]any{"group": "pool", "state": "cold", "stopped": true}) {
		t.Errorf("stop = %v", stop)
	}
	start := h.ok(t, "hangar_start", map[string]any{"mcp_server": "pool"})
	wantStart := map[string]any{"group": "pool", "state": "healthy", "members_started": float64(2),
		"healthy_count": float64(2), "total_members": float64(2)}
	if !maps.Equal(start, wantStart) {
		t.Errorf("start = %v, want %v", start, wantStart)
	}

	// hangar_group_list and hangar_group_rebalance.
	gl := list(t, h.ok(t, "hangar_group_list", nil)["groups"])
	// hangar_details adds the front door's view; the list does not.
	listKeys := slices.DeleteFunc(slices.Clone(wantKeys), func(k string) bool { return k == "front_door" })
	if len(gl) != 1 || !slices.Equal(keys(obj(t, gl[0])), listKeys) {
		t.Errorf("group_list = %v", gl)
	}
	rb := h.ok(t, "hangar_group_rebalance", map[string]any{"group": "pool"})
	wantRb := map[string]any{"group_id": "pool", "state": "healthy", "healthy_count": float64(2),
		"total_members": float64(2), "members_in_rotation": []any{"m1", "m2"}}
	if !equalJSON(rb, wantRb) {
		t.Errorf("rebalance = %v, want %v", rb, wantRb)
	}
	if got := h.fail(t, "hangar_group_rebalance", map[string]any{"group": "nope"}); got != "unknown_group: nope" {
		t.Errorf("rebalance of an unknown group: %q", got)
	}
	if got := h.fail(t, "hangar_group_rebalance", map[string]any{"group": "m1"}); got != "unknown_group: m1" {
		t.Errorf("rebalance of a member: %q", got)
	}
}

// equalJSON compares two JSON objects by their encoding (map keys sort).
func equalJSON(a, b map[string]any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// TestGroupWithoutHealthyMembers: members that fail leave rotation; then
// calls and hangar_tools fail with no_healthy_members_in_group.
func TestGroupWithoutHealthyMembers(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher()
	l.failing["m1"], l.failing["m2"] = true, true
	cfg := config.Default()
	pool := poolSpec("pool", "m1", "m2")
	pool.Health.UnhealthyThreshold = 1
	cfg.Servers["pool"] = pool
	h := newGroupHarness(t, l, cfg)

	// Two attempts: the failover to the second member is one of them.
	r := obj(t, list(t, h.ok(t, "hangar_call", map[string]any{"max_attempts": 2, "calls": []any{
		map[string]any{"mcp_server": "pool", "tool": "add"}}})["results"])[0])
	if r["error_type"] != "start_failed" {
		t.Errorf("first call = %v", r)
	}
	r = obj(t, list(t, h.ok(t, "hangar_call", map[string]any{"calls": []any{
		map[string]any{"mcp_server": "pool", "tool": "add"}}})["results"])[0])
	if r["error_type"] != "no_healthy_members_in_group" || r["error"] != "no_healthy_members_in_group: pool" {
		t.Errorf("second call = %v", r)
	}
	if got := h.fail(t, "hangar_tools", map[string]any{"mcp_server": "pool"}); got != "no_healthy_members_in_group: pool" {
		t.Errorf("hangar_tools = %q", got)
	}
	if got := h.fail(t, "hangar_start", map[string]any{"mcp_server": "pool"}); !strings.HasPrefix(got, "start_failed: pool (no member started: ") {
		t.Errorf("hangar_start = %q", got)
	}
	d := h.ok(t, "hangar_details", map[string]any{"mcp_server": "pool"})
	if d["state"] != "unavailable" || d["is_available"] != false || d["healthy_count"] != float64(0) {
		t.Errorf("details = %v", d)
	}
	if hh := h.ok(t, "hangar_health", nil); hh["status"] != "degraded" {
		t.Errorf("health status = %v with an unavailable group", hh["status"])
	}
}

// TestGroupReload: a reload adds, replaces (whole, members included) and
// removes groups.
func TestGroupReload(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	write := func(yaml string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`
mcp_servers:
  pool:
    mode: group
    members:
      - {id: m1, mode: docker, image: img}
      - {id: m2, mode: docker, image: img}
  keep:
    mode: group
    members:
      - {id: k1, mode: docker, image: img}
`)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	h := newGroupHarness(t, nil, cfg)
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "pool"})
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "keep"})
	oldPool, _ := h.g.Groups.Get("pool")
	oldKeep, _ := h.g.Groups.Get("keep")

	write(`
mcp_servers:
  pool:
    mode: group
    strategy: priority
    members:
      - {id: m1, mode: docker, image: img}
      - {id: m3, mode: docker, image: img, priority: 2}
  keep:
    mode: group
    members:
      - {id: k1, mode: docker, image: img}
  extra:
    mode: group
    members:
      - {id: e1, mode: docker, image: img}
`)
	r := h.ok(t, "hangar_reload_config", map[string]any{"graceful": false})
	if r["status"] != "success" || !equalJSON(r, mergeJSON(r, map[string]any{
		"mcp_servers_added": []any{"extra"}, "mcp_servers_updated": []any{"pool"}, "mcp_servers_unchanged": []any{"keep"}})) {
		t.Fatalf("reload = %v", r)
	}
	if got := h.g.Providers.IDs(); !slices.Equal(got, []string{"e1", "k1", "m1", "m3"}) {
		t.Errorf("providers after reload = %v", got)
	}
	newPool, _ := h.g.Groups.Get("pool")
	if newPool == oldPool || newPool.Spec().Strategy != config.StrategyPriority {
		t.Error("the changed group was not replaced")
	}
	for _, p := range oldPool.Members() {
		if p.State() != provider.Cold {
			t.Errorf("old member %s: %s, want stopped", p.ID(), p.State())
		}
	}
	if k, _ := h.g.Groups.Get("keep"); k != oldKeep || k.Members()[0].State() != provider.Ready {
		t.Error("the unchanged group was touched")
	}
	if m1, _ := h.g.Providers.GroupOf("m1"); m1 != "pool" {
		t.Errorf("GroupOf(m1) = %q", m1)
	}

	write("mcp_servers:\n  solo: {mode: docker, image: img}\n")
	r = h.ok(t, "hangar_reload_config", map[string]any{"graceful": true})
	if r["status"] != "success" {
		t.Fatalf("reload = %v", r)
	}
	if got := h.g.Providers.IDs(); !slices.Equal(got, []string{"solo"}) {
		t.Errorf("providers after removing the groups = %v", got)
	}
	if len(h.g.Groups.List()) != 0 {
		t.Error("groups left after removal")
	}
	if got := h.fail(t, "hangar_details", map[string]any{"mcp_server": "pool"}); got != "unknown_mcp_server: pool" {
		t.Errorf("details of a removed group: %q", got)
	}
}

func mergeJSON(base, over map[string]any) map[string]any {
	out := maps.Clone(base)
	maps.Copy(out, over)
	return out
}
