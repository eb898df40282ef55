package app

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/store"
)

const roundOneState = `{
  "version": 1,
  "approvals": {"api": {"fingerprint": "f2", "approved_at": "2026-01-15T10:30:00Z"}},
  "quarantine": {"broken": {"fingerprint": "f1", "source": "docker", "reason": "health_check_failed: x",
                 "quarantined_at": "2026-01-15T10:30:00Z"}}
}
`

func TestOpenStoreImportsRoundOneStateOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	legacy := filepath.Join(dir, discovery.StateFile)
	if err := os.WriteFile(legacy, []byte(roundOneState), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func() *App {
		a := &App{Config: config.Default(), Log: slog.New(slog.DiscardHandler)}
		if err := a.openStore(ctx, Options{DataDir: dir}, "i"); err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := open()
	if a.DataDir != dir || a.Config.DataDir != dir || a.Store.Path() != filepath.Join(dir, store.FileName) {
		t.Errorf("DataDir %q, Config.DataDir %q, Path %q", a.DataDir, a.Config.DataDir, a.Store.Path())
	}
	at := time.Date(2026, 1, 15, 10, 30, 0, 0, time.UTC)
	want := []store.Decision{
		{Key: "api", Kind: store.DecisionApproved, Fingerprint: "f2", Source: discovery.DecisionSource, At: at},
		{Key: "broken", Kind: store.DecisionQuarantined, Fingerprint: "f1", Source: discovery.DecisionSource,
			Reason: "health_check_failed: x", Detail: "docker", At: at},
	}
	if got, err := a.Store.Decisions(ctx); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("imported:\n got  %+v (%v)\n want %+v", got, err, want)
	}
	// A decision made since, then a restart: the file is not read again,
	// so it neither duplicates nor overrides what changed.
	if err := a.Store.DeleteDecision(ctx, "api", store.DecisionApproved); err != nil {
		t.Fatal(err)
	}
	_ = a.Store.Close()
	a = open()
	defer a.Store.Close()
	if got, _ := a.Store.Decisions(ctx); len(got) != 1 || got[0].Key != "broken" {
		t.Errorf("after restart: %+v", got)
	}
	// The file is left alone.
	if data, err := os.ReadFile(legacy); err != nil || !bytes.Equal(data, []byte(roundOneState)) {
		t.Errorf("legacy file changed: %q, %v", data, err)
	}
}

func TestOpenStoreWithoutLegacyFile(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	a := &App{Config: config.Default(), Log: slog.New(slog.DiscardHandler)}
	if err := a.openStore(t.Context(), Options{DataDir: dir}, "i"); err != nil {
		t.Fatal(err)
	}
	defer a.Store.Close()
	if ds, err := a.Store.Decisions(t.Context()); err != nil || len(ds) != 0 {
		t.Errorf("decisions %+v, %v", ds, err)
	}
}
