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
