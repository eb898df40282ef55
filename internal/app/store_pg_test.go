package app

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/store/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestOpenStoreOnPostgres: store.url selects PostgreSQL; the data
// directory keeps the local state (here the keystore key file), round 1's
// decisions are imported into the shared database once, and the password
// shows nowhere.
func TestOpenStoreOnPostgres(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := pgtest.Shared(t)
	u, err := c.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, discovery.StateFile), []byte(roundOneState), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	open := func() *App {
		cfg := config.Default()
		cfg.Store = config.Store{URL: u, PasswordFile: c.PasswordFile}
		a := &App{Config: cfg, Log: slog.New(slog.NewTextHandler(&logs, nil))}
		if err := a.openStore(ctx, Options{DataDir: dir}, "i"); err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := open()
	if _, ok := a.Store.(*store.Postgres); !ok || a.Store.Path() != u || a.DataDir != dir {
		t.Errorf("store %T at %q, data dir %q; want PostgreSQL at %q, %q", a.Store, a.Store.Path(), a.DataDir, u, dir)
	}
	if ds, err := a.Store.Decisions(ctx); err != nil || len(ds) != 2 {
		t.Fatalf("imported decisions: %+v, %v", ds, err)
	}
	if err := a.Store.PutSecret(ctx, "x/K", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, store.KeyFile)); err != nil {
		t.Errorf("keystore key file not in the data directory: %v", err)
	}
	if err := a.Store.DeleteDecision(ctx, "api", store.DecisionApproved); err != nil {
		t.Fatal(err)
	}
	_ = a.Store.Close()
	a = open()
	defer a.Store.Close()
	if ds, _ := a.Store.Decisions(ctx); len(ds) != 1 || ds[0].Key != "broken" {
		t.Errorf("after restart (imported again?): %+v", ds)
	}
	if v, err := a.Store.Secret(ctx, "x/K"); err != nil || string(v) != "v" {
		t.Errorf("secret after restart: %q, %v", v, err)
	}
	if strings.Contains(logs.String(), c.Password) {
		t.Error("the password is in the log")
	}
}
