package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// recServer is one server entry of a reload test config.
func recServer(id, image, description string, extra ...string) string {
	s := fmt.Sprintf("  %s:\n    mode: docker\n    image: %s\n    start_timeout_s: 30\n", id, image)
	if description != "" {
		s += fmt.Sprintf("    description: %q\n", description)
	}
	for _, e := range extra {
		s += "    " + e + "\n"
	}
	return s
}

func recServers(entries ...string) string {
	return "mcp_servers:\n" + strings.Join(entries, "")
}

const (
	recTestkit = "mcp-hangar/testkit:dev"
	recMath    = "mcp-hangar/math:dev"
)

// recReload calls hangar_reload_config.
func recReload(t testing.TB, s *session, graceful bool) map[string]any {
	t.Helper()
	r := s.mustCall(t, "hangar_reload_config", map[string]any{"graceful": graceful})
	t.Logf("hangar_reload_config(graceful=%v): %v", graceful, r)
	return r
}

// recCheckDiff compares one list of a reload answer.
func recCheckDiff(t testing.TB, r map[string]any, key string, want ...string) {
	t.Helper()
	got := stringList(r[key])
	if _, isList := r[key].([]any); !isList {
		t.Errorf("reload %s = %v (%T), want a list %v", key, r[key], r[key], want)
		return
	}
	slices.Sort(got)
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Errorf("reload %s = %v, want %v", key, got, want)
	}
}

// recListed returns the server IDs hangar_list shows.
func recListed(t testing.TB, s *session) []string {
	t.Helper()
	l := s.mustCall(t, "hangar_list", nil)
	servers, _ := l["mcp_servers"].([]any)
	var ids []string
	for _, x := range servers {
		m, _ := x.(map[string]any)
		ids = append(ids, str(m, "mcp_server"))
	}
	slices.Sort(ids)
	return ids
}

// A reload adds, removes and updates exactly what changed; unchanged
// providers keep their containers. Graceful reloads let calls in flight on
// a changed provider finish, non-graceful ones stop them.
func TestReloadAddsRemovesUpdates(t *testing.T) {
	a := recServer("a", recTestkit, "server a")
	e := func(desc string) string { return recServer("e", recTestkit, desc) }
	path := recConfigFile(t, recServers(
		a,
		recServer("b", recTestkit, "server b"),
		recServer("c", recMath, "server c"),
		e("server e v1"),
	))
	g := recGateway(t, path)
	s := connect(t, g.MCPURL)

	w := s.mustCall(t, "hangar_warm", map[string]any{"mcp_servers": "a,b"})
	if warmed := stringList(w["warmed"]); len(warmed) != 2 {
		t.Fatalf("hangar_warm(a,b) = %v, want both warmed", w)
	}
	aID := recOnlyContainer(t, g.Instance, "a")
	bID := recOnlyContainer(t, g.Instance, "b")

	recRewrite(t, path, recServers(
		a,
		recServer("c", recMath, "server c, described anew"),
		recServer("d", recMath, "server d"),
		e("server e v1"),
	))
	r := recReload(t, s, true)
	if str(r, "status") != "success" {
		t.Fatalf("reload = %v, want status success", r)
	}
	recCheckDiff(t, r, "mcp_servers_added", "d")
	recCheckDiff(t, r, "mcp_servers_removed", "b")
	recCheckDiff(t, r, "mcp_servers_updated", "c")
	recCheckDiff(t, r, "mcp_servers_unchanged", "a", "e")
	if _, ok := r["duration_ms"].(float64); !ok {
		t.Errorf("reload duration_ms = %v, want a number", r["duration_ms"])
	}
	if str(r, "message") == "" {
		t.Errorf("reload message is empty")
	}

	// No wait: the reload has stopped b before answering.
	if list := containers(t, g.Instance, "b"); len(list) != 0 {
		t.Errorf("b's containers after the reload: %s, want none (b was %.12s)", describe(list), bID)
	}
	if got := recOnlyContainer(t, g.Instance, "a"); got != aID {
		t.Errorf("a's container after the reload = %.12s, want the unchanged %.12s", got, aID)
	}
	if got := containerOf(t, s, "a"); got != aID {
		t.Errorf("hangar_details a container_id = %q, want %q", got, aID)
	}
	if st := s.providerState(t, "a"); st != "ready" {
		t.Errorf("a's state after the reload = %q, want ready", st)
	}
	res := s.callOne(t, "a", "echo", map[string]any{"text": "still here"})
	if res["success"] != true || res["result"] != "still here" {
		t.Errorf("echo on a after the reload = %v, want success", res)
	}
	if got := recListed(t, s); !slices.Equal(got, []string{"a", "c", "d", "e"}) {
		t.Errorf("hangar_list after the reload = %v, want [a c d e]", got)
	}
	if _, _, meta := recDetails(t, s, "c"); str(meta, "description") != "server c, described anew" {
		t.Errorf("c's description after the reload = %q, want the new one", str(meta, "description"))
	}
	res = s.callOne(t, "d", "add", map[string]any{"a": 2, "b": 3})
	if res["success"] != true || res["result"] != float64(5) {
		t.Errorf("add(2, 3) on the added d = %v, want 5", res)
	}
	res = s.callOne(t, "b", "echo", map[string]any{"text": "x"})
	if res["success"] != false || str(res, "error_type") != "unknown_mcp_server" {
		t.Errorf("echo on the removed b = %v, want error_type unknown_mcp_server", res)
	}

	t.Run("graceful", func(t *testing.T) {
		ch := recCallAsync(s, "e", "sleep", map[string]any{"ms": 1500}, 20)
		waitInflight(t, s, "e", 1, 10*time.Second)
		old := containerOf(t, s, "e")
		recRewrite(t, path, recServers(a, recServer("c", recMath, "server c, described anew"),
			recServer("d", recMath, "server d"), e("server e v2")))
		r := recReload(t, s, true)
		reloaded := time.Now()
		if str(r, "status") != "success" {
			t.Fatalf("reload = %v, want status success", r)
		}
		recCheckDiff(t, r, "mcp_servers_updated", "e")
		recCheckDiff(t, r, "mcp_servers_unchanged", "a", "c", "d")
		o := recAwait(t, ch, 20*time.Second, "sleep(1500) on e")
		if o.res["success"] != true || o.res["result"] != "slept 1500 ms" {
			t.Errorf("sleep(1500) in flight across a graceful reload = %v, want success", o.res)
		}
		if o.at.After(reloaded) {
			t.Errorf("the graceful reload answered %s before the call in flight finished, want after", o.at.Sub(reloaded))
		}
		if list := containers(t, g.Instance, "e"); len(list) != 0 {
			t.Errorf("e's containers after the reload: %s, want none (the old one %.12s stopped)", describe(list), old)
		}
		res := s.callOne(t, "e", "echo", map[string]any{"text": "v2"})
		if res["success"] != true || res["result"] != "v2" {
			t.Errorf("echo on the updated e = %v, want success", res)
		}
		d, _, meta := recDetails(t, s, "e")
		if str(meta, "description") != "server e v2" {
			t.Errorf("e's description = %q, want server e v2 (%v)", str(meta, "description"), d)
		}
		if id := str(meta, "container_id"); id == "" || id == old {
			t.Errorf("e's container after the reload = %q, want a new one (old %q)", id, old)
		}
	})

	t.Run("forced", func(t *testing.T) {
		ch := recCallAsync(s, "e", "sleep", map[string]any{"ms": 5000}, 20)
		waitInflight(t, s, "e", 1, 10*time.Second)
		recRewrite(t, path, recServers(a, recServer("c", recMath, "server c, described anew"),
			recServer("d", recMath, "server d"), e("server e v3")))
		began := time.Now()
		r := recReload(t, s, false)
		if str(r, "status") != "success" {
			t.Fatalf("reload = %v, want status success", r)
		}
		recCheckDiff(t, r, "mcp_servers_updated", "e")
		o := recAwait(t, ch, 20*time.Second, "sleep(5000) on e")
		t.Logf("sleep(5000) returned %s after the reload began: %v", o.at.Sub(began), o.res)
		if o.res["success"] != false || str(o.res, "error_type") != "provider_stopped" {
			t.Errorf("sleep(5000) across a forced reload = %v, want error_type provider_stopped", o.res)
		}
		if e := str(o.res, "error"); !strings.HasPrefix(e, "provider_stopped: e") {
			t.Errorf("error = %q, want provider_stopped: e ...", e)
		}
		if o.at.Sub(began) > 3*time.Second {
			t.Errorf("the call ended %s after the forced reload began, want it cut short", o.at.Sub(began))
		}
		res := s.callOne(t, "e", "echo", map[string]any{"text": "v3"})
		if res["success"] != true || res["result"] != "v3" {
			t.Errorf("echo on e after the forced reload = %v, want success", res)
		}
	})
}

// A config that does not load is rejected with the reason, and the running
// configuration (and its containers) stays in force.
func TestMalformedReloadKeepsRunning(t *testing.T) {
	good := recServers(recServer("tk", recTestkit, "kept"))
	path := recConfigFile(t, good)
	g := recGateway(t, path)
	s := connect(t, g.MCPURL)
	s.mustCall(t, "hangar_start", map[string]any{"mcp_server": "tk"})
	id := recOnlyContainer(t, g.Instance, "tk")

	stillRunning := func(t *testing.T) {
		t.Helper()
		if got := recOnlyContainer(t, g.Instance, "tk"); got != id {
			t.Errorf("tk's container = %.12s, want the same %.12s", got, id)
		}
		if st := s.providerState(t, "tk"); st != "ready" {
			t.Errorf("tk's state = %q, want ready", st)
		}
		r := s.callOne(t, "tk", "echo", map[string]any{"text": "alive"})
		if r["success"] != true || r["result"] != "alive" {
			t.Errorf("echo = %v, want success", r)
		}
		if got := recListed(t, s); !slices.Equal(got, []string{"tk"}) {
			t.Errorf("hangar_list = %v, want [tk]", got)
		}
	}
	checkFailed := func(t *testing.T, r map[string]any) {
		t.Helper()
		if str(r, "status") != "failed" {
			t.Errorf("reload status = %q, want failed (%v)", str(r, "status"), r)
		}
		if str(r, "error_type") == "" {
			t.Errorf("reload error_type is empty (%v)", r)
		}
		if str(r, "message") == "" {
			t.Errorf("reload message is empty (%v)", r)
		}
		if _, ok := r["duration_ms"].(float64); !ok {
			t.Errorf("reload duration_ms = %v, want a number", r["duration_ms"])
		}
	}

	t.Run("invalid yaml", func(t *testing.T) {
		recRewrite(t, path, "mcp_servers:\n  tk: {mode: docker, image: [unclosed\n    idle_ttl_s: : :\n")
		r := recReload(t, s, true)
		checkFailed(t, r)
		stillRunning(t)
	})

	t.Run("out of range", func(t *testing.T) {
		recRewrite(t, path, recServers(recServer("tk", recTestkit, "kept", "idle_ttl_s: 0")))
		r := recReload(t, s, true)
		checkFailed(t, r)
		if et := str(r, "error_type"); et != "invalid_config" {
			t.Errorf("error_type = %q, want invalid_config", et)
		}
		if m := str(r, "message"); !strings.Contains(m, "mcp_servers.tk.idle_ttl_s") {
			t.Errorf("message = %q, want it to name mcp_servers.tk.idle_ttl_s", m)
		}
		stillRunning(t)
	})

	t.Run("restored", func(t *testing.T) {
		recRewrite(t, path, good)
		r := recReload(t, s, true)
		if str(r, "status") != "success" {
			t.Fatalf("reload of the original file = %v, want success", r)
		}
		recCheckDiff(t, r, "mcp_servers_unchanged", "tk")
		recCheckDiff(t, r, "mcp_servers_updated")
		stillRunning(t)
	})
}

// With config_reload enabled, a change to the file is applied without any
// hangar_reload_config call.
func TestConfigFileWatch(t *testing.T) {
	head := "config_reload: {enabled: true, interval_s: 1}\n"
	path := recConfigFile(t, head+recServers(recServer("m1", recMath, "first")))
	g := recGateway(t, path)
	s := connect(t, g.MCPURL)
	if got := recListed(t, s); !slices.Equal(got, []string{"m1"}) {
		t.Fatalf("hangar_list = %v, want [m1]", got)
	}

	recRewrite(t, path, head+recServers(recServer("m1", recMath, "first"), recServer("m2", recMath, "second")))
	changed := time.Now()
	for {
		got := recListed(t, s)
		if slices.Equal(got, []string{"m1", "m2"}) {
			t.Logf("m2 listed %s after the file changed", time.Since(changed))
			break
		}
		if time.Since(changed) > 3500*time.Millisecond {
			t.Fatalf("hangar_list = %v %s after the file changed, want [m1 m2] within ~3s", got, time.Since(changed))
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := s.callOne(t, "m2", "multiply", map[string]any{"a": 6, "b": 7})
	if r["success"] != true || r["result"] != float64(42) {
		t.Errorf("multiply(6, 7) on the watched-in m2 = %v, want 42", r)
	}
}
