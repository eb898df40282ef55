package integration

import (
	"slices"
	"testing"
)

// groupDetails returns hangar_details of a group and its members by ID.
func groupDetails(t testing.TB, s *session, id string) (map[string]any, map[string]map[string]any) {
	t.Helper()
	d := s.mustCall(t, "hangar_details", map[string]any{"mcp_server": id})
	members := map[string]map[string]any{}
	list, _ := d["members"].([]any)
	for _, x := range list {
		m, _ := x.(map[string]any)
		members[str(m, "id")] = m
	}
	return d, members
}

// A round-robin group of two testkit containers: calls through the group
// start both members and alternate; a member that crashes (under a direct
// call) leaves rotation at once and calls go to the other; a rebalance
// restarts it and brings it back; stopping the group leaves no container.
func TestGroupRoundRobinCrashRebalance(t *testing.T) {
	g := startGateway(t, `
mcp_servers:
  pool:
    mode: group
    strategy: round_robin
    health:
      unhealthy_threshold: 1
    members:
      - id: t1
        mode: docker
        image: mcp-hangar/testkit:dev
        env: {MEMBER: t1}
        start_timeout_s: 30
      - id: t2
        mode: docker
        image: mcp-hangar/testkit:dev
        env: {MEMBER: t2}
        start_timeout_s: 30
`)
	s := connect(t, g.MCPURL)

	l := s.mustCall(t, "hangar_list", nil)
	if servers, _ := l["mcp_servers"].([]any); len(servers) != 0 {
		t.Errorf("hangar_list lists the members as MCP servers: %v", servers)
	}
	if groups, _ := l["groups"].([]any); len(groups) != 1 || str(groups[0].(map[string]any), "state") != "cold" {
		t.Errorf("hangar_list groups = %v, want pool cold", l["groups"])
	}

	// Four calls through the group: both members start, calls alternate
	// (env shows which member answered).
	var landed []string
	for i := range 4 {
		r := s.callOne(t, "pool", "env", map[string]any{"name": "MEMBER"})
		if r["success"] != true {
			t.Fatalf("call %d through the group = %v", i, r)
		}
		landed = append(landed, str(r, "result"))
	}
	if !slices.Equal(landed, []string{"t1", "t2", "t1", "t2"}) {
		t.Errorf("calls landed on %v, want t1 t2 t1 t2", landed)
	}
	for i := range 4 {
		if r := s.callOne(t, "pool", "echo", map[string]any{"text": "hello"}); r["success"] != true || r["result"] != "hello" {
			t.Fatalf("echo %d through the group = %v", i, r)
		}
	}
	if n := countContainers(t, g.Instance, ""); n != 2 {
		t.Errorf("%d containers after calls through the group, want 2", n)
	}
	for _, m := range []string{"t1", "t2"} {
		_, health, _ := recDetails(t, s, m)
		if inv := health["total_invocations"]; inv != float64(4) {
			t.Errorf("%s served %v calls, want 4 (round robin)", m, inv)
		}
	}
	d, _ := groupDetails(t, s, "pool")
	if str(d, "state") != "healthy" || d["healthy_count"] != float64(2) {
		t.Errorf("pool after the calls = %v", d)
	}

	// Crash t1 by a direct call: with unhealthy_threshold 1 it leaves
	// rotation at once.
	if r := s.callOne(t, "t1", "crash", map[string]any{"code": 1}); r["success"] != false {
		t.Fatalf("crash call = %v", r)
	}
	d, members := groupDetails(t, s, "pool")
	if members["t1"]["in_rotation"] != false || members["t2"]["in_rotation"] != true {
		t.Fatalf("after the crash, members = %v", members)
	}
	if d["healthy_count"] != float64(1) || str(d, "state") != "healthy" {
		t.Errorf("after the crash, pool = %v", d)
	}
	for i := range 3 {
		r := s.callOne(t, "pool", "env", map[string]any{"name": "MEMBER"})
		if r["success"] != true || r["result"] != "t2" {
			t.Errorf("call %d with t1 out of rotation = %v, want t2", i, r)
		}
	}

	// A rebalance restarts t1 and brings it back.
	rb := s.mustCall(t, "hangar_group_rebalance", map[string]any{"group": "pool"})
	if got := stringList(rb["members_in_rotation"]); !slices.Equal(got, []string{"t1", "t2"}) || rb["healthy_count"] != float64(2) || str(rb, "state") != "healthy" {
		t.Fatalf("rebalance = %v", rb)
	}
	if st := s.providerStateOf(t, "t1"); st != "ready" {
		t.Errorf("t1 after the rebalance: %s, want ready", st)
	}
	seen := map[string]bool{}
	for range 2 {
		r := s.callOne(t, "pool", "env", map[string]any{"name": "MEMBER"})
		seen[str(r, "result")] = true
	}
	if !seen["t1"] || !seen["t2"] {
		t.Errorf("after the rebalance calls landed on %v, want both", seen)
	}

	// Stopping the group stops every member.
	stop := s.mustCall(t, "hangar_stop", map[string]any{"mcp_server": "pool"})
	if stop["stopped"] != true || str(stop, "group") != "pool" || str(stop, "state") != "cold" {
		t.Errorf("stop = %v", stop)
	}
	if n := countContainers(t, g.Instance, ""); n != 0 {
		t.Errorf("%d containers left after stopping the group", n)
	}
}

// providerStateOf is the state hangar_details reports for a provider
// (members are not in hangar_list).
func (s *session) providerStateOf(t testing.TB, id string) string {
	t.Helper()
	return str(s.mustCall(t, "hangar_details", map[string]any{"mcp_server": id}), "state")
}
