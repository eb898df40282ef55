package telemetry

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// recorder is an exporter that keeps the size of every batch it gets.
type recorder struct {
	mu       sync.Mutex
	batches  []int
	names    []string
	shutdown bool
	got      chan struct{} // a batch came; buffered
	hold     chan struct{} // when set, an export returns once it is closed
}

func newRecorder() *recorder { return &recorder{got: make(chan struct{}, 64)} }

func (r *recorder) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	r.mu.Lock()
	r.batches = append(r.batches, len(spans))
	for _, s := range spans {
		r.names = append(r.names, s.Name())
	}
	r.mu.Unlock()
	r.got <- struct{}{}
	if r.hold != nil {
		<-r.hold
	}
	return nil
}

func (r *recorder) Shutdown(context.Context) error {
	r.mu.Lock()
	r.shutdown = true
	r.mu.Unlock()
	return nil
}

func (r *recorder) state() ([]int, []string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.batches...), append([]string(nil), r.names...), r.shutdown
}

func ended(tp *sdktrace.TracerProvider, names ...string) {
	for _, n := range names {
		_, s := tp.Tracer("test").Start(context.Background(), n)
		s.End()
	}
}

func TestBatcherExportsFullBatchesAtOnce(t *testing.T) {
	rec := newRecorder()
	// A schedule delay no test waits out: only a full batch, a flush and
	// the shutdown export.
	b := newBatcher(rec, batchOptions{delay: time.Hour, timeout: time.Second, maxQueue: 100, maxExport: 3})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	ended(tp, "a", "b", "c")
	select {
	case <-rec.got:
	case <-time.After(10 * time.Second):
		t.Fatal("a full batch was not exported before the schedule delay")
	}
	if batches, names, _ := rec.state(); len(batches) != 1 || batches[0] != 3 || len(names) != 3 || names[0] != "a" {
		t.Fatalf("after 3 spans with batches of 3: exported %v %v, want one batch [a b c]", batches, names)
	}
	ended(tp, "d")
	if err := tp.ForceFlush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if batches, names, _ := rec.state(); len(batches) != 2 || batches[1] != 1 || names[3] != "d" {
		t.Fatalf("after a flush: exported %v %v, want [3 1] ending in d", batches, names)
	}
	ended(tp, "e", "f")
	if err := tp.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	batches, names, shut := rec.state()
	if len(batches) != 3 || batches[2] != 2 || !shut {
		t.Fatalf("after shutdown: exported %v (exporter shut down: %v), want [3 1 2] and shut down", batches, shut)
	}
	ended(tp, "late")
	if _, after, _ := rec.state(); len(after) != len(names) {
		t.Errorf("a span ended after shutdown was exported: %v", after)
	}
}

func TestBatcherExportsOnItsSchedule(t *testing.T) {
	rec := newRecorder()
	b := newBatcher(rec, batchOptions{delay: 20 * time.Millisecond, timeout: time.Second, maxQueue: 100, maxExport: 50})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ended(tp, "a", "b")
	select {
	case <-rec.got:
	case <-time.After(10 * time.Second):
		t.Fatal("spans short of a batch were never exported")
	}
	if batches, _, _ := rec.state(); len(batches) != 1 || batches[0] != 2 {
		t.Errorf("exported %v, want [2]", batches)
	}
}

func TestBatcherDropsBeyondItsQueueAndSaysSo(t *testing.T) {
	var reported []string
	var mu sync.Mutex
	prev := otel.GetErrorHandler()
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		mu.Lock()
		reported = append(reported, err.Error())
		mu.Unlock()
	}))
	defer otel.SetErrorHandler(prev)

	rec := newRecorder()
	rec.hold = make(chan struct{})
	b := newBatcher(rec, batchOptions{delay: time.Hour, timeout: time.Second, maxQueue: 2, maxExport: 2})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	ended(tp, "a", "b") // a full batch: its export starts and is held
	select {
	case <-rec.got:
	case <-time.After(10 * time.Second):
		t.Fatal("a full batch was not exported")
	}
	ended(tp, "c", "d", "e", "f") // c and d fill the queue again; e and f do not fit
	close(rec.hold)
	if err := tp.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, names, _ := rec.state(); strings.Join(names, " ") != "a b c d" {
		t.Errorf("exported %v, want [a b c d]", names)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 1 || !strings.Contains(reported[0], "2 spans dropped") {
		t.Errorf("reported %q, want one report of 2 spans dropped", reported)
	}
}

func TestBatcherSkipsUnsampledSpans(t *testing.T) {
	rec := newRecorder()
	b := newBatcher(rec, batchOptions{delay: time.Hour, timeout: time.Second, maxQueue: 10, maxExport: 10})
	// Recorded but not sampled: the SDK hands such a span to processors
	// (a never-sampled one it does not), and it must not be exported.
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b), sdktrace.WithSampler(recordOnly{}))
	ended(tp, "a")
	if err := tp.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if batches, _, _ := rec.state(); len(batches) != 0 {
		t.Errorf("an unsampled span was exported: %v", batches)
	}
}

func TestBspOptions(t *testing.T) {
	def := batchOptions{delay: 5 * time.Second, timeout: 30 * time.Second, maxQueue: 2048, maxExport: 512}
	for _, c := range []struct {
		name string
		env  map[string]string
		want batchOptions
	}{
		{"defaults", nil, def},
		{"set", map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_BSP_EXPORT_TIMEOUT": "2500",
			"OTEL_BSP_MAX_QUEUE_SIZE": "4096", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1024"},
			batchOptions{delay: 100 * time.Millisecond, timeout: 2500 * time.Millisecond, maxQueue: 4096, maxExport: 1024}},
		{"not positive integers leave the defaults", map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "5s",
			"OTEL_BSP_EXPORT_TIMEOUT": "-1", "OTEL_BSP_MAX_QUEUE_SIZE": "0", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "x"}, def},
		{"a batch is never larger than the queue", map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "100"},
			batchOptions{delay: 5 * time.Second, timeout: 30 * time.Second, maxQueue: 100, maxExport: 100}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := bspOptions(func(k string) string { return c.env[k] }); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// recordOnly records every span and samples none.
type recordOnly struct{}

func (recordOnly) ShouldSample(sdktrace.SamplingParameters) sdktrace.SamplingResult {
	return sdktrace.SamplingResult{Decision: sdktrace.RecordOnly}
}

func (recordOnly) Description() string { return "RecordOnly" }
