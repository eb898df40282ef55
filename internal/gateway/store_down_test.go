package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/store/pgtest"
)

// TestCallsGoOnWhileStoreIsDown: with the PostgreSQL store stopped, calls
// to a running provider still succeed (the store is not on the call path;
// their audit entries wait in the writer's queue), hangar_health says the
// store is unreachable, and once the server is back the entries are
// stored.
func TestCallsGoOnWhileStoreIsDown(t *testing.T) {
	t.Parallel()
	c, err := pgtest.Start(false)
	c = pgtest.Need(t, c, err)
	t.Cleanup(c.Remove)
	u, err := c.Schema(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenPostgres(store.PostgresConfig{URL: u, PasswordFile: c.PasswordFile, KeyDir: t.TempDir()},
		store.Options{Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	h := newHarness(t, newFakeLauncher(), nil, server("s"))
	w := audit.New(st, audit.Options{Log: quiet, Linger: -1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	h.g.Store, h.g.AuditStore = st, w

	add := map[string]any{"calls": []any{callEntry("s", "add", map[string]any{"a": 1, "b": 2})}}
	if r := h.ok(t, "hangar_call", add); r["success"] != true {
		t.Fatalf("call with the store up: %v", r)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if r := h.ok(t, "hangar_call", add); r["success"] != true {
			t.Fatalf("call %d with the store down: %v", i, r)
		}
	}
	// The writer's first failed batch tells the store it is down.
	deadline := time.Now().Add(30 * time.Second)
	for {
		hh := h.ok(t, "hangar_health", nil)
		s, _ := hh["store"].(map[string]any)
		if s["reachable"] == false && hh["status"] == "degraded" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hangar_health does not show the store down: %v", hh)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.StartAgain(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		es, _ := st.RecentAudit(t.Context(), "s", 100)
		if len(es) == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 6 audit entries stored after the server came back", len(es))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if hh := h.ok(t, "hangar_health", nil); hh["store"].(map[string]any)["reachable"] != true {
		t.Errorf("hangar_health after the outage: %v", hh["store"])
	}
}
