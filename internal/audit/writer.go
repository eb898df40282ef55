// Package audit is the audit trail between its writers (the gateway's call
// path and hangar_* tools, the endpoint's refusals, mcp/*, the dashboard,
// the egress proxy) and the store: the trail's vocabulary of actions,
// outcomes and reasons, how one entry is recorded (record.go: a structured
// log line and the store write), and the Writer that takes the store
// writes off the call path: a tool call hands its entry to a bounded queue
// and returns; one owner goroutine writes the queue in batches, one
// transaction (one fsync) per batch. A full queue drops the entry and
// counts it rather than slowing the call. The log line stays synchronous,
// so nothing is lost from the log.
package audit

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcp-hangar/hangar/internal/store"
)

// Defaults of Options.
const (
	DefaultQueue = 4096
	DefaultBatch = 256
	// DefaultLinger is how long the writer waits for more entries after
	// the first of a batch: one transaction (and fsync) then carries the
	// entries of many calls, not one each.
	DefaultLinger = 50 * time.Millisecond
	// flushTimeout bounds one batch write, and the retries of a batch
	// once the writer is closing.
	flushTimeout = 10 * time.Second
	// Bounds of the backoff between retries while the store is
	// unreachable.
	retryFirst = 100 * time.Millisecond
	retryMax   = 5 * time.Second
)

// ErrQueueFull is AppendAudit's answer for an entry it dropped; the writer
// has counted it and logs the count, so the caller need not.
var ErrQueueFull = errors.New("audit queue full: entry dropped")

// Store is what the writer needs of the durable store (store.SQLite has
// it): batched appends, and reads for RecentAudit.
type Store interface {
	store.AuditBatcher
	RecentAudit(ctx context.Context, server string, limit int) ([]store.AuditEntry, error)
}

// Options tune a Writer.
type Options struct {
	// Queue bounds the entries waiting to be written (DefaultQueue).
	Queue int
	// Batch bounds the entries written in one transaction (DefaultBatch).
	Batch int
	// Linger is how long a batch waits to fill (DefaultLinger; negative:
	// write what is queued at once).
	Linger time.Duration
	// Dropped counts entries dropped because the queue was full
	// (hangar_audit_dropped_total); nil counts them in Dropped only.
	Dropped prometheus.Counter
	Log     *slog.Logger
}

// Writer is a store.Audit whose appends are asynchronous. Run is its one
// owner goroutine.
type Writer struct {
	st      Store
	queue   chan store.AuditEntry
	batch   int
	linger  time.Duration
	metric  prometheus.Counter
	log     *slog.Logger
	dropped atomic.Uint64
	// stopBy is when a closing writer stops retrying an unreachable
	// store (zero while running); only Run's goroutine uses it.
	stopBy time.Time
}

var _ store.Audit = (*Writer)(nil)

// NewDroppedCounter is the hangar_audit_dropped_total counter, registered
// with reg.
func NewDroppedCounter(reg prometheus.Registerer) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "hangar_audit_dropped_total",
		Help: "Audit entries not stored because the audit queue was full (they are in the log).",
	})
	reg.MustRegister(c)
	return c
}

// New returns a writer over st; nothing is written until Run.
func New(st Store, o Options) *Writer {
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	if o.Linger == 0 {
		o.Linger = DefaultLinger
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Writer{st: st, queue: make(chan store.AuditEntry, o.Queue), batch: o.Batch, linger: o.Linger, metric: o.Dropped, log: o.Log}
}

// AppendAudit queues e without waiting; it returns ErrQueueFull (and
// counts e as dropped) when the queue is full. A zero At is stamped now,
// so the entry keeps the time of the call, not of the write.
func (w *Writer) AppendAudit(_ context.Context, e store.AuditEntry) error {
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	select {
	case w.queue <- e:
		return nil
	default:
		w.dropped.Add(1)
		if w.metric != nil {
			w.metric.Inc()
		}
		return ErrQueueFull
	}
}

// RecentAudit reads the store; entries still queued (at most a batch
// write behind) are not in it yet.
func (w *Writer) RecentAudit(ctx context.Context, server string, limit int) ([]store.AuditEntry, error) {
	return w.st.RecentAudit(ctx, server, limit)
}

// Dropped is how many entries were dropped since New.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Run writes queued entries in batches, in the order they were queued,
// until ctx ends; then it writes what is still queued and returns. Run it
// once, as the goroutine that owns the writer, and let the store close
// only after it returned.
func (w *Writer) Run(ctx context.Context) {
	var reported uint64
	for {
		select {
		case e := <-w.queue:
			w.write(ctx, w.gather(ctx, e))
		case <-ctx.Done():
			w.flush(ctx)
			w.reportDrops(&reported)
			return
		}
		w.reportDrops(&reported)
	}
}

// gather is collect that waits up to the linger for the batch to fill
// (or for ctx to end: Close then flushes the rest).
func (w *Writer) gather(ctx context.Context, first store.AuditEntry) []store.AuditEntry {
	if w.linger <= 0 {
		return w.collect(first)
	}
	b := []store.AuditEntry{first}
	t := time.NewTimer(w.linger)
	defer t.Stop()
	for len(b) < w.batch {
		select {
		case e := <-w.queue:
			b = append(b, e)
		case <-t.C:
			return b
		case <-ctx.Done():
			return b
		}
	}
	return b
}

// collect takes first and whatever else is queued, up to a batch.
func (w *Writer) collect(first store.AuditEntry) []store.AuditEntry {
	b := make([]store.AuditEntry, 1, min(w.batch, len(w.queue)+1))
	b[0] = first
	for len(b) < w.batch {
		select {
		case e := <-w.queue:
			b = append(b, e)
		default:
			return b
		}
	}
	return b
}

// flush writes everything queued, batch by batch (ctx has ended).
func (w *Writer) flush(ctx context.Context) {
	for {
		select {
		case e := <-w.queue:
			w.write(ctx, w.collect(e))
		default:
			return
		}
	}
}

// write stores one batch. Its own context: a batch is not cut off because
// the gateway is shutting down. While the store is unreachable
// (store.ErrUnavailable: a PostgreSQL server that is down) the batch is
// retried with backoff, and calls keep queueing behind it; once ctx ends
// the retries stop after flushTimeout. Any other failure is logged (the
// store also keeps it for hangar_health) and the entries stay in the log.
func (w *Writer) write(ctx context.Context, b []store.AuditEntry) {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval = retryFirst, retryMax
	bo.Reset()
	for retried := false; ; retried = true {
		wctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		err := w.st.AppendAuditBatch(wctx, b)
		cancel()
		switch {
		case err == nil:
			if retried {
				w.log.Info("audit entries stored after the store came back", "count", len(b))
			}
			return
		case !errors.Is(err, store.ErrUnavailable):
			w.log.Warn("audit entries not stored", "count", len(b), "error", err)
			return
		case !retried:
			w.log.Warn("audit store unreachable: entries wait in the queue and are retried", "count", len(b),
				"queued", len(w.queue), "queue_max", cap(w.queue), "error", err)
		}
		// Closing: one deadline for all that is left, not one per batch.
		if ctx.Err() != nil && w.stopBy.IsZero() {
			w.stopBy = time.Now().Add(flushTimeout)
		}
		wait, done := bo.NextBackOff(), ctx.Done()
		if !w.stopBy.IsZero() {
			left := time.Until(w.stopBy)
			if left <= 0 {
				w.log.Error("audit entries not stored: the store stayed unreachable through shutdown (they are in the log)",
					"count", len(b), "error", err)
				return
			}
			wait, done = min(wait, left), nil
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-done: // closing: retry now, then against the deadline
			t.Stop()
		}
	}
}

// reportDrops logs the entries dropped since the last report, from the
// owner goroutine, so a full queue costs the calls nothing but a count.
func (w *Writer) reportDrops(reported *uint64) {
	n := w.dropped.Load()
	if n == *reported {
		return
	}
	w.log.Warn("audit queue full: entries dropped from the store (still in the log)",
		"dropped", n-*reported, "dropped_total", n)
	*reported = n
}
