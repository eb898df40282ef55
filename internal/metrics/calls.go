package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// CallBuckets are the upper bounds, in seconds, of the call duration
// histogram's buckets (hangar_tool_call_duration_seconds).
var CallBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// CallCounts are one server's call figures since it was registered (or
// since the gateway started), as the registry holds them.
type CallCounts struct {
	Calls, Errors int64
	// Buckets are the cumulative counts of the timed calls that took at
	// most each of CallBuckets; Timed counts them all.
	Buckets []uint64
	Timed   uint64
}

// CallCounts reads every server's call counters and duration histogram,
// and nothing else of the registry: what the dashboard's traffic charts
// sample, a few times a minute.
func (m *Metrics) CallCounts() map[string]CallCounts {
	out := map[string]CallCounts{}
	each(m.calls, func(d *dto.Metric) {
		l := labels(d)
		c := out[l[lServer]]
		n := int64(d.GetCounter().GetValue())
		c.Calls += n
		if l[lOutcome] != "success" {
			c.Errors += n
		}
		out[l[lServer]] = c
	})
	each(m.callDuration, func(d *dto.Metric) {
		id := labels(d)[lServer]
		c := out[id]
		h := d.GetHistogram()
		c.Timed = h.GetSampleCount()
		c.Buckets = make([]uint64, len(CallBuckets))
		for i, b := range h.GetBucket() {
			if i < len(c.Buckets) {
				c.Buckets[i] = b.GetCumulativeCount()
			}
		}
		out[id] = c
	})
	return out
}

// each calls f with every series c collects.
func each(c prometheus.Collector, f func(*dto.Metric)) {
	ch := make(chan prometheus.Metric, 64)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	for pm := range ch {
		var d dto.Metric
		if pm.Write(&d) == nil {
			f(&d)
		}
	}
}
