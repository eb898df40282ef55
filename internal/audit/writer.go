// Package audit is the audit trail between its writers (the gateway's call
// path and hangar_* tools, the endpoint's refusals, mcp/*, the dashboard,
// the egress proxy) and the store: the trail's vocabulary of actions,
// outcomes and reasons, how one entry is recorded (record.go: a structured
// log line and the store write), and the Writer that takes the store
// writes off the call path: a tool call hands its entry to a bounded queue
// and returns; one owner goroutine writes the queue in batches, one
// transaction (one fsync) per batch. A full queue drops the entry and
// counts it rather than slowing the call. The log line stays synchronous,
// so nothing is lost from the log. With a spool (Options.Spool, a file in
// the data dir: spool.go) every queued entry is on disk before the call
// returns, and a gateway killed before its batch was written stores it at
// its next start.
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
	// Spool is the file that keeps queued entries across a kill ("" keeps
	// them in memory only); SpoolRotateAt is the size past which it is
	// emptied once all it holds is stored (default 4 MiB).
	Spool         string
	SpoolRotateAt int64
}

// Writer is a store.Audit whose appends are asynchronous. Run is its one
// owner goroutine.
type Writer struct {
	st    Store
	queue chan spooled
	full  chan struct{} // a batch is queued: gather need not linger
	// spool, when set, holds every queued entry on disk; replay is what it
	// held at New that was not stored, which Run writes first.
	spool   *spool
	replay  []spooled
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
	w := &Writer{st: st, queue: make(chan spooled, o.Queue), full: make(chan struct{}, 1), batch: o.Batch, linger: o.Linger, metric: o.Dropped, log: o.Log}
	if o.Spool != "" {
		sp, pending, err := openSpool(o.Spool, o.SpoolRotateAt)
		if err != nil {
			// The trail still reaches the store and the log; only a kill
			// can lose the entries in memory.
			o.Log.Error("audit spool unusable: queued entries are kept in memory only", "path", o.Spool, "error", err)
		} else {
			w.spool, w.replay = sp, pending
		}
	}
	return w
}

// AppendAudit queues e without waiting; it returns ErrQueueFull (and
// counts e as dropped) when the queue is full. A zero At is stamped now,
// so the entry keeps the time of the call, not of the write.
func (w *Writer) AppendAudit(_ context.Context, e store.AuditEntry) error {
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	if sp := w.spool; sp != nil {
		// One lock orders the file and the queue alike; only appends fill
		// the queue, so the room seen here is still there at the send.
		sp.mu.Lock()
		defer sp.mu.Unlock()
		if len(w.queue) == cap(w.queue) {
			return w.drop()
		}
		end, err := sp.append(e)
		if err != nil {
			w.log.Warn("audit spool write failed: entry queued in memory only", "error", err)
			end = 0
		}
		w.queue <- spooled{e: e, end: end}
		w.queued()
		return nil
	}
	select {
	case w.queue <- spooled{e: e}:
		w.queued()
		return nil
	default:
		return w.drop()
	}
}

func (w *Writer) drop() error {
	w.dropped.Add(1)
	if w.metric != nil {
		w.metric.Inc()
	}
	return ErrQueueFull
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
	if len(w.replay) > 0 {
		w.log.Info("audit entries of an earlier run, not stored before it ended, are stored now", "count", len(w.replay))
		for len(w.replay) > 0 {
			n := min(w.batch, len(w.replay))
			w.write(ctx, w.replay[:n])
			w.replay = w.replay[n:]
		}
		w.replay = nil
	}
	if w.spool != nil {
		defer func() {
			if err := w.spool.close(); err != nil {
				w.log.Warn("audit spool close", "error", err)
			}
		}()
	}
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

// gather is collect after the linger, or as soon as a batch is queued (or
// ctx ends: Close then flushes the rest). The writer sleeps meanwhile
// rather than taking entries one by one: an append then wakes nobody, and
// the call that made it pays no hand-off to this goroutine.
func (w *Writer) gather(ctx context.Context, first spooled) []spooled {
	if w.linger <= 0 {
		return w.collect(first)
	}
	t := time.NewTimer(w.linger)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.full:
	case <-ctx.Done():
	}
	return w.collect(first)
}

// queued tells gather, once, that a batch is waiting.
func (w *Writer) queued() {
	if len(w.queue) >= w.batch {
		select {
		case w.full <- struct{}{}:
		default:
		}
	}
}

// collect takes first and whatever else is queued, up to a batch.
func (w *Writer) collect(first spooled) []spooled {
	b := make([]spooled, 1, min(w.batch, len(w.queue)+1))
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
func (w *Writer) write(ctx context.Context, q []spooled) {
	b := make([]store.AuditEntry, len(q))
	for i := range q {
		b[i] = q[i].e
	}
	// Past the batch in the spool once it is stored, or given up for
	// good (it is in the log); not when the store stayed unreachable
	// through shutdown: the next start stores it.
	settled := func() {
		if w.spool == nil || q[len(q)-1].end == 0 {
			return
		}
		if err := w.spool.stored(q[len(q)-1].end); err != nil {
			w.log.Warn("audit spool: stored offset not recorded (entries may be stored twice)", "error", err)
		}
	}
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
			settled()
			return
		case !errors.Is(err, store.ErrUnavailable):
			w.log.Warn("audit entries not stored", "count", len(b), "error", err)
			settled()
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
				msg := "audit entries not stored: the store stayed unreachable through shutdown (they are in the log)"
				if w.spool != nil {
					msg = "audit entries not stored: the store stayed unreachable through shutdown (the spool keeps them for the next start)"
				}
				w.log.Error(msg, "count", len(b), "error", err)
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
