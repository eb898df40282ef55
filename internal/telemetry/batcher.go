package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// batcher is the span processor between the gateway's spans and the OTLP
// exporter: it queues ended spans and exports them in batches, as the
// SDK's batch span processor does, and reads the same OTEL_BSP_* settings.
// It differs in one thing: the SDK's processor hands every ended span over
// a channel to its goroutine, which wakes for each one (two per call here,
// SERVER and CLIENT span), and on a lone call each wake-up costs more CPU
// than the span itself (`make bench` figure 11). Here an ended span is
// appended under a mutex, and the goroutine wakes only when the schedule
// delay is up or a full batch waits.
type batcher struct {
	exp sdktrace.SpanExporter
	o   batchOptions

	mu      sync.Mutex
	queue   []sdktrace.ReadOnlySpan
	dropped int // since the last export, which reports them
	stopped bool

	full  chan struct{} // a full batch waits; buffered 1
	flush chan chan struct{}
	stop  chan struct{}
	done  chan struct{}
}

// batchOptions are the OTEL_BSP_* settings, with the SDK's defaults.
type batchOptions struct {
	delay, timeout      time.Duration
	maxQueue, maxExport int
}

// bspOptions reads OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_EXPORT_TIMEOUT (both
// in milliseconds), OTEL_BSP_MAX_QUEUE_SIZE and
// OTEL_BSP_MAX_EXPORT_BATCH_SIZE as the SDK does: a value that is not a
// positive integer leaves the default, and a batch is never larger than
// the queue.
func bspOptions(getenv func(string) string) batchOptions {
	o := batchOptions{
		delay:     time.Duration(sdktrace.DefaultScheduleDelay) * time.Millisecond,
		timeout:   time.Duration(sdktrace.DefaultExportTimeout) * time.Millisecond,
		maxQueue:  sdktrace.DefaultMaxQueueSize,
		maxExport: sdktrace.DefaultMaxExportBatchSize,
	}
	positive := func(key string) (int, bool) {
		n, err := strconv.Atoi(getenv(key))
		return n, err == nil && n > 0
	}
	if n, ok := positive("OTEL_BSP_SCHEDULE_DELAY"); ok {
		o.delay = time.Duration(n) * time.Millisecond
	}
	if n, ok := positive("OTEL_BSP_EXPORT_TIMEOUT"); ok {
		o.timeout = time.Duration(n) * time.Millisecond
	}
	if n, ok := positive("OTEL_BSP_MAX_QUEUE_SIZE"); ok {
		o.maxQueue = n
	}
	if n, ok := positive("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"); ok {
		o.maxExport = n
	}
	o.maxExport = min(o.maxExport, o.maxQueue)
	return o
}

func newBatcher(exp sdktrace.SpanExporter, o batchOptions) *batcher {
	b := &batcher{exp: exp, o: o, full: make(chan struct{}, 1), flush: make(chan chan struct{}),
		stop: make(chan struct{}), done: make(chan struct{})}
	go b.run()
	return b
}

func newEnvBatcher(exp sdktrace.SpanExporter) *batcher { return newBatcher(exp, bspOptions(os.Getenv)) }

func (b *batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues s; a full queue drops it (as the SDK's processor does,
// without blocking the call).
func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return // after Shutdown: nothing will export it, nor report it
	}
	if len(b.queue) >= b.o.maxQueue {
		b.dropped++
		b.mu.Unlock()
		return
	}
	b.queue = append(b.queue, s)
	full := len(b.queue) >= b.o.maxExport
	b.mu.Unlock()
	if full {
		select {
		case b.full <- struct{}{}:
		default:
		}
	}
}

func (b *batcher) run() {
	defer close(b.done)
	t := time.NewTimer(b.o.delay)
	defer t.Stop()
	for {
		var answer chan struct{}
		select {
		case <-b.stop:
			return
		case <-t.C:
		case <-b.full:
		case answer = <-b.flush:
		}
		b.exportQueued(context.Background())
		if answer != nil {
			close(answer)
		}
		t.Reset(b.o.delay)
	}
}

// exportQueued exports what is queued, a batch at a time, and reports
// the spans dropped since the last export. Only run calls it, and
// Shutdown once run has returned: exports never overlap.
func (b *batcher) exportQueued(ctx context.Context) {
	for {
		b.mu.Lock()
		if b.dropped > 0 {
			otel.Handle(fmt.Errorf("telemetry: %d spans dropped: the span queue was full (OTEL_BSP_MAX_QUEUE_SIZE, %d)", b.dropped, b.o.maxQueue))
			b.dropped = 0
		}
		n := min(len(b.queue), b.o.maxExport)
		if n == 0 {
			b.mu.Unlock()
			return
		}
		batch := make([]sdktrace.ReadOnlySpan, n)
		copy(batch, b.queue)
		rest := copy(b.queue, b.queue[n:])
		clear(b.queue[rest:])
		b.queue = b.queue[:rest]
		b.mu.Unlock()
		ectx, cancel := context.WithTimeout(ctx, b.o.timeout)
		if err := b.exp.ExportSpans(ectx, batch); err != nil {
			otel.Handle(err)
		}
		cancel()
	}
}

// ForceFlush exports everything queued before it returns, or until ctx
// ends.
func (b *batcher) ForceFlush(ctx context.Context) error {
	answer := make(chan struct{})
	select {
	case b.flush <- answer:
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-answer:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown exports what is queued and shuts the exporter down; spans that
// end after it are dropped.
func (b *batcher) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return nil
	}
	b.stopped = true
	b.mu.Unlock()
	close(b.stop)
	<-b.done
	b.exportQueued(ctx)
	return errors.Join(ctx.Err(), b.exp.Shutdown(ctx))
}
