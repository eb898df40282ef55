package readmodel

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/mcp-hangar/hangar/internal/metrics"
)

// Traffic over time, for the dashboard's charts. The metrics registry
// keeps totals since each server was registered; a sampler reads them
// every TrafficStep (RunTraffic) and keeps, per server that has been
// called, a ring of what changed in each step over TrafficWindow: calls,
// errors, and the median and 99th percentile of the calls that ended in
// it (from the duration histogram's buckets, as metrics.Quantile
// estimates them). A server never called since the gateway started keeps
// no ring; an idle one's ring fills with zeros without allocating.

// TrafficWindow is how far back the traffic reaches.
const TrafficWindow = 15 * time.Minute

// DefaultTrafficStep is the time between two samples when
// Model.TrafficStep is not set: 180 points over the window.
const DefaultTrafficStep = 5 * time.Second

// TrafficPoint is one step of a server's traffic.
type TrafficPoint struct {
	// At is the end of the step.
	At     time.Time
	Calls  int64
	Errors int64
	// P50Ms and P99Ms estimate the duration of the calls that ended in
	// the step; 0 when none did.
	P50Ms, P99Ms float64
}

// Traffic is a server's (or a sum of servers') traffic over the window,
// oldest point first.
type Traffic struct {
	Step   time.Duration
	Points []TrafficPoint
}

// PerSecond is n calls (or errors) in one step as a rate.
func (t *Traffic) PerSecond(n int64) float64 {
	if t == nil || t.Step <= 0 {
		return 0
	}
	return float64(n) / t.Step.Seconds()
}

// point is a TrafficPoint as the ring keeps it.
type point struct {
	at            int64 // unix milliseconds
	calls, errors uint32
	p50, p99      float32 // milliseconds
}

// ring is one server's traffic.
type ring struct {
	prev   metrics.CallCounts // the totals at the last sample
	points []point            // in time order from next, once full
	next   int
}

func (r *ring) add(p point, size int) {
	if len(r.points) < size {
		r.points = append(r.points, p)
		return
	}
	r.points[r.next] = p
	r.next = (r.next + 1) % size
}

// each calls f with the points in time order.
func (r *ring) each(f func(point)) {
	for i := range r.points {
		f(r.points[(r.next+i)%len(r.points)])
	}
}

// traffic is the sampler's state.
type traffic struct {
	mu      sync.Mutex
	step    time.Duration
	size    int
	sampled bool // a first sample (the baseline) was taken
	rings   map[string]*ring
}

func newTraffic(step time.Duration) *traffic {
	size := int(TrafficWindow / step)
	if size < 2 {
		size = 2
	}
	return &traffic{step: step, size: size, rings: map[string]*ring{}}
}

// sample records the totals read at now: a point per server since the
// previous sample. The first sample is the baseline; a server that
// appears later (its series are created by its first call) had all its
// calls in this step; a server whose series are gone is dropped.
func (t *traffic) sample(now time.Time, totals map[string]metrics.CallCounts) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id := range t.rings {
		if _, ok := totals[id]; !ok {
			delete(t.rings, id)
		}
	}
	at := now.UnixMilli()
	for id, cur := range totals {
		r, ok := t.rings[id]
		if !ok {
			r = &ring{}
			t.rings[id] = r
			if !t.sampled {
				r.prev = cur
				continue
			}
		}
		prev := r.prev
		if cur.Calls < prev.Calls || cur.Timed < prev.Timed {
			prev = metrics.CallCounts{} // the series were reset: a new server of the same ID
		}
		p := point{at: at, calls: uint32(cur.Calls - prev.Calls), errors: uint32(cur.Errors - prev.Errors)}
		if n := cur.Timed - prev.Timed; n > 0 && len(cur.Buckets) == len(metrics.CallBuckets) {
			delta := make([]uint64, len(cur.Buckets))
			for i, c := range cur.Buckets {
				delta[i] = c
				if len(prev.Buckets) == len(cur.Buckets) {
					delta[i] -= prev.Buckets[i]
				}
			}
			p.p50 = float32(metrics.Quantile(0.5, metrics.CallBuckets, delta, n) * 1000)
			p.p99 = float32(metrics.Quantile(0.99, metrics.CallBuckets, delta, n) * 1000)
		}
		r.add(p, t.size)
		r.prev = cur
	}
	t.sampled = true
}

// of is the traffic of the servers keep accepts, summed step by step
// (latency only for a single server: percentiles do not add up); nil
// when none of them has a ring.
func (t *traffic) of(keep func(id string) bool, single bool) *Traffic {
	t.mu.Lock()
	defer t.mu.Unlock()
	byAt := map[int64]*TrafficPoint{}
	for id, r := range t.rings {
		if !keep(id) {
			continue
		}
		r.each(func(p point) {
			tp, ok := byAt[p.at]
			if !ok {
				tp = &TrafficPoint{At: time.UnixMilli(p.at)}
				byAt[p.at] = tp
			}
			tp.Calls += int64(p.calls)
			tp.Errors += int64(p.errors)
			if single {
				tp.P50Ms, tp.P99Ms = float64(p.p50), float64(p.p99)
			}
		})
	}
	if len(byAt) == 0 {
		return nil
	}
	out := &Traffic{Step: t.step, Points: make([]TrafficPoint, 0, len(byAt))}
	for _, p := range byAt {
		out.Points = append(out.Points, *p)
	}
	sort.Slice(out.Points, func(a, b int) bool { return out.Points[a].At.Before(out.Points[b].At) })
	return out
}

// RunTraffic samples the call totals every TrafficStep until ctx ends;
// until it runs, there is no traffic to show.
func (m *Model) RunTraffic(ctx context.Context) {
	src := m.Metrics
	if src == nil {
		return
	}
	step := m.TrafficStepOf()
	t := newTraffic(step)
	t.sample(time.Now(), src.CallCounts())
	m.traffic.Store(t)
	tick := time.NewTicker(step)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			t.sample(now, src.CallCounts())
		}
	}
}

// Traffic is id's traffic over the window; nil when it was not called
// since the gateway started (or nothing samples).
func (m *Model) Traffic(id string) *Traffic {
	t := m.traffic.Load()
	if t == nil {
		return nil
	}
	return t.of(func(s string) bool { return s == id }, true)
}

// TrafficOf is the calls and errors of every server keep accepts (nil
// keeps all), summed; nil when none was called.
func (m *Model) TrafficOf(keep func(id string) bool) *Traffic {
	t := m.traffic.Load()
	if t == nil {
		return nil
	}
	if keep == nil {
		keep = func(string) bool { return true }
	}
	return t.of(keep, false)
}

// TrafficStepOf is the sampler's step (DefaultTrafficStep unless set).
func (m *Model) TrafficStepOf() time.Duration {
	if m.TrafficStep > 0 {
		return m.TrafficStep
	}
	return DefaultTrafficStep
}
