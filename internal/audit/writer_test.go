package audit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// batchStore records the batches written; with block set, each write
// first reports on entered and waits for block.
type batchStore struct {
	mu      sync.Mutex
	batches [][]store.AuditEntry
	entered chan struct{}
	block   chan struct{}
}

func (s *batchStore) AppendAuditBatch(_ context.Context, es []store.AuditEntry) error {
	if s.block != nil {
		select {
		case s.entered <- struct{}{}:
		default: // nobody waits for the report (later writes)
		}
		<-s.block
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, append([]store.AuditEntry(nil), es...))
	return nil
}

func (s *batchStore) RecentAudit(context.Context, string, int) ([]store.AuditEntry, error) {
	return nil, nil
}

func (s *batchStore) tools() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, b := range s.batches {
		for _, e := range b {
			out = append(out, e.Tool)
		}
	}
	return out
}

func entry(i int) store.AuditEntry { return store.AuditEntry{Server: "s", Tool: fmt.Sprint(i)} }

// run starts w's owner goroutine; stop ends it and waits for its flush.
func run(w *audit.Writer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// TestWriterInOrderAndBatched: every entry arrives once, in order, in
// batches no larger than the bound, stamped with the time it was queued.
func TestWriterInOrderAndBatched(t *testing.T) {
	t.Parallel()
	st := &batchStore{}
	w := audit.New(st, audit.Options{Queue: 2000, Batch: 64, Log: quiet})
	before := time.Now()
	for i := range 1000 {
		if err := w.AppendAudit(t.Context(), entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	stop := run(w)
	stop()
	got := st.tools()
	if len(got) != 1000 {
		t.Fatalf("%d entries stored, want 1000", len(got))
	}
	for i, tool := range got {
		if tool != fmt.Sprint(i) {
			t.Fatalf("entry %d is %s: out of order", i, tool)
		}
	}
	for _, b := range st.batches {
		if len(b) > 64 {
			t.Errorf("a batch of %d, bound 64", len(b))
		}
		if b[0].At.Before(before) || b[0].At.After(time.Now()) {
			t.Errorf("entry time %v not stamped at queueing", b[0].At)
		}
	}
	if len(st.batches) >= 1000/2 {
		t.Errorf("%d batches for 1000 queued entries: not batched", len(st.batches))
	}
}

// TestWriterFullBatchWritesAtOnce: a batch that fills while the writer
// lingers is written then, not when the linger ends.
func TestWriterFullBatchWritesAtOnce(t *testing.T) {
	t.Parallel()
	st := &batchStore{}
	w := audit.New(st, audit.Options{Queue: 100, Batch: 8, Linger: time.Hour, Log: quiet})
	stop := run(w)
	defer stop()
	for i := range 8 {
		if err := w.AppendAudit(t.Context(), entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(st.tools()) < 8 {
		if time.Now().After(deadline) {
			t.Fatalf("stored %v while lingering with a full batch queued", st.tools())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWriterCloseFlushes: entries queued while the owner is busy writing
// are all written by the time Run returns after its context ended.
func TestWriterCloseFlushes(t *testing.T) {
	t.Parallel()
	st := &batchStore{entered: make(chan struct{}, 1), block: make(chan struct{})}
	w := audit.New(st, audit.Options{Queue: 100, Batch: 10, Log: quiet})
	stop := run(w)
	if err := w.AppendAudit(t.Context(), entry(0)); err != nil {
		t.Fatal(err)
	}
	<-st.entered // the owner is writing entry 0
	for i := 1; i <= 25; i++ {
		if err := w.AppendAudit(t.Context(), entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	close(st.block)
	stop()
	if got := st.tools(); len(got) != 26 || got[25] != "25" {
		t.Errorf("stored after Close = %v, want 0…25", got)
	}
}

// TestWriterFullQueueDrops: with the store stuck, a full queue drops new
// entries at once, counts them (metric included) and keeps the queued ones.
func TestWriterFullQueueDrops(t *testing.T) {
	t.Parallel()
	st := &batchStore{entered: make(chan struct{}, 1), block: make(chan struct{})}
	reg := prometheus.NewRegistry()
	metric := audit.NewDroppedCounter(reg)
	w := audit.New(st, audit.Options{Queue: 2, Batch: 10, Dropped: metric, Log: quiet})
	stop := run(w)
	if err := w.AppendAudit(t.Context(), entry(0)); err != nil {
		t.Fatal(err)
	}
	<-st.entered // entry 0 is being written; the store is stuck
	for i := 1; i <= 2; i++ {
		if err := w.AppendAudit(t.Context(), entry(i)); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	done := make(chan error)
	go func() {
		var err error
		for i := 3; i <= 5; i++ {
			err = errors.Join(err, w.AppendAudit(context.Background(), entry(i)))
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, audit.ErrQueueFull) {
			t.Errorf("append to a full queue = %v, want ErrQueueFull", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("AppendAudit blocked on a full queue")
	}
	if w.Dropped() != 3 || counterValue(t, metric) != 3 {
		t.Errorf("dropped = %d, metric %v; want 3", w.Dropped(), counterValue(t, metric))
	}
	close(st.block)
	stop()
	if got := st.tools(); fmt.Sprint(got) != "[0 1 2]" {
		t.Errorf("stored = %v, want [0 1 2]", got)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
