package store

import (
	"bytes"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
)

var testKey = bytes.Repeat([]byte{7}, keySize)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// open opens a store in dir (a new temporary one when "") and closes it at
// the end of the test.
func open(t *testing.T, dir string, opts Options) *SQLite {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	if opts.Log == nil {
		opts.Log = quiet()
	}
	s, err := OpenDir(dir, opts)
	if err != nil {
		t.Fatalf("OpenDir: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// reopen closes s and opens its directory again, as a restart does.
func reopen(t *testing.T, s *SQLite, opts Options) *SQLite {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return open(t, s.Dir(), opts)
}

func TestMemoryStore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := Open("", Options{Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Path() != "" {
		t.Errorf("Path = %q", s.Path())
	}
	if err := s.PutDecision(ctx, Decision{Key: "k", Kind: DecisionApproved}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSecret(ctx, "r", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Secret(ctx, "r"); err != nil || string(v) != "v" {
		t.Errorf("secret %q, %v", v, err)
	}
	if ds, _ := s.Decisions(ctx); len(ds) != 1 {
		t.Errorf("decisions %+v", ds)
	}
}

func TestMigrations(t *testing.T) {
	t.Parallel()
	for i, m := range migrations {
		if m.version != i+1 {
			t.Fatalf("migration %d has version %d: versions must count up from 1 without gaps", i, m.version)
		}
	}
	ctx := t.Context()
	s := open(t, "", Options{})
	count := func() (n int) {
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != len(migrations) {
		t.Fatalf("%d migrations recorded, want %d", n, len(migrations))
	}
	if err := s.PutDecision(ctx, Decision{Key: "k", Kind: DecisionApproved}); err != nil {
		t.Fatal(err)
	}
	// Reopening applies nothing twice and keeps the data.
	s = reopen(t, s, Options{})
	s = reopen(t, s, Options{})
	if n := count(); n != len(migrations) {
		t.Errorf("%d migrations recorded after reopening, want %d", n, len(migrations))
	}
	if ds, _ := s.Decisions(ctx); len(ds) != 1 {
		t.Errorf("decisions after reopening: %+v", ds)
	}

	// A database from a newer hangar is refused, naming the file.
	if _, err := s.db.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 0)`,
		latestVersion()+1); err != nil {
		t.Fatal(err)
	}
	dir := s.Dir()
	_ = s.Close()
	_, err := OpenDir(dir, Options{Log: quiet()})
	if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), filepath.Join(dir, FileName)) ||
		!strings.Contains(err.Error(), "newer hangar") {
		t.Errorf("newer schema: %v", err)
	}
	// The refusal released the lock: the directory is not left held.
	if _, err := lockDir(dir); err != nil {
		t.Errorf("lock after a refused open: %v", err)
	}
}

// BenchmarkAppendAudit is the cost of one synced audit write on the data
// dir's disk (synchronous=FULL: one fsync per commit).
func BenchmarkAppendAudit(b *testing.B) {
	s, err := OpenDir(b.TempDir(), Options{Log: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	e := AuditEntry{Server: "math", Identity: "agent", Action: "tools/call", Tool: "add", Allowed: true, Outcome: "ok"}
	for b.Loop() {
		if err := s.AppendAudit(b.Context(), e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendAuditBatch is one batch of the audit writer under load
// (128 entries of one server) on a trail already at its bound: the
// inserts, the trim and one commit, per entry.
func BenchmarkAppendAuditBatch(b *testing.B) {
	s, err := OpenDir(b.TempDir(), Options{Log: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	batch := make([]AuditEntry, 128)
	for i := range batch {
		batch[i] = AuditEntry{Server: "math", Identity: "agent", Action: "hangar_call", Tool: "add", Allowed: true, Outcome: "ok", DurationMs: 0.4}
	}
	for range DefaultAuditPerServer/len(batch) + 1 {
		if err := s.AppendAuditBatch(b.Context(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.AppendAuditBatch(b.Context(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/entry")
}
