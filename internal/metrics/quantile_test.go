package metrics

import (
	"math"
	"testing"
	"time"
)

// The median shown on the dashboard is estimated from the duration
// histogram's buckets.
func TestSummaryMedian(t *testing.T) {
	t.Parallel()
	m := New()
	// 10 calls: 4 of 3 ms (bucket 2.5-5 ms), 6 of 20 ms (bucket 10-25 ms).
	for range 4 {
		m.CallDone("a", "t", "success", 3*time.Millisecond)
	}
	for range 6 {
		m.CallDone("a", "t", "success", 20*time.Millisecond)
	}
	// Only slower than the last finite bucket.
	m.CallDone("slow", "t", "success", 90*time.Second)
	s, err := m.Summarize()
	if err != nil {
		t.Fatal(err)
	}
	// Rank 5 of 10: the first of the 6 in 10-25 ms, 1/6 into it.
	if got, want := s.Servers["a"].LatencyP50Ms, 10+15.0/6; math.Abs(got-want) > 1e-9 {
		t.Errorf("p50 of a = %v ms, want %v", got, want)
	}
	if got := s.Servers["slow"].LatencyP50Ms; got != 60000 {
		t.Errorf("p50 beyond the last bucket = %v ms, want its lower bound 60000", got)
	}
}

// CallCounts are the cumulative figures the dashboard's charts sample:
// calls, errors and the duration buckets per server.
func TestCallCounts(t *testing.T) {
	t.Parallel()
	m := New()
	for range 3 {
		m.CallDone("a", "t", "success", 3*time.Millisecond)
	}
	m.CallDone("a", "u", "tool_error", 20*time.Millisecond)
	m.CallDone("b", "t", "timeout", 2*time.Second)
	c := m.CallCounts()
	a, b := c["a"], c["b"]
	if a.Calls != 4 || a.Errors != 1 || a.Timed != 4 || b.Calls != 1 || b.Errors != 1 || b.Timed != 1 || len(c) != 2 {
		t.Fatalf("counts %+v", c)
	}
	if len(a.Buckets) != len(CallBuckets) || a.Buckets[2] != 0 || a.Buckets[3] != 3 || a.Buckets[5] != 4 || a.Buckets[len(a.Buckets)-1] != 4 {
		t.Errorf("buckets of a %v (bounds %v)", a.Buckets, CallBuckets)
	}
	// The same estimate as the summary's, from the same buckets.
	if got, want := Quantile(0.5, CallBuckets, a.Buckets, a.Timed), 0.0025+0.0025*(2.0/3); math.Abs(got-want) > 1e-12 {
		t.Errorf("p50 of a = %v, want %v", got, want)
	}
	// One call of 2 s, in the 1-2.5 s bucket: 99% into it.
	if got, want := Quantile(0.99, CallBuckets, b.Buckets, b.Timed), 1+1.5*0.99; math.Abs(got-want) > 1e-12 || Quantile(0.5, CallBuckets, nil, 0) != 0 {
		t.Errorf("p99 of b = %v, want %v", got, want)
	}
}
