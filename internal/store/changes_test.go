package store

import (
	"context"
	"testing"
	"time"
)

// next is the next Change of w, failing the test after a while.
func next(t *testing.T, w <-chan Change) Change {
	t.Helper()
	select {
	case c, ok := <-w:
		if !ok {
			t.Fatal("change feed closed")
		}
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no change within 10s")
	}
	return Change{}
}

// TestPostgresChanges: a replica hears the changes another replica
// commits on the same schema (kind and key, in order), not its own, not a
// rolled-back write's, and not another schema's.
func TestPostgresChanges(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cfg := pgConfig(t)
	a := openPG(t, cfg, Options{KeystoreKey: testKey})
	b := openPG(t, cfg, Options{KeystoreKey: testKey})
	other := openPG(t, pgConfig(t), Options{KeystoreKey: testKey})

	wctx, stop := context.WithCancel(ctx)
	wb, wa, wo := b.Watch(wctx), a.Watch(wctx), other.Watch(wctx)
	for _, w := range []<-chan Change{wb, wa, wo} {
		if c := next(t, w); c.Kind != ChangeResync {
			t.Fatalf("first change %+v, want a resync once listening", c)
		}
	}
	if _, err := a.db.ExecContext(ctx, boomTrigger["postgres"]); err != nil {
		t.Fatal(err)
	}
	if err := a.PutDecision(ctx, Decision{Key: "boom", Kind: DecisionApproved}); err == nil {
		t.Fatal("the trigger did not fail the write")
	}
	writes := []func() error{
		func() error { return a.PutDecision(ctx, Decision{Key: "web", Kind: DecisionApproved}) },
		func() error { return a.PutInstall(ctx, Install{Name: "fetch", Enabled: true}) },
		func() error { return a.AppendAudit(ctx, AuditEntry{Server: "web"}) }, // nothing for the others
		func() error { return a.DeleteInstall(ctx, "fetch") },
		func() error { return a.DeleteDecision(ctx, "web", DecisionApproved) },
		func() error { return a.Announce(ctx, Change{Kind: ChangeConfig}) },
		func() error { return b.PutInstall(ctx, Install{Name: "own", Enabled: true}) },
		func() error { return a.PutInstall(ctx, Install{Name: "last", Enabled: true}) },
	}
	for i, w := range writes {
		if err := w(); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	want := []Change{{ChangeDecision, "web"}, {ChangeInstall, "fetch"}, {ChangeInstall, "fetch"},
		{ChangeDecision, "web"}, {ChangeConfig, ""}, {ChangeInstall, "last"}}
	for i, w := range want {
		if c := next(t, wb); c != w {
			t.Fatalf("change %d heard by b: %+v, want %+v", i, c, w)
		}
	}
	if c := next(t, wa); c != (Change{ChangeInstall, "own"}) {
		t.Errorf("a heard %+v first, want b's install only (not its own writes)", c)
	}
	stop()
	for c := range wo {
		t.Errorf("another schema's store heard %+v", c)
	}
	for range wb {
	}
}

// TestPostgresSharedKey: replicas of one schema read the same key, made
// once; another name or another schema has another.
func TestPostgresSharedKey(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cfg := pgConfig(t)
	a := openPG(t, cfg, Options{KeystoreKey: testKey})
	b := openPG(t, cfg, Options{KeystoreKey: testKey})
	other := openPG(t, pgConfig(t), Options{KeystoreKey: testKey})
	ka, err := a.SharedKey(ctx, "forward")
	if err != nil || len(ka) != 32 {
		t.Fatalf("SharedKey: %x, %v", ka, err)
	}
	for name, s := range map[string]*Postgres{"a again": a, "b": b} {
		if k, err := s.SharedKey(ctx, "forward"); err != nil || string(k) != string(ka) {
			t.Errorf("%s: %x, %v; want %x", name, k, err, ka)
		}
	}
	if k, _ := a.SharedKey(ctx, "other"); string(k) == string(ka) {
		t.Error("another name has the same key")
	}
	if k, _ := other.SharedKey(ctx, "forward"); string(k) == string(ka) {
		t.Error("another schema has the same key")
	}
}
