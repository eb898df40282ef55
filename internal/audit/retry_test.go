package audit_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/store/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// downStore is a store that is unreachable until up is called.
type downStore struct {
	batchStore
	mu       sync.Mutex
	up       bool
	attempts int
}

func (s *downStore) AppendAuditBatch(ctx context.Context, es []store.AuditEntry) error {
	s.mu.Lock()
	s.attempts++
	up := s.up
	s.mu.Unlock()
	if !up {
		return fmt.Errorf("store: append audit batch of %d: %w", len(es), store.ErrUnavailable)
	}
	return s.batchStore.AppendAuditBatch(ctx, es)
}

func (s *downStore) setUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.up = true
}

// TestWriterRetriesUnreachableStore: while the store is unreachable calls
// still queue at once, the writer retries with backoff, and every entry
// is stored, in order, once the store is back.
func TestWriterRetriesUnreachableStore(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &downStore{}
		w := audit.New(st, audit.Options{Queue: 100, Batch: 10, Linger: -1, Log: quiet})
		stop := run(w)
		for i := range 25 {
			if err := w.AppendAudit(t.Context(), entry(i)); err != nil {
				t.Fatalf("entry %d while the store is down: %v", i, err)
			}
		}
		time.Sleep(time.Minute) // fake time: many backoff rounds
		synctest.Wait()
		st.mu.Lock()
		attempts := st.attempts
		st.mu.Unlock()
		// Backoff: a minute of retries is a handful of attempts, not a spin.
		if attempts < 5 || attempts > 40 {
			t.Errorf("%d attempts in a minute of backoff", attempts)
		}
		st.setUp()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		stop()
		got := st.tools()
		if len(got) != 25 || got[0] != "0" || got[24] != "24" {
			t.Errorf("stored after the store came back: %v, want 0…24 in order", got)
		}
	})
}

// TestWriterGivesUpAtShutdown: a store still unreachable when the writer
// closes costs the shutdown one flush timeout, not one per batch.
func TestWriterGivesUpAtShutdown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &downStore{}
		var logs strings.Builder
		var mu sync.Mutex
		log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logs.Write(p)
		}), nil))
		w := audit.New(st, audit.Options{Queue: 100, Batch: 5, Linger: -1, Log: log})
		stop := run(w)
		for i := range 30 { // six batches
			_ = w.AppendAudit(t.Context(), entry(i))
		}
		synctest.Wait()
		start := time.Now()
		stop()
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("shutdown with an unreachable store took %s", d)
		}
		mu.Lock()
		defer mu.Unlock()
		if !strings.Contains(logs.String(), "stayed unreachable through shutdown") {
			t.Errorf("the loss is not logged:\n%s", logs.String())
		}
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestWriterOverPostgresOutage: the writer over a real PostgreSQL store
// whose server stops and starts again: appends never wait for it, and
// everything queued during the outage is stored afterwards.
func TestWriterOverPostgresOutage(t *testing.T) {
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
	defer st.Close()
	w := audit.New(st, audit.Options{Queue: 1000, Batch: 50, Log: quiet})
	stop := run(w)
	defer stop()
	if err := w.AppendAudit(t.Context(), entry(0)); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := 1; i <= 200; i++ {
		if err := w.AppendAudit(t.Context(), entry(i)); err != nil {
			t.Fatalf("entry %d during the outage: %v", i, err)
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("200 appends during the outage took %s: they waited for the store", d)
	}
	if err := c.StartAgain(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		es, _ := st.RecentAudit(t.Context(), "s", 1000)
		if len(es) == 201 {
			if es[0].Tool != "200" || es[200].Tool != "0" {
				t.Errorf("order: newest %s, oldest %s", es[0].Tool, es[200].Tool)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 201 entries stored 60s after the server came back", len(es))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
