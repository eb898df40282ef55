package store

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
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
		func() error { return a.PutHotload(ctx, Hotload{Name: "io.x/echo"}) },
		func() error { return a.DeleteHotload(ctx, "io.x/echo") },
		func() error { return a.ClearHotloads(ctx) },
		func() error { return b.PutInstall(ctx, Install{Name: "own", Enabled: true}) },
		func() error { return a.PutInstall(ctx, Install{Name: "last", Enabled: true}) },
	}
	for i, w := range writes {
		if err := w(); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	want := []Change{{ChangeDecision, "web"}, {ChangeInstall, "fetch"}, {ChangeInstall, "fetch"},
		{ChangeDecision, "web"}, {ChangeConfig, ""}, {ChangeHotload, "io.x/echo"}, {ChangeHotload, "io.x/echo"},
		{ChangeHotload, ""}, {ChangeInstall, "last"}}
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

// TestPostgresDerivedKey: replicas of one schema under one keystore key
// derive the same key for a purpose, and another for another purpose;
// nothing of it is in the database; a replica with another keystore key
// is refused, also when no secret was ever sealed.
func TestPostgresDerivedKey(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cfg := pgConfig(t)
	a := openPG(t, cfg, Options{KeystoreKey: testKey})
	b := openPG(t, cfg, Options{KeystoreKey: testKey})
	ka, err := a.DerivedKey(ctx, "forward")
	if err != nil || len(ka) != 32 {
		t.Fatalf("DerivedKey: %x, %v", ka, err)
	}
	for name, s := range map[string]*Postgres{"a again": a, "b": b} {
		if k, err := s.DerivedKey(ctx, "forward"); err != nil || string(k) != string(ka) {
			t.Errorf("%s: %x, %v; want %x", name, k, err, ka)
		}
	}
	if k, _ := a.DerivedKey(ctx, "other"); string(k) == string(ka) {
		t.Error("another purpose has the same key")
	}
	var n int
	if err := a.db.QueryRowContext(ctx, `SELECT count(*) FROM meta WHERE value = $1 OR value = $2`,
		hex.EncodeToString(ka), base64.StdEncoding.EncodeToString(ka)).Scan(&n); err != nil || n != 0 {
		t.Errorf("the derived key is in meta (%d rows, %v)", n, err)
	}
	// The first derivation stored the key check: a replica with another
	// keystore key is refused at open.
	c, err := OpenPostgres(cfg, withLog(Options{KeystoreKey: bytes.Repeat([]byte{9}, keySize)}))
	if err == nil {
		defer c.Close()
	}
	if !errors.Is(err, ErrKeystoreKey) {
		t.Errorf("a replica with another keystore key opened the store: %v; want ErrKeystoreKey", err)
	}
}
