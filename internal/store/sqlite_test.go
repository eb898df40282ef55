package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
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

var at = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)

func TestDecisions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, "", Options{})
	if ds, err := s.Decisions(ctx); err != nil || len(ds) != 0 {
		t.Fatalf("empty store: %v, %v", ds, err)
	}
	puts := []Decision{
		{Key: "web", Kind: DecisionApproved, Fingerprint: "f1", Source: "discovery", At: at},
		{Key: "web", Kind: DecisionQuarantined, Fingerprint: "f0", Source: "discovery", Reason: "health_check_failed: x", Detail: "d", At: at},
		{Key: "api", Kind: DecisionApproved, Fingerprint: "f2", Source: "hotload", At: at},
		// Replaces the first: one decision per key and kind.
		{Key: "web", Kind: DecisionApproved, Fingerprint: "f3", Source: "discovery", At: at.Add(time.Second)},
	}
	for _, d := range puts {
		if err := s.PutDecision(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	want := []Decision{puts[2], puts[3], puts[1]} // by key, then kind
	s = reopen(t, s, Options{})
	got, err := s.Decisions(ctx)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("after reopen:\n got  %+v (%v)\n want %+v", got, err, want)
	}

	if err := s.DeleteDecision(ctx, "web", DecisionQuarantined); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteDecision(ctx, "absent", DecisionApproved); err != nil {
		t.Errorf("deleting nothing: %v", err)
	}
	got, _ = s.Decisions(ctx)
	if !reflect.DeepEqual(got, want[:2]) {
		t.Errorf("after delete: %+v", got)
	}

	// A zero time is stored as now, not as year 1.
	if err := s.PutDecision(ctx, Decision{Key: "z", Kind: DecisionApproved}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Decisions(ctx)
	if z := got[len(got)-1]; z.Key != "z" || time.Since(z.At) > time.Minute {
		t.Errorf("zero At stored as %v", z.At)
	}

	for _, bad := range []Decision{{Kind: DecisionApproved}, {Key: "k"}} {
		if err := s.PutDecision(ctx, bad); err == nil {
			t.Errorf("PutDecision(%+v): no error", bad)
		}
	}
}

func TestInstalls(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, "", Options{})
	a := Install{Name: "b-fetch", Config: json.RawMessage(`{"command":"uvx","env":{"K":"keystore:b-fetch/K"}}`),
		Enabled: true, AllowImplicit: false, CreatedAt: at, UpdatedAt: at}
	b := Install{Name: "a-git", Config: json.RawMessage(`{"image":"git"}`), AllowImplicit: true, CreatedAt: at, UpdatedAt: at}
	for _, in := range []Install{a, b} {
		if err := s.PutInstall(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	// An update with a zero CreatedAt keeps the stored one.
	upd := a
	upd.Enabled, upd.CreatedAt, upd.UpdatedAt = false, time.Time{}, at.Add(time.Hour)
	if err := s.PutInstall(ctx, upd); err != nil {
		t.Fatal(err)
	}
	upd.CreatedAt = at

	s = reopen(t, s, Options{})
	got, err := s.Installs(ctx)
	if err != nil || !reflect.DeepEqual(got, []Install{b, upd}) {
		t.Fatalf("installs:\n got  %+v (%v)\n want %+v", got, err, []Install{b, upd})
	}
	if err := s.DeleteInstall(ctx, "a-git"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Installs(ctx); len(got) != 1 || got[0].Name != "b-fetch" {
		t.Errorf("after delete: %+v", got)
	}
	if err := s.PutInstall(ctx, Install{}); err == nil {
		t.Error("install without a name: no error")
	}
}

func TestToolPins(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, "", Options{})
	pin := func(tool, hash string) ToolPin {
		return ToolPin{Server: "math", Tool: tool, Hash: hash, Definition: json.RawMessage(`{"name":"` + tool + `"}`), PinnedAt: at}
	}
	steps := []struct {
		name   string
		server string
		pins   []ToolPin
		want   []ToolPin // of math afterwards
	}{
		{"first set", "math", []ToolPin{pin("sub", "h2"), pin("add", "h1")}, []ToolPin{pin("add", "h1"), pin("sub", "h2")}},
		{"other server leaves math alone", "web", []ToolPin{{Tool: "get", Hash: "h"}}, []ToolPin{pin("add", "h1"), pin("sub", "h2")}},
		{"replaced whole", "math", []ToolPin{pin("mul", "h3")}, []ToolPin{pin("mul", "h3")}},
		{"emptied", "math", nil, nil},
	}
	for _, st := range steps {
		if err := s.ReplaceToolPins(ctx, st.server, st.pins); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got, err := s.ToolPins(ctx, "math")
		if err != nil || !reflect.DeepEqual(got, st.want) {
			t.Errorf("%s:\n got  %+v (%v)\n want %+v", st.name, got, err, st.want)
		}
	}
	s = reopen(t, s, Options{})
	if got, _ := s.ToolPins(ctx, "web"); len(got) != 1 || got[0].Server != "web" || got[0].Tool != "get" {
		t.Errorf("web pins after reopen: %+v", got)
	}
	// A duplicate tool fails the whole replacement: the old set stays.
	if err := s.ReplaceToolPins(ctx, "web", []ToolPin{{Tool: "x"}, {Tool: "x"}}); err == nil {
		t.Error("duplicate tool: no error")
	}
	if got, _ := s.ToolPins(ctx, "web"); len(got) != 1 || got[0].Tool != "get" {
		t.Errorf("failed replacement changed the pins: %+v", got)
	}
}

func TestImageDigests(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, "", Options{})
	if _, err := s.ImageDigest(ctx, "math"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing digest: %v, want ErrNotFound", err)
	}
	d := ImageDigest{Server: "math", Ref: "mcp-hangar/math:dev", Digest: "sha256:aa", ApprovedAt: at}
	d2 := ImageDigest{Server: "math", Ref: "mcp-hangar/math:dev", Digest: "sha256:bb", ApprovedAt: at.Add(time.Hour)}
	for _, x := range []ImageDigest{d, d2} {
		if err := s.PutImageDigest(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	s = reopen(t, s, Options{})
	if got, err := s.ImageDigest(ctx, "math"); err != nil || got != d2 {
		t.Errorf("digest: %+v, %v; want %+v", got, err, d2)
	}
	if err := s.DeleteImageDigest(ctx, "math"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ImageDigest(ctx, "math"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
}

func TestCatalogs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, "", Options{})
	if _, err := s.Catalog(ctx, "math"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing catalog: %v, want ErrNotFound", err)
	}
	c := CachedCatalog{Server: "math", Version: "v1", ImageDigest: "sha256:aa",
		Catalog: json.RawMessage(`{"tools":[{"name":"add"}]}`), UpdatedAt: at}
	if err := s.PutCatalog(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Version, c.Catalog = "v2", json.RawMessage(`{"tools":[]}`)
	if err := s.PutCatalog(ctx, c); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, Options{})
	if got, err := s.Catalog(ctx, "math"); err != nil || !reflect.DeepEqual(got, c) {
		t.Errorf("catalog: %+v, %v; want %+v", got, err, c)
	}
	if err := s.DeleteCatalog(ctx, "math"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Catalog(ctx, "math"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
}

func TestAuditIsBoundedPerServer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, "", Options{AuditPerServer: 3})
	for i := range 5 {
		if err := s.AppendAudit(ctx, AuditEntry{At: at.Add(time.Duration(i) * time.Second), Server: "a",
			Identity: "agent", Action: "tools/call", Tool: fmt.Sprint("t", i), Allowed: i%2 == 0,
			Reason: "policy", Outcome: "ok", DurationMs: 1.5}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		if err := s.AppendAudit(ctx, AuditEntry{Server: "b", Tool: fmt.Sprint("u", i)}); err != nil {
			t.Fatal(err)
		}
	}
	s = reopen(t, s, Options{AuditPerServer: 3})

	tools := func(es []AuditEntry) string {
		var out []string
		for _, e := range es {
			out = append(out, e.Tool)
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		server string
		limit  int
		want   string
	}{
		{"a", 0, "t4,t3,t2"}, // the oldest two were dropped
		{"a", 2, "t4,t3"},
		{"a", 10, "t4,t3,t2"},
		{"b", 0, "u1,u0"}, // a's bound does not touch b
		{"", 0, "u1,u0,t4"},
		{"", 10, "u1,u0,t4,t3,t2"},
		{"nobody", 0, ""},
	}
	for _, tt := range tests {
		got, err := s.RecentAudit(ctx, tt.server, tt.limit)
		if err != nil || tools(got) != tt.want {
			t.Errorf("RecentAudit(%q, %d) = %s (%v), want %s", tt.server, tt.limit, tools(got), err, tt.want)
		}
	}
	got, _ := s.RecentAudit(ctx, "a", 1)
	want := AuditEntry{ID: got[0].ID, At: at.Add(4 * time.Second), Server: "a", Identity: "agent", Action: "tools/call",
		Tool: "t4", Allowed: true, Reason: "policy", Outcome: "ok", DurationMs: 1.5}
	if got[0] != want || want.ID != 5 {
		t.Errorf("entry = %+v, want %+v (id 5)", got[0], want)
	}
}

func TestConcurrentWrites(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, "", Options{AuditPerServer: 50})
	var wg sync.WaitGroup
	errs := make(chan error, 8*40)
	for w := range 8 {
		wg.Go(func() {
			for i := range 40 {
				errs <- s.AppendAudit(ctx, AuditEntry{Server: fmt.Sprint("s", w%2), Tool: fmt.Sprint(i)})
				if _, err := s.NextSnapshotVersion(ctx); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, srv := range []string{"s0", "s1"} {
		if got, _ := s.RecentAudit(ctx, srv, 1000); len(got) != 50 {
			t.Errorf("%s keeps %d entries, want 50", srv, len(got))
		}
	}
	if v, _ := s.SnapshotVersion(ctx); v != 8*40 {
		t.Errorf("snapshot version %d after %d increments", v, 8*40)
	}
}

func TestSnapshotVersionSurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, "", Options{})
	if v, err := s.SnapshotVersion(ctx); err != nil || v != 0 {
		t.Fatalf("fresh: %d, %v", v, err)
	}
	var last uint64
	for range 3 {
		v, err := s.NextSnapshotVersion(ctx)
		if err != nil || v <= last {
			t.Fatalf("next = %d (%v) after %d", v, err, last)
		}
		last = v
	}
	s = reopen(t, s, Options{})
	if v, _ := s.SnapshotVersion(ctx); v != last {
		t.Errorf("after restart %d, want %d", v, last)
	}
	if v, _ := s.NextSnapshotVersion(ctx); v != last+1 {
		t.Errorf("next after restart %d, want %d", v, last+1)
	}
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

func TestLastWriteError(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var logs bytes.Buffer
	s := open(t, "", Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	// A trigger stands in for a full or failing disk, for one key only.
	if _, err := s.db.ExecContext(ctx, `CREATE TRIGGER boom BEFORE INSERT ON decisions WHEN NEW.key = 'boom'
		BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END`); err != nil {
		t.Fatal(err)
	}
	if s.LastWriteError() != nil {
		t.Fatal("error before any write")
	}
	err := s.PutDecision(ctx, Decision{Key: "boom", Kind: DecisionApproved})
	if err == nil || !strings.Contains(err.Error(), "simulated disk failure") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("failed write returned %v", err)
	}
	if got := s.LastWriteError(); got == nil || got.Error() != err.Error() {
		t.Errorf("LastWriteError = %v, want %v", got, err)
	}
	if !strings.Contains(logs.String(), "store write failed") {
		t.Errorf("failure not logged: %s", logs.String())
	}
	if ds, _ := s.Decisions(ctx); len(ds) != 0 {
		t.Errorf("failed write stored %+v", ds)
	}
	// Reads do not clear it; a later successful write does.
	_, _ = s.Decisions(ctx)
	if s.LastWriteError() == nil {
		t.Error("a read cleared LastWriteError")
	}
	if err := s.PutDecision(ctx, Decision{Key: "fine", Kind: DecisionApproved}); err != nil {
		t.Fatal(err)
	}
	if err := s.LastWriteError(); err != nil {
		t.Errorf("LastWriteError after a good write: %v", err)
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
