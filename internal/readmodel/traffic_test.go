package readmodel

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-hangar/hangar/internal/metrics"
)

// counts is a server's totals: calls, errors, and every call timed at
// bucket i (an index of metrics.CallBuckets).
func counts(calls, errors int64, bucket int) metrics.CallCounts {
	c := metrics.CallCounts{Calls: calls, Errors: errors, Timed: uint64(calls), Buckets: make([]uint64, len(metrics.CallBuckets))}
	for i := bucket; i < len(c.Buckets); i++ {
		c.Buckets[i] = uint64(calls)
	}
	return c
}

func TestTrafficSamples(t *testing.T) {
	t.Parallel()
	tr := newTraffic(5 * time.Second)
	t0 := time.Unix(1_000_000, 0)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * 5 * time.Second) }
	all := func(string) bool { return true }

	// The first sample is the baseline: what came before is not drawn.
	tr.sample(at(0), map[string]metrics.CallCounts{"a": counts(100, 1, 3)})
	if got := tr.of(all, true); got != nil {
		t.Fatalf("a baseline alone is drawn: %+v", got)
	}
	// 10 calls of up to 5 ms (bucket 3), 2 of them errors.
	tr.sample(at(1), map[string]metrics.CallCounts{"a": counts(110, 3, 3)})
	// b appears: its series were made by its first calls, all in this step.
	tr.sample(at(2), map[string]metrics.CallCounts{"a": counts(110, 3, 3), "b": counts(4, 0, 6)})
	a := tr.of(func(id string) bool { return id == "a" }, true)
	if a == nil || len(a.Points) != 2 {
		t.Fatalf("a: %+v", a)
	}
	p := a.Points[0]
	if !p.At.Equal(at(1)) || p.Calls != 10 || p.Errors != 2 || math.Abs(p.P50Ms-3.75) > 1e-3 || p.P99Ms <= p.P50Ms || p.P99Ms > 5 {
		t.Errorf("a's first step %+v", p)
	}
	if q := a.Points[1]; q.Calls != 0 || q.P50Ms != 0 || q.P99Ms != 0 {
		t.Errorf("an idle step %+v", q)
	}
	if a.PerSecond(10) != 2 {
		t.Errorf("10 calls in 5 s = %v/s", a.PerSecond(10))
	}
	b := tr.of(func(id string) bool { return id == "b" }, true)
	if b == nil || len(b.Points) != 1 || b.Points[0].Calls != 4 || !b.Points[0].At.Equal(at(2)) {
		t.Errorf("b: %+v", b)
	}
	// The sum: calls and errors step by step, no percentiles.
	sum := tr.of(all, false)
	if len(sum.Points) != 2 || sum.Points[1].Calls != 4 || sum.Points[0].Calls != 10 || sum.Points[0].P99Ms != 0 {
		t.Errorf("sum %+v", sum)
	}
	// a is removed and comes back with fresh series: counted from zero.
	tr.sample(at(3), map[string]metrics.CallCounts{"b": counts(4, 0, 6)})
	if got := tr.of(func(id string) bool { return id == "a" }, true); got != nil {
		t.Errorf("a removed, still drawn: %+v", got)
	}
	tr.sample(at(4), map[string]metrics.CallCounts{"a": counts(2, 0, 3), "b": counts(4, 0, 6)})
	if got := tr.of(func(id string) bool { return id == "a" }, true); got == nil || got.Points[0].Calls != 2 {
		t.Errorf("a back: %+v", got)
	}
	// Counters lower than before (a provider replaced under the same ID
	// between two samples): the new totals are the step's.
	tr.sample(at(5), map[string]metrics.CallCounts{"a": counts(1, 1, 3), "b": counts(4, 0, 6)})
	if got := tr.of(func(id string) bool { return id == "a" }, true); got.Points[1].Calls != 1 || got.Points[1].Errors != 1 {
		t.Errorf("a reset: %+v", got.Points)
	}
}

// The ring holds the window: the oldest step goes as a new one comes.
func TestTrafficWindow(t *testing.T) {
	t.Parallel()
	tr := newTraffic(time.Minute) // 15 points
	t0 := time.Unix(2_000_000, 0)
	for i := range 40 {
		tr.sample(t0.Add(time.Duration(i)*time.Minute), map[string]metrics.CallCounts{"a": counts(int64(i), 0, 0)})
	}
	got := tr.of(func(string) bool { return true }, true)
	if len(got.Points) != 15 || !got.Points[0].At.Equal(t0.Add(25*time.Minute)) || !got.Points[14].At.Equal(t0.Add(39*time.Minute)) {
		t.Fatalf("%d points from %v to %v", len(got.Points), got.Points[0].At, got.Points[len(got.Points)-1].At)
	}
	for _, p := range got.Points {
		if p.Calls != 1 {
			t.Errorf("point %+v", p)
		}
	}
}

type callCounter struct{ n atomic.Int64 }

func (c *callCounter) Summarize() (*metrics.Summary, error) { return &metrics.Summary{}, nil }
func (c *callCounter) CallCounts() map[string]metrics.CallCounts {
	return map[string]metrics.CallCounts{"a": counts(c.n.Load(), 0, 2)}
}

// RunTraffic samples every step from the start, until its context ends.
func TestRunTraffic(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		src := &callCounter{}
		m := &Model{Metrics: src, TrafficStep: 2 * time.Second}
		if m.Traffic("a") != nil || m.TrafficOf(nil) != nil {
			t.Fatal("traffic before the sampler runs")
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); m.RunTraffic(ctx) }()
		synctest.Wait()
		for i := range 3 {
			src.n.Add(int64(i + 1))
			time.Sleep(2 * time.Second)
			synctest.Wait()
		}
		got := m.Traffic("a")
		if got == nil || len(got.Points) != 3 || got.Points[0].Calls != 1 || got.Points[2].Calls != 3 || got.Step != 2*time.Second {
			t.Errorf("traffic %+v", got)
		}
		if m.TrafficStepOf() != 2*time.Second || (&Model{}).TrafficStepOf() != DefaultTrafficStep {
			t.Error("step")
		}
		cancel()
		<-done
	})
}
