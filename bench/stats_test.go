package main

import (
	"math"
	"testing"
	"time"
)

func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

func TestPercentileNearestRank(t *testing.T) {
	s := ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	cases := []struct {
		p    float64
		want time.Duration
	}{
		{0, 1 * time.Millisecond},
		{10, 1 * time.Millisecond},
		{11, 2 * time.Millisecond},
		{50, 5 * time.Millisecond},
		{90, 9 * time.Millisecond},
		{99, 10 * time.Millisecond},
		{100, 10 * time.Millisecond},
	}
	for _, c := range cases {
		if got := Percentile(s, c.p); got != c.want {
			t.Errorf("Percentile(1..10, %v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("Percentile(nil) = %v, want 0", got)
	}
}

func TestPercentileHundredSamples(t *testing.T) {
	s := make([]time.Duration, 100)
	for i := range s {
		s[i] = time.Duration(i+1) * time.Microsecond
	}
	if got := Percentile(s, 99); got != 99*time.Microsecond {
		t.Errorf("p99 of 1..100 µs = %v, want 99µs", got)
	}
	if got := Percentile(s, 50); got != 50*time.Microsecond {
		t.Errorf("p50 of 1..100 µs = %v, want 50µs", got)
	}
}

func TestSummarizeUnsortedAndUntouched(t *testing.T) {
	in := ms(9, 1, 5, 3, 7)
	s := Summarize(in)
	if s.N != 5 || s.Min != time.Millisecond || s.Max != 9*time.Millisecond {
		t.Fatalf("summary %+v", s)
	}
	if s.P50 != 5*time.Millisecond || s.P99 != 9*time.Millisecond || s.Mean != 5*time.Millisecond {
		t.Fatalf("summary %+v", s)
	}
	if in[0] != 9*time.Millisecond {
		t.Fatal("Summarize sorted its input in place")
	}
	if (Summarize(nil) != Summary{}) {
		t.Fatal("Summarize(nil) is not zero")
	}
}

func TestRatioAndFormat(t *testing.T) {
	if r := Ratio(3*time.Millisecond, 2*time.Millisecond); r != 1.5 {
		t.Errorf("Ratio = %v", r)
	}
	if r := Ratio(time.Second, 0); !math.IsNaN(r) {
		t.Errorf("Ratio(x, 0) = %v, want NaN", r)
	}
	for d, want := range map[time.Duration]string{
		183 * time.Microsecond:   "183 µs",
		2410 * time.Microsecond:  "2.41 ms",
		41200 * time.Microsecond: "41.2 ms",
		412 * time.Millisecond:   "412 ms",
		1520 * time.Millisecond:  "1.52 s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
	if got := FormatRatio(math.NaN()); got != "n/a" {
		t.Errorf("FormatRatio(NaN) = %q", got)
	}
	if got := MedianInt([]int64{5, 1, 3, 2}); got != 2 {
		t.Errorf("MedianInt = %d, want 2 (lower median)", got)
	}
}
