package store

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/store/pgtest"
)

// syncBuffer is a log sink that goroutines may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func openPG(t *testing.T, cfg PostgresConfig, opts Options) *Postgres {
	t.Helper()
	s, err := OpenPostgres(cfg, withLog(opts))
	if err != nil {
		t.Fatalf("OpenPostgres: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		bad      bool
	}{
		{in: "postgres://hangar@db:5432/hangar?sslmode=require", want: "postgres://hangar@db:5432/hangar?sslmode=require"},
		{in: "postgres://hangar:s3cret@db/hangar", want: "postgres://hangar:xxxxx@db/hangar"},
		{in: "postgresql://db/hangar?password=s3cret&sslmode=disable", want: "postgresql://db/hangar?password=xxxxx&sslmode=disable"},
		{in: "mysql://hangar:s3cret@db/hangar", bad: true},
		{in: "postgres:///hangar", bad: true},
		{in: "host=db password=s3cret", bad: true},
	}
	for _, tt := range tests {
		got, err := RedactURL(tt.in)
		if tt.bad {
			if err == nil || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("RedactURL(%q) = %q, %v; want an error without the password", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("RedactURL(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// TestPostgresPasswordNeverShown: the password (from password_file or in
// the URL) is in no error, log line or Path; the URL names the database.
func TestPostgresPasswordNeverShown(t *testing.T) {
	t.Parallel()
	c := pgtest.Shared(t)
	cfg := pgConfig(t)
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	wrong := filepath.Join(t.TempDir(), "wrong")
	if err := os.WriteFile(wrong, []byte("not-the-password-XYZZY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := cfg
	bad.PasswordFile = wrong
	start := time.Now()
	_, err := OpenPostgres(bad, Options{Log: log})
	if err == nil || strings.Contains(err.Error(), "XYZZY") || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("wrong password: %v", err)
	}
	// Refused at once: a wrong password does not get better by waiting.
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("wrong password took %s to refuse", d)
	}

	missing := cfg
	missing.PasswordFile = filepath.Join(t.TempDir(), "absent")
	if _, err := OpenPostgres(missing, Options{Log: log}); err == nil || !strings.Contains(err.Error(), "store.password_file") {
		t.Errorf("missing password file: %v", err)
	}

	// The password in the URL works, and is shown as xxxxx.
	u, _ := url.Parse(cfg.URL)
	u.User = url.UserPassword(pgtest.User, c.Password)
	inURL := PostgresConfig{URL: u.String(), KeyDir: cfg.KeyDir}
	s := openPG(t, inURL, Options{Log: log})
	if strings.Contains(s.Path(), c.Password) || !strings.Contains(s.Path(), "xxxxx") {
		t.Errorf("Path = %s", s.Path())
	}
	if err := s.PutDecision(t.Context(), Decision{Key: "k", Kind: DecisionApproved}); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if err := s.PutDecision(t.Context(), Decision{Key: "k2", Kind: DecisionApproved}); err == nil ||
		strings.Contains(err.Error(), c.Password) {
		t.Errorf("write after close: %v", err)
	}
	if strings.Contains(logs.String(), c.Password) || strings.Contains(logs.String(), "XYZZY") {
		t.Errorf("a password is in the log:\n%s", logs.String())
	}
}

// TestPostgresReplicasShareOneDatabase: replicas starting together
// migrate once, see each other's writes, and count snapshots without
// handing out a version twice.
func TestPostgresReplicasShareOneDatabase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cfg := pgConfig(t)
	const replicas = 4
	stores := make([]*Postgres, replicas)
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	for i := range replicas {
		wg.Go(func() {
			stores[i], errs[i] = OpenPostgres(cfg, Options{Log: quiet(), KeystoreKey: testKey})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	var n int
	if err := stores[0].db.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(migrations) {
		t.Fatalf("%d migrations recorded (%v), want %d", n, err, len(migrations))
	}
	if err := stores[1].PutInstall(ctx, Install{Name: "fetch", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if err := stores[1].PutSecret(ctx, "fetch/K", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if ins, err := stores[2].Installs(ctx); err != nil || len(ins) != 1 || ins[0].Name != "fetch" {
		t.Errorf("another replica's install: %+v, %v", ins, err)
	}
	if v, err := stores[3].Secret(ctx, "fetch/K"); err != nil || string(v) != "v" {
		t.Errorf("another replica's secret: %q, %v", v, err)
	}

	const each = 25
	seen := make(chan uint64, replicas*each)
	for _, s := range stores {
		wg.Go(func() {
			for range each {
				v, err := s.NextSnapshotVersion(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				seen <- v
			}
		})
	}
	wg.Wait()
	close(seen)
	got := map[uint64]bool{}
	for v := range seen {
		if got[v] {
			t.Errorf("snapshot version %d handed out twice", v)
		}
		got[v] = true
	}
	if v, _ := stores[0].SnapshotVersion(ctx); v != replicas*each || len(got) != replicas*each {
		t.Errorf("snapshot version %d, %d distinct; want %d", v, len(got), replicas*each)
	}
}

// TestPostgresKeystoreKeyMismatch: a replica whose key cannot open the
// shared keystore refuses to start, and one that started before anything
// was sealed cannot seal under its own key afterwards.
func TestPostgresKeystoreKeyMismatch(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cfg := pgConfig(t)
	other := bytes.Repeat([]byte{9}, keySize)
	a := openPG(t, cfg, Options{KeystoreKey: testKey})
	early := openPG(t, cfg, Options{KeystoreKey: other})
	if err := a.PutSecret(ctx, "r", []byte("value")); err != nil {
		t.Fatal(err)
	}
	if err := early.PutSecret(ctx, "r2", []byte("v")); !errors.Is(err, ErrKeystoreKey) {
		t.Errorf("sealing under another key: %v, want ErrKeystoreKey", err)
	}
	if v, err := early.Secret(ctx, "r"); v != nil || !errors.Is(err, ErrKeystoreKey) {
		t.Errorf("reading with another key: %q, %v", v, err)
	}
	_, err := OpenPostgres(cfg, Options{Log: quiet(), KeystoreKey: other})
	if !errors.Is(err, ErrKeystoreKey) || !strings.Contains(err.Error(), KeystoreKeyEnv) {
		t.Errorf("start with another key: %v, want a refusal naming %s", err, KeystoreKeyEnv)
	}
	if v, err := a.Secret(ctx, "r"); err != nil || string(v) != "value" {
		t.Errorf("the first replica's secret: %q, %v", v, err)
	}
}

// TestPostgresStoreDown stops the cluster under an open store: reads and
// writes fail to their callers with a clear error that hangar_health
// shows, nothing acknowledged before is lost, and the store reconnects by
// itself once the server is back.
func TestPostgresStoreDown(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	// Its own cluster: the shared one serves the other tests meanwhile.
	c, err := pgtest.Start(false)
	c = pgtest.Need(t, c, err)
	t.Cleanup(c.Remove)
	u, err := c.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	s := openPG(t, PostgresConfig{URL: u, PasswordFile: c.PasswordFile, KeyDir: t.TempDir()},
		Options{Log: slog.New(slog.NewTextHandler(&logs, nil)), KeystoreKey: testKey})
	// Another replica's change feed, which must reconnect too.
	peer := openPG(t, PostgresConfig{URL: u, PasswordFile: c.PasswordFile, KeyDir: t.TempDir()}, Options{KeystoreKey: testKey})
	feed := peer.Watch(ctx)
	if c := next(t, feed); c.Kind != ChangeResync {
		t.Fatalf("first change %+v, want a resync", c)
	}
	before := Decision{Key: "before", Kind: DecisionApproved, At: at}
	if err := s.PutDecision(ctx, before); err != nil {
		t.Fatal(err)
	}
	if c := next(t, feed); c != (Change{ChangeDecision, "before"}) {
		t.Fatalf("change %+v, want the decision before", c)
	}
	if err := s.Unreachable(); err != nil {
		t.Fatalf("Unreachable before the stop: %v", err)
	}

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		err := s.PutDecision(ctx, Decision{Key: fmt.Sprint("during", i), Kind: DecisionApproved})
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "put decision approved during") ||
			!strings.Contains(err.Error(), s.Path()) || !strings.Contains(err.Error(), "unreachable") {
			t.Fatalf("write %d while down: %v", i, err)
		}
	}
	if _, err := s.Decisions(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("read while down: %v", err)
	}
	if err := s.AppendAuditBatch(ctx, []AuditEntry{{Server: "x"}}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("audit while down: %v", err)
	}
	if s.LastWriteError() == nil || s.Unreachable() == nil {
		t.Errorf("while down: LastWriteError %v, Unreachable %v", s.LastWriteError(), s.Unreachable())
	}

	if err := c.StartAgain(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for s.Unreachable() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("not reconnected 30s after the server came back: %v", s.Unreachable())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The feed reconnected (a resync: notices may have been missed), and
	// then hears the write after the outage.
	if c := next(t, feed); c.Kind != ChangeResync {
		t.Fatalf("change after the outage %+v, want a resync", c)
	}
	after := Decision{Key: "d-after", Kind: DecisionApproved, At: at}
	if err := s.PutDecision(ctx, after); err != nil {
		t.Fatalf("write after reconnect: %v", err)
	}
	if err := s.LastWriteError(); err != nil {
		t.Errorf("LastWriteError after a good write: %v", err)
	}
	if c := next(t, feed); c != (Change{ChangeDecision, "d-after"}) {
		t.Fatalf("change after the outage %+v, want the decision d-after", c)
	}
	got, err := s.Decisions(ctx)
	if err != nil || len(got) != 2 || got[0] != before || got[1] != after {
		t.Errorf("decisions after the outage: %+v, %v; want before and d-after only", got, err)
	}
	for _, want := range []string{"store unreachable", "store reachable again"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log does not say %q:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), c.Password) {
		t.Error("the password is in the log")
	}
}
