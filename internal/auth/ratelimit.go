package auth

import (
	"container/list"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcp-hangar/hangar/internal/config"
)

// Limiter holds one token bucket per client key (a token's name, a JWT
// subject, or a client address when anonymous). The number of buckets is
// bounded: the least recently used one is dropped first, and buckets idle
// longer than the idle time are dropped as they are passed; no goroutine
// is needed.
//
// Replicas of one instance behind a balancer each hold a Limiter: with a
// share of n (SetShare, the number of live replicas) each bucket admits
// 1/n of the configured rate and burst, so that n replicas together admit
// the configured rate when a client's requests are spread over them, and
// less (never more) when they are not.
type Limiter struct {
	mu      sync.Mutex
	buckets map[string]*list.Element // of *bucket
	lru     list.List                // front: most recently used
	max     int
	idle    time.Duration
	now     func() time.Time
	share   int // > 0
}

type bucket struct {
	key  string
	lim  *rate.Limiter
	conf config.RateLimit
	last time.Time
}

// NewLimiter returns a limiter keeping at most max buckets, each dropped
// after idle without use. now may be nil (time.Now).
func NewLimiter(max int, idle time.Duration, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{buckets: map[string]*list.Element{}, max: max, idle: idle, now: now, share: 1}
}

// SetShare makes each bucket admit 1/n of its configured rate and burst
// (the burst rounded up, at least 1) from now on; n < 1 counts as 1.
func (l *Limiter) SetShare(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.share = max(1, n)
}

// Share is the divisor SetShare set.
func (l *Limiter) Share() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.share
}

// shared is this limiter's part of rl.
func (l *Limiter) shared(rl config.RateLimit) config.RateLimit {
	if l.share == 1 {
		return rl
	}
	return config.RateLimit{RPS: rl.RPS / float64(l.share), Burst: max(1, (rl.Burst+l.share-1)/l.share)}
}

// Allow takes one token from key's bucket, configured by rl. When the
// bucket is empty it returns false and how long until a token is back.
func (l *Limiter) Allow(key string, rl config.RateLimit) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.expire(now)
	rl = l.shared(rl)
	var b *bucket
	if e, ok := l.buckets[key]; ok {
		b = e.Value.(*bucket)
		l.lru.MoveToFront(e)
		if b.conf != rl { // the config was reloaded, or the share changed
			b.lim.SetLimitAt(now, rate.Limit(rl.RPS))
			b.lim.SetBurstAt(now, rl.Burst)
			b.conf = rl
		}
	} else {
		for len(l.buckets) >= l.max {
			oldest := l.lru.Back()
			delete(l.buckets, oldest.Value.(*bucket).key)
			l.lru.Remove(oldest)
		}
		b = &bucket{key: key, lim: rate.NewLimiter(rate.Limit(rl.RPS), rl.Burst), conf: rl}
		l.buckets[key] = l.lru.PushFront(b)
	}
	b.last = now
	r := b.lim.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Duration(math.MaxInt64)
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// expire drops buckets idle for longer than the idle time; they sit at the
// back of the list, so this stops at the first recent one.
func (l *Limiter) expire(now time.Time) {
	for e := l.lru.Back(); e != nil; e = l.lru.Back() {
		b := e.Value.(*bucket)
		if now.Sub(b.last) <= l.idle {
			return
		}
		delete(l.buckets, b.key)
		l.lru.Remove(e)
	}
}

// Active is the number of buckets in use (idle ones are not counted).
func (l *Limiter) Active() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(l.now())
	return len(l.buckets)
}

// RetryAfterSeconds rounds a wait up to whole seconds, at least 1, for
// Retry-After and the -32003 message.
func RetryAfterSeconds(d time.Duration) int {
	if d >= time.Duration(math.MaxInt64)/2 {
		return 3600
	}
	return max(1, int(math.Ceil(d.Seconds())))
}
