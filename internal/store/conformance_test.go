package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/store/pgtest"
)

// The conformance suite: every test here runs against both drivers, each
// in a database of its own (SQLite: a file in a temporary directory;
// PostgreSQL: a fresh schema in the test binary's cluster).

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// testDB is a store of either driver, as the tests use it.
type testDB struct {
	*sqlStore
	close func() error
	// again opens the same database anew, as a restart does.
	again func(t *testing.T, opts Options) (*testDB, error)
}

func (s *testDB) Close() error { return s.close() }

// reopen closes s and opens its database again.
func (s *testDB) reopen(t *testing.T, opts Options) *testDB {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	r, err := s.again(t, opts)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	return r
}

type storeDriver struct {
	name string
	open func(t *testing.T, opts Options) *testDB
}

var drivers = []storeDriver{
	{"sqlite", openSQLiteDB},
	{"postgres", openPostgresDB},
}

// conform runs fn once per driver, in parallel subtests named by driver.
func conform(t *testing.T, fn func(t *testing.T, drv storeDriver)) {
	t.Parallel()
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			fn(t, d)
		})
	}
}

func withLog(opts Options) Options {
	if opts.Log == nil {
		opts.Log = quiet()
	}
	return opts
}

func openSQLiteDB(t *testing.T, opts Options) *testDB {
	t.Helper()
	dir := t.TempDir()
	var again func(t *testing.T, opts Options) (*testDB, error)
	again = func(t *testing.T, opts Options) (*testDB, error) {
		s, err := OpenDir(dir, withLog(opts))
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = s.Close() })
		return &testDB{sqlStore: s.sqlStore, close: s.Close, again: again}, nil
	}
	s, err := again(t, opts)
	if err != nil {
		t.Fatalf("OpenDir: %v", err)
	}
	return s
}

// pgConfig is a fresh schema of the test cluster.
func pgConfig(t *testing.T) PostgresConfig {
	t.Helper()
	c := pgtest.Shared(t)
	u, err := c.Schema(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return PostgresConfig{URL: u, PasswordFile: c.PasswordFile, KeyDir: t.TempDir()}
}

func openPostgresDB(t *testing.T, opts Options) *testDB {
	t.Helper()
	cfg := pgConfig(t)
	var again func(t *testing.T, opts Options) (*testDB, error)
	again = func(t *testing.T, opts Options) (*testDB, error) {
		s, err := OpenPostgres(cfg, withLog(opts))
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = s.Close() })
		return &testDB{sqlStore: s.sqlStore, close: s.Close, again: again}, nil
	}
	s, err := again(t, opts)
	if err != nil {
		t.Fatalf("OpenPostgres: %v", err)
	}
	return s
}

// boomTrigger makes inserts of the decision key 'boom' fail, standing in
// for a full or failing disk, in each dialect.
var boomTrigger = map[string]string{
	"sqlite": `CREATE TRIGGER boom BEFORE INSERT ON decisions WHEN NEW.key = 'boom'
		BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END`,
	"postgres": `CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.key = 'boom' THEN RAISE EXCEPTION 'simulated disk failure'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER boom BEFORE INSERT ON decisions FOR EACH ROW EXECUTE FUNCTION boom();`,
}

var at = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)

func TestDecisions(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		s := drv.open(t, Options{})
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
		s = s.reopen(t, Options{})
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
	})
}

func TestInstalls(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		s := drv.open(t, Options{})
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

		s = s.reopen(t, Options{})
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
	})
}

func TestToolPins(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		s := drv.open(t, Options{})
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
		s = s.reopen(t, Options{})
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
	})
}

func TestImageDigests(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		s := drv.open(t, Options{})
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
		s = s.reopen(t, Options{})
		if got, err := s.ImageDigest(ctx, "math"); err != nil || got != d2 {
			t.Errorf("digest: %+v, %v; want %+v", got, err, d2)
		}
		if err := s.DeleteImageDigest(ctx, "math"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ImageDigest(ctx, "math"); !errors.Is(err, ErrNotFound) {
			t.Errorf("after delete: %v", err)
		}
	})
}

func TestCatalogs(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		s := drv.open(t, Options{})
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
		s = s.reopen(t, Options{})
		if got, err := s.Catalog(ctx, "math"); err != nil || !reflect.DeepEqual(got, c) {
			t.Errorf("catalog: %+v, %v; want %+v", got, err, c)
		}
		if err := s.DeleteCatalog(ctx, "math"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Catalog(ctx, "math"); !errors.Is(err, ErrNotFound) {
			t.Errorf("after delete: %v", err)
		}
	})
}

func TestAuditIsBoundedPerServer(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		s := drv.open(t, Options{AuditPerServer: 3})
		for i := range 5 {
			if err := s.AppendAudit(ctx, AuditEntry{At: at.Add(time.Duration(i) * time.Second), Server: "a",
				Identity: "agent", Action: "tools/call", Tool: fmt.Sprint("t", i), Allowed: i%2 == 0,
				Reason: "policy", Outcome: "ok", DurationMs: 1.5, Rule: "db/no-drops"}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 2 {
			if err := s.AppendAudit(ctx, AuditEntry{Server: "b", Tool: fmt.Sprint("u", i)}); err != nil {
				t.Fatal(err)
			}
		}
		s = s.reopen(t, Options{AuditPerServer: 3})

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
			Tool: "t4", Allowed: true, Reason: "policy", Outcome: "ok", DurationMs: 1.5, Rule: "db/no-drops"}
		if got[0] != want || want.ID != 5 {
			t.Errorf("entry = %+v, want %+v (id 5)", got[0], want)
		}
	})
}

func TestConcurrentWrites(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		s := drv.open(t, Options{AuditPerServer: 50})
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
	})
}

func TestSnapshotVersionSurvivesRestart(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		s := drv.open(t, Options{})
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
		s = s.reopen(t, Options{})
		if v, _ := s.SnapshotVersion(ctx); v != last {
			t.Errorf("after restart %d, want %d", v, last)
		}
		if v, _ := s.NextSnapshotVersion(ctx); v != last+1 {
			t.Errorf("next after restart %d, want %d", v, last+1)
		}
	})
}

func TestLastWriteError(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		var logs bytes.Buffer
		s := drv.open(t, Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
		// A trigger stands in for a full or failing disk, for one key only.
		if _, err := s.db.ExecContext(ctx, boomTrigger[drv.name]); err != nil {
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
	})
}

func TestAppendAuditBatch(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		s := drv.open(t, Options{AuditPerServer: 3})
		if err := s.AppendAuditBatch(ctx, nil); err != nil {
			t.Fatalf("empty batch: %v", err)
		}
		var batch []AuditEntry
		for i := range 5 {
			batch = append(batch, AuditEntry{Server: "a", Tool: fmt.Sprint("t", i), Outcome: "ok"})
			if i < 2 {
				batch = append(batch, AuditEntry{Server: "b", Tool: fmt.Sprint("u", i)})
			}
		}
		if err := s.AppendAuditBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		tools := func(server string) string {
			es, err := s.RecentAudit(ctx, server, 10)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, e := range es {
				out = append(out, e.Tool)
				if e.At.IsZero() {
					t.Errorf("entry %s has no time", e.Tool)
				}
			}
			return strings.Join(out, ",")
		}
		if got := tools("a"); got != "t4,t3,t2" {
			t.Errorf("a = %s, want t4,t3,t2 (newest first, bounded)", got)
		}
		if got := tools("b"); got != "u1,u0" {
			t.Errorf("b = %s, want u1,u0", got)
		}
		if err := s.LastWriteError(); err != nil {
			t.Errorf("LastWriteError = %v", err)
		}
	})
}

func TestDeleteSecrets(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		s := drv.open(t, Options{KeystoreKey: testKey})
		refs := []string{"a%/x", "a%/y", "ab/x", "a_/z", "b/x"}
		for _, r := range refs {
			if err := s.PutSecret(ctx, r, []byte(r)); err != nil {
				t.Fatal(err)
			}
		}
		// % and _ are plain characters in a prefix, not LIKE wildcards.
		if err := s.DeleteSecrets(ctx, "a%/"); err != nil {
			t.Fatal(err)
		}
		for _, r := range refs {
			_, err := s.Secret(ctx, r)
			gone := errors.Is(err, ErrNotFound)
			if want := strings.HasPrefix(r, "a%/"); gone != want {
				t.Errorf("%s: gone=%v (%v), want gone=%v", r, gone, err, want)
			}
		}
		if err := s.DeleteSecrets(ctx, ""); err == nil {
			t.Error("empty prefix: no error")
		}
		if _, err := s.Secret(ctx, "b/x"); err != nil {
			t.Errorf("b/x after refused delete-all: %v", err)
		}
	})
}

// TestDeleteSecret: one ref exactly, not the refs it is a prefix of.
func TestDeleteSecret(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		s := drv.open(t, Options{KeystoreKey: testKey})
		for _, r := range []string{"t/alice/git", "t/alice/github"} {
			if err := s.PutSecret(ctx, r, []byte(r)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.DeleteSecret(ctx, "t/alice/git"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Secret(ctx, "t/alice/git"); !errors.Is(err, ErrNotFound) {
			t.Errorf("t/alice/git after its delete: %v", err)
		}
		if _, err := s.Secret(ctx, "t/alice/github"); err != nil {
			t.Errorf("t/alice/github went with t/alice/git: %v", err)
		}
		if err := s.DeleteSecret(ctx, "t/nobody"); err != nil {
			t.Errorf("deleting what is not there: %v", err)
		}
	})
}

// TestTakeSecret: a taken secret opens once; of takers racing for one
// exactly one gets it. SecretRefs lists refs by prefix, never values.
func TestTakeSecret(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		s := drv.open(t, Options{KeystoreKey: testKey})
		for _, r := range []string{"flow/a", "flow/b", "flows", "token/x"} {
			if err := s.PutSecret(ctx, r, []byte("v-"+r)); err != nil {
				t.Fatal(err)
			}
		}
		refs, err := s.SecretRefs(ctx, "flow/")
		if err != nil || strings.Join(refs, ",") != "flow/a,flow/b" {
			t.Fatalf("SecretRefs(flow/) = %v, %v; want [flow/a flow/b]", refs, err)
		}
		got, err := s.TakeSecret(ctx, "flow/a")
		if err != nil || string(got) != "v-flow/a" {
			t.Fatalf("TakeSecret = %q, %v", got, err)
		}
		if _, err := s.TakeSecret(ctx, "flow/a"); !errors.Is(err, ErrNotFound) {
			t.Errorf("second take: %v, want ErrNotFound", err)
		}
		if _, err := s.Secret(ctx, "flow/a"); !errors.Is(err, ErrNotFound) {
			t.Errorf("a taken secret is still there: %v", err)
		}
		var wg sync.WaitGroup
		var won atomic.Int32
		for range 8 {
			wg.Go(func() {
				if v, err := s.TakeSecret(ctx, "flow/b"); err == nil && string(v) == "v-flow/b" {
					won.Add(1)
				} else if !errors.Is(err, ErrNotFound) {
					t.Errorf("racing take: %v", err)
				}
			})
		}
		wg.Wait()
		if won.Load() != 1 {
			t.Errorf("%d racing takers got the secret, want 1", won.Load())
		}
	})
}

func TestMembers(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		s := drv.open(t, Options{})
		a := Member{Instance: "prod", Replica: "gw-1", AdvertiseURL: "http://gw-1:8080", Engine: "E1", StartedAt: at, HeartbeatAt: at}
		b := Member{Instance: "prod", Replica: "gw-0", AdvertiseURL: "http://gw-0:8080", StartedAt: at, HeartbeatAt: at}
		other := Member{Instance: "staging", Replica: "gw-0", StartedAt: at, HeartbeatAt: at}
		for _, m := range []Member{a, b, other} {
			if err := s.Heartbeat(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		// A later beat with a zero StartedAt keeps when it started.
		beat := Member{Instance: "prod", Replica: "gw-1", AdvertiseURL: "http://10.0.0.7:8080", Engine: "E1", HeartbeatAt: at.Add(time.Second)}
		if err := s.Heartbeat(ctx, beat); err != nil {
			t.Fatal(err)
		}
		beat.StartedAt = at
		s = s.reopen(t, Options{})
		got, err := s.Members(ctx, "prod")
		if want := []Member{b, beat}; err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("members:\n got  %+v (%v)\n want %+v", got, err, want)
		}
		if err := s.DeleteMember(ctx, "prod", "gw-0"); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Members(ctx, "prod"); len(got) != 1 || got[0].Replica != "gw-1" {
			t.Errorf("after delete: %+v", got)
		}
		if got, _ := s.Members(ctx, "staging"); len(got) != 1 {
			t.Errorf("another instance's members changed: %+v", got)
		}
		if err := s.Heartbeat(ctx, Member{Instance: "prod"}); err == nil {
			t.Error("heartbeat without a replica: no error")
		}
	})
}

func TestMigrationsOnBothDrivers(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		s := drv.open(t, Options{})
		count := func() (n int) {
			t.Helper()
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
		s = s.reopen(t, Options{})
		if n := count(); n != len(migrations) {
			t.Errorf("%d migrations recorded after reopening, want %d", n, len(migrations))
		}
		if ds, _ := s.Decisions(ctx); len(ds) != 1 {
			t.Errorf("decisions after reopening: %+v", ds)
		}
		// A database from a newer hangar is refused, naming it.
		if _, err := s.db.ExecContext(ctx, s.dialect.q(`INSERT INTO schema_migrations (version, name, applied_at)
			VALUES (?, 'future', 0)`), latestVersion()+1); err != nil {
			t.Fatal(err)
		}
		path := s.Path()
		_ = s.Close()
		_, err := s.again(t, Options{})
		if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "newer hangar") {
			t.Errorf("newer schema: %v", err)
		}
	})
}

func TestSecretsOnBothDrivers(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		s := drv.open(t, Options{KeystoreKey: testKey})
		plain := []byte("sk-live-PLAINTEXT-must-not-be-stored")
		for _, ref := range []string{"fetch/API_KEY", "fetch/OTHER"} {
			if err := s.PutSecret(ctx, ref, plain); err != nil {
				t.Fatal(err)
			}
		}
		s = s.reopen(t, Options{KeystoreKey: testKey})
		if got, err := s.Secret(ctx, "fetch/API_KEY"); err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("Secret = %q, %v", got, err)
		}
		if _, err := s.Secret(ctx, "absent"); !errors.Is(err, ErrNotFound) {
			t.Errorf("absent secret: %v", err)
		}
		rows, err := s.db.QueryContext(ctx, `SELECT ciphertext FROM keystore ORDER BY ref`)
		if err != nil {
			t.Fatal(err)
		}
		var cts [][]byte
		for rows.Next() {
			var ct []byte
			if err := rows.Scan(&ct); err != nil {
				t.Fatal(err)
			}
			cts = append(cts, ct)
		}
		rows.Close()
		if len(cts) != 2 || bytes.Equal(cts[0], cts[1]) || bytes.Contains(cts[0], plain) {
			t.Errorf("ciphertexts %x: want two distinct, without the plaintext", cts)
		}
		// Another key is refused, not taken for garbage: by Secret, or
		// (PostgreSQL, which replicas share) already by the open.
		_ = s.Close()
		r, err := s.again(t, Options{KeystoreKey: bytes.Repeat([]byte{1}, keySize)})
		if err == nil {
			_, err = r.Secret(ctx, "fetch/API_KEY")
		}
		if !errors.Is(err, ErrKeystoreKey) {
			t.Errorf("another key: %v, want ErrKeystoreKey", err)
		}
	})
}

func TestImportDecisionsOnce(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		s := drv.open(t, Options{})
		if err := s.PutDecision(ctx, Decision{Key: "web", Kind: DecisionApproved, Fingerprint: "newer", At: at}); err != nil {
			t.Fatal(err)
		}
		old := []Decision{
			{Key: "web", Kind: DecisionApproved, Fingerprint: "older", At: at},
			{Key: "api", Kind: DecisionQuarantined, Fingerprint: "f", At: at},
		}
		if ok, err := s.ImportDecisions(ctx, "legacy", old); !ok || err != nil {
			t.Fatalf("first import: %v, %v", ok, err)
		}
		if ok, err := s.ImportDecisions(ctx, "legacy", []Decision{{Key: "x", Kind: DecisionApproved}}); ok || err != nil {
			t.Fatalf("second import: %v, %v", ok, err)
		}
		if done, err := s.Imported(ctx, "legacy"); !done || err != nil {
			t.Errorf("Imported = %v, %v", done, err)
		}
		got, _ := s.Decisions(ctx)
		want := []Decision{old[1], {Key: "web", Kind: DecisionApproved, Fingerprint: "newer", At: at}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("decisions:\n got  %+v\n want %+v", got, want)
		}
	})
}

func TestPackagePins(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		s := drv.open(t, Options{})
		if _, err := s.PackagePin(ctx, "fetch"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("missing pin: %v, want ErrNotFound", err)
		}
		p := PackagePin{Server: "fetch", Type: "pypi", Name: "mcp-server-fetch", Spec: ">=1", Version: "1.2.0",
			Integrity: "sha256:aa", File: "mcp_server_fetch-1.2.0-py3-none-any.whl", Image: "hangar-pkg/x:1.2.0-aa", ResolvedAt: at}
		p2 := p
		p2.Version, p2.Integrity, p2.ResolvedAt = "1.3.0", "sha256:bb", at.Add(time.Hour)
		other := PackagePin{Server: "everything", Type: "npm", Name: "@x/everything", Version: "2.0.0",
			Integrity: "sha512-cc", File: "http://r/@x/everything/-/everything-2.0.0.tgz", Image: "hangar-pkg/y:2.0.0-cc", ResolvedAt: at}
		for _, x := range []PackagePin{p, p2, other} {
			if err := s.PutPackagePin(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
		s = s.reopen(t, Options{})
		if got, err := s.PackagePin(ctx, "fetch"); err != nil || got != p2 {
			t.Errorf("pin: %+v, %v; want %+v", got, err, p2)
		}
		if all, err := s.PackagePins(ctx); err != nil || len(all) != 2 || all[0] != other || all[1] != p2 {
			t.Errorf("pins: %+v, %v", all, err)
		}
		if err := s.DeletePackagePin(ctx, "fetch"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PackagePin(ctx, "fetch"); !errors.Is(err, ErrNotFound) {
			t.Errorf("after delete: %v", err)
		}
		if err := s.PutPackagePin(ctx, PackagePin{}); err == nil {
			t.Error("a pin without a server was stored")
		}
	})
}

func TestHotloads(t *testing.T) {
	conform(t, func(t *testing.T, drv storeDriver) {
		ctx := t.Context()
		s := drv.open(t, Options{})
		if hs, err := s.Hotloads(ctx); err != nil || len(hs) != 0 {
			t.Fatalf("hot-loads of a new store: %+v, %v", hs, err)
		}
		a := Hotload{Name: "io.github.x/fetch", ForceUnverified: true, AllowTools: []string{"get*"}, DenyTools: []string{"get_secret"}, LoadedAt: at}
		b := Hotload{Name: "io.github.x/echo", LoadedAt: at.Add(time.Second)}
		a2 := a
		a2.ForceUnverified, a2.AllowTools = false, []string{"get"}
		for _, h := range []Hotload{a, b, a2} {
			if err := s.PutHotload(ctx, h); err != nil {
				t.Fatal(err)
			}
		}
		s = s.reopen(t, Options{})
		b.AllowTools, b.DenyTools = []string{}, []string{}
		if got, err := s.Hotloads(ctx); err != nil || !reflect.DeepEqual(got, []Hotload{b, a2}) {
			t.Errorf("hot-loads:\n got  %+v (%v)\n want %+v", got, err, []Hotload{b, a2})
		}
		if err := s.DeleteHotload(ctx, b.Name); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Hotloads(ctx); len(got) != 1 || got[0].Name != a.Name {
			t.Errorf("after delete: %+v", got)
		}
		if err := s.ClearHotloads(ctx); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Hotloads(ctx); len(got) != 0 {
			t.Errorf("after clear: %+v", got)
		}
		if err := s.PutHotload(ctx, Hotload{}); err == nil {
			t.Error("a hot-load without a name was stored")
		}
	})
}
