package auth

import (
	"fmt"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestLimiterBucket(t *testing.T) {
	t.Parallel()
	c := &clock{time.Unix(1_000_000, 0)}
	l := NewLimiter(10, time.Minute, c.now)
	rl := config.RateLimit{RPS: 2, Burst: 3}
	for i := range 3 {
		if ok, _ := l.Allow("a", rl); !ok {
			t.Fatalf("request %d within the burst refused", i)
		}
	}
	ok, wait := l.Allow("a", rl)
	if ok || wait != 500*time.Millisecond || RetryAfterSeconds(wait) != 1 {
		t.Fatalf("over the burst: %v, wait %s", ok, wait)
	}
	if ok, _ := l.Allow("b", rl); !ok {
		t.Error("another key shares the bucket")
	}
	c.t = c.t.Add(500 * time.Millisecond)
	if ok, _ := l.Allow("a", rl); !ok {
		t.Error("no token back after 1/rps")
	}
	// A refused request does not consume: the wait stays one token's worth.
	if _, wait := l.Allow("a", rl); wait != 500*time.Millisecond {
		t.Errorf("wait = %s", wait)
	}
	// A reloaded limit applies to an existing bucket.
	if _, wait := l.Allow("a", config.RateLimit{RPS: 0.1, Burst: 3}); RetryAfterSeconds(wait) != 10 {
		t.Errorf("after reload wait = %s", wait)
	}
}

func TestLimiterBounded(t *testing.T) {
	t.Parallel()
	c := &clock{time.Unix(1_000_000, 0)}
	l := NewLimiter(3, time.Minute, c.now)
	rl := config.RateLimit{RPS: 1, Burst: 1}
	for i := range 5 {
		l.Allow(fmt.Sprint("k", i), rl)
		c.t = c.t.Add(100 * time.Millisecond)
	}
	if n := l.Active(); n != 3 {
		t.Fatalf("buckets = %d, want the bound 3", n)
	}
	// k4 was used last: it survived, with its token spent.
	if ok, _ := l.Allow("k4", rl); ok {
		t.Error("k4's bucket was dropped instead of the oldest")
	}
	c.t = c.t.Add(2 * time.Minute)
	if n := l.Active(); n != 0 {
		t.Errorf("idle buckets = %d, want 0 after the idle time", n)
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]int{0: 1, time.Millisecond: 1, time.Second: 1, 1001 * time.Millisecond: 2, 100 * time.Second: 100} {
		if got := RetryAfterSeconds(d); got != want {
			t.Errorf("RetryAfterSeconds(%s) = %d, want %d", d, got, want)
		}
	}
}

// TestLimiterShareAcrossReplicas: n replicas, each with a share of n,
// admit together at most the configured rate (plus one burst) +10% when a
// balancer spreads a client's requests over them, and less when it does
// not.
func TestLimiterShareAcrossReplicas(t *testing.T) {
	t.Parallel()
	tests := []struct {
		replicas int
		rl       config.RateLimit
		spread   bool // round-robin; else every request to the first replica
	}{
		{1, config.RateLimit{RPS: 10, Burst: 20}, true},
		{2, config.RateLimit{RPS: 10, Burst: 20}, true},
		{3, config.RateLimit{RPS: 10, Burst: 20}, true},
		{5, config.RateLimit{RPS: 7, Burst: 3}, true},
		{4, config.RateLimit{RPS: 100, Burst: 1}, true},
		{3, config.RateLimit{RPS: 10, Burst: 20}, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d replicas %+v spread=%v", tt.replicas, tt.rl, tt.spread), func(t *testing.T) {
			t.Parallel()
			c := &clock{time.Unix(1_000_000, 0)}
			replicas := make([]*Limiter, tt.replicas)
			for i := range replicas {
				replicas[i] = NewLimiter(10, time.Minute, c.now)
				replicas[i].SetShare(tt.replicas)
			}
			const window = 10 * time.Second
			const every = time.Millisecond // far above any configured rate
			admitted := 0
			for i := 0; time.Duration(i)*every < window; i++ {
				r := replicas[0]
				if tt.spread {
					r = replicas[i%len(replicas)]
				}
				if ok, _ := r.Allow("agent", tt.rl); ok {
					admitted++
				}
				c.t = c.t.Add(every)
			}
			limit := tt.rl.RPS*window.Seconds() + float64(tt.rl.Burst)
			if float64(admitted) > 1.1*limit {
				t.Errorf("admitted %d in %s, want at most %.0f +10%%", admitted, window, limit)
			}
			if tt.spread && float64(admitted) < 0.9*limit {
				t.Errorf("admitted %d in %s, want about %.0f (the configured rate)", admitted, window, limit)
			}
		})
	}
}
