package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Summary describes a set of latency samples.
type Summary struct {
	N                             int
	Min, P50, P90, P99, Max, Mean time.Duration
}

// Percentile returns the nearest-rank percentile p (0 < p <= 100) of
// samples that are already sorted ascending: the smallest sample such that
// at least p% of the samples are <= it. It returns 0 for no samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if p <= 0 {
		return sorted[0]
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// Summarize sorts a copy of samples and returns their summary.
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Summary{
		N:    len(s),
		Min:  s[0],
		P50:  Percentile(s, 50),
		P90:  Percentile(s, 90),
		P99:  Percentile(s, 99),
		Max:  s[len(s)-1],
		Mean: sum / time.Duration(len(s)),
	}
}

// Ratio is a/b, or NaN when b is zero.
func Ratio(a, b time.Duration) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// Median of float values (used for RSS readings); 0 for none.
func MedianInt(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// FormatDuration renders a latency with about three significant digits:
// "183 µs", "2.41 ms", "412 ms", "1.52 s".
func FormatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// FormatRatio renders a ratio as "1.23×" ("n/a" when undefined).
func FormatRatio(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", r)
}

// FormatMB renders bytes as MB. An MB is 10^6 bytes everywhere in the
// bench, targets and figures alike; /proc's "kB" are KiB, and readStatus
// turns them into bytes first.
func FormatMB(b int64) string {
	return fmt.Sprintf("%.1f MB", float64(b)/1e6)
}
