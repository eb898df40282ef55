package readmodel

import (
	"testing"
	"time"
)

func TestRateMeter(t *testing.T) {
	t.Parallel()
	var r rateMeter
	t0 := time.Unix(1000, 0)
	steps := []struct {
		at    time.Duration
		calls int64
		want  float64
	}{
		{0, 10, 0},                       // first sample: no rate yet
		{2 * time.Second, 30, 10},        // 20 calls in 2 s
		{2500 * time.Millisecond, 35, 5}, // too soon: over the minimum window
		{4 * time.Second, 30, 0},         // counters reset (a restart)
		{6 * time.Second, 30, 0},         // idle
	}
	for i, s := range steps {
		if got := r.rate("a", s.calls, t0.Add(s.at)); got != s.want {
			t.Errorf("step %d: rate %v, want %v", i, got, s.want)
		}
	}
}
