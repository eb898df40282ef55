// Package retry is the one place that says how hangar retries and waits:
// the backoff policies of its loops (on github.com/cenkalti/backoff/v5) and
// the attempt budget that bounds what one hangar_call entry may cost.
package retry

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// exponential is a doubling backoff from initial to max without jitter:
// the waits are few and per caller, so there is no herd to spread, and
// tests can name them.
func exponential(initial, max time.Duration) *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = initial
	b.MaxInterval = max
	b.Multiplier = 2
	b.RandomizationFactor = 0
	b.Reset()
	return b
}

// Call is the wait between attempts of one hangar_call entry: 100ms
// doubling to 2s.
func Call() backoff.BackOff { return exponential(100*time.Millisecond, 2*time.Second) }

// Reconnect is the wait before reopening a Docker event stream or
// re-pinging an engine that went away: 250ms doubling to 10s, reset by
// the caller once a connection has proved healthy.
func Reconnect() backoff.BackOff { return exponential(250*time.Millisecond, 10*time.Second) }

// Contended is the wait between rounds of taking a contended instance
// lease, while another starter finishes its takeover: 100ms doubling to 1s.
func Contended() backoff.BackOff { return exponential(100*time.Millisecond, time.Second) }

// Check is the wait between tries of a discovered candidate's health
// check during its grace (a container is seen before its server listens):
// 250ms doubling to 2s.
func Check() backoff.BackOff { return exponential(250*time.Millisecond, 2*time.Second) }

// Sleep waits d or until ctx ends; false when ctx ended.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Budget is the number of member calls one hangar_call entry may make,
// its max_attempts, shared by every layer that may call again: the batch
// executor's retries and a group's failover both take from it, so an entry
// never makes more member calls than max_attempts, however they combine.
type Budget struct {
	max  int64
	used atomic.Int64
}

// NewBudget is a budget of n attempts. It travels with the call it bounds
// (call.Request.Budget).
func NewBudget(n int) *Budget { return &Budget{max: int64(n)} }

// Take spends one attempt; false when none is left.
func (b *Budget) Take() bool {
	for {
		u := b.used.Load()
		if u >= b.max {
			return false
		}
		if b.used.CompareAndSwap(u, u+1) {
			return true
		}
	}
}

// Used is how many attempts were spent.
func (b *Budget) Used() int { return int(b.used.Load()) }

// Restart is the wait before restart attempt n (n ≥ 1) of a provider that
// failed to start or crashed: base, doubling, capped at max.
func Restart(base, max time.Duration, n int) time.Duration {
	b := exponential(base, max)
	d := b.NextBackOff()
	for i := 1; i < n && d < max; i++ {
		d = b.NextBackOff()
	}
	return min(d, max)
}
