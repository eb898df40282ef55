package app

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/store/pgtest"
)

// sqlOn runs statements on the schema of the replicas' config at path, as
// an operator (or a fault) would, behind the gateways' backs.
func sqlOn(t *testing.T, path string, stmts ...string) {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := pgx.ParseConfig(cfg.Store.URL)
	if err != nil {
		t.Fatal(err)
	}
	pc.Password = pgtest.Shared(t).Password
	conn, err := pgx.ConnectConfig(t.Context(), pc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	for _, s := range stmts {
		if _, err := conn.Exec(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// hotloaded is the registry names r runs hot-loaded, and their IDs.
func hotloaded(r *replica) map[string]string {
	out := map[string]string{}
	for _, s := range r.Gateway.HotLoad.Runtime() {
		out[s.Name] = s.ID
	}
	return out
}

// waitHotloaded waits until r runs exactly the hot-loads names.
func waitHotloaded(t *testing.T, r *replica, within time.Duration, what string, names ...string) time.Duration {
	t.Helper()
	began := time.Now()
	for {
		got := hotloaded(r)
		have := make([]string, 0, len(got))
		for n := range got {
			have = append(have, n)
		}
		slices.Sort(have)
		if slices.Equal(have, names) {
			return time.Since(began)
		}
		if time.Since(began) > within {
			t.Fatalf("%s: %s runs hot-loaded %v, want %v (within %s)", what, r.member.Self.Replica, have, names, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReplicasHotloadStored: a hot-load is stored, so a replica started
// after it runs it too and its clients can call it; a replica whose
// change feed was down when hot-loads changed catches up once the feed is
// back; an unload through one replica is stored and applied on the
// others. When the instance starts again with no replica left, the
// hot-loads are gone (they are ephemeral, seed 001).
func TestReplicasHotloadStored(t *testing.T) {
	t.Parallel()
	path, instance := hotloadConfig(t, map[string]string{"hello": helloServer(t), "other": helloServer(t)})
	r1 := startReplica(t, path, instance, "r1")
	loader := mcpgoClient(t, r1.URL, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	out, err := loader.call(t.Context(), "hangar_load", map[string]any{"name": "io.github.test/hello", "allow_tools": []any{"hel*"}})
	if err != nil || !strings.Contains(out, `"loaded"`) {
		t.Fatalf("hangar_load on r1: %s, %v", out, err)
	}

	// A replica started afterwards runs it, with the same tool policy,
	// and its clients of both SDKs call it.
	began := time.Now()
	r2 := startReplica(t, path, instance, "r2")
	took := waitHotloaded(t, r2, 20*time.Second, "a replica started after the hot-load", "io.github.test/hello")
	t.Logf("a replica started after a hot-load runs it %s after its start (%s after New returned)",
		time.Since(began).Round(time.Millisecond), took.Round(time.Millisecond))
	id := hotloaded(r2)["io.github.test/hello"]
	callers := []*changeClient{sdkClient(t, r2.URL, mcp.LATEST_PROTOCOL_VERSION), mcpgoClient(t, r2.URL, mcp.LATEST_LEGACY_PROTOCOL_VERSION)}
	for _, c := range callers {
		deadline := time.Now().Add(10 * time.Second)
		for {
			out, err := c.call(t.Context(), id+"__hello", nil)
			if err == nil && out == "hello from remote" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s__hello on the later replica: %q, %v", c.name, id, out, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// Both feeds are down while the hot-loads change (written behind the
	// gateways' backs: no notice); once the feeds are back, both replicas
	// run what is stored.
	sqlOn(t, path,
		`DELETE FROM hotloads WHERE name = 'io.github.test/hello'`,
		`INSERT INTO hotloads (name, loaded_at) VALUES ('io.github.test/other', 1)`,
		`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND pid <> pg_backend_pid()
			AND query = 'LISTEN "hangar_' || left(md5(current_schema()), 16) || '"'`)
	for _, r := range []*replica{r1, r2} {
		took := waitHotloaded(t, r, 20*time.Second, "after the change feed was down", "io.github.test/other")
		t.Logf("%s caught up with the stored hot-loads %s after its feed was cut", r.member.Self.Replica, took.Round(time.Millisecond))
	}

	// An unload through r2 is stored: r1 unloads too.
	other := hotloaded(r2)["io.github.test/other"]
	unloader := mcpgoClient(t, r2.URL, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	if out, err := unloader.call(t.Context(), "hangar_unload", map[string]any{"mcp_server": other}); err != nil || !strings.Contains(out, `"unloaded"`) {
		t.Fatalf("hangar_unload on r2: %s, %v", out, err)
	}
	waitHotloaded(t, r1, 10*time.Second, "after an unload through r2", []string{}...)

	// The last replica gone, the next start of the instance runs none.
	if out, err := loader.call(t.Context(), "hangar_load", map[string]any{"name": "io.github.test/hello"}); err != nil || !strings.Contains(out, `"loaded"`) {
		t.Fatalf("hangar_load on r1: %s, %v", out, err)
	}
	waitHotloaded(t, r2, 10*time.Second, "a load through r1", "io.github.test/hello")
	for _, c := range append(callers, loader, unloader) {
		c.close()
	}
	r1.stop()
	r2.stop()
	// r3 finds no live replica: the hot-loads were the last run's, and
	// go before it serves (New has returned).
	r3 := startReplica(t, path, instance, "r3")
	if hs, err := r3.Store.(store.Hotloads).Hotloads(t.Context()); err != nil || len(hs) != 0 {
		t.Errorf("stored hot-loads after the whole instance restarted: %+v, %v; want none (they are ephemeral)", hs, err)
	}
	if got := hotloaded(r3); len(got) != 0 {
		t.Errorf("r3 runs %v after the whole instance restarted", got)
	}
}
