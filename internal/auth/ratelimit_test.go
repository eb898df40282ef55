package auth

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
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

// TestForwardedNotCountedTwice: a request another replica forwarded (and
// counted) passes the limiter here; one whose proof does not hold is
// refused with 403 and audited with the reason.
func TestForwardedNotCountedTwice(t *testing.T) {
	t.Parallel()
	h := &HTTP{
		Auth:           NewAuthenticator(t.Context(), config.Auth{}, Options{}),
		Limiter:        NewLimiter(10, time.Minute, nil),
		RateLimit:      config.RateLimit{RPS: 0.001, Burst: 1},
		AllowAnonymous: true,
		Forwarded: func(r *http.Request) (bool, string) {
			switch r.Header.Get("X-Proven") {
			case "":
				return false, ""
			case "yes":
				return true, ""
			}
			return false, "proof_replayed"
		},
		Log: slog.New(slog.DiscardHandler),
	}
	var refusals []Refusal
	h.Audit = func(_ *http.Request, f Refusal) { refusals = append(refusals, f) }
	ok := h.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	status := func(headers ...string) int {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		r.RemoteAddr = "192.0.2.7:4000"
		for i := 0; i+1 < len(headers); i += 2 {
			r.Header.Set(headers[i], headers[i+1])
		}
		w := httptest.NewRecorder()
		ok.ServeHTTP(w, r)
		return w.Code
	}
	if s := status(); s != http.StatusOK {
		t.Fatalf("first request: %d", s)
	}
	if s := status(); s != http.StatusTooManyRequests {
		t.Fatalf("second request: %d, want 429 (burst 1)", s)
	}
	for i := range 3 {
		if s := status("X-Proven", "yes"); s != http.StatusOK {
			t.Errorf("forwarded request %d: %d, want it passed (counted where it landed)", i, s)
		}
	}
	refusals = nil
	if s := status("X-Proven", "no"); s != http.StatusForbidden {
		t.Errorf("a request claiming to be forwarded: %d, want 403", s)
	}
	if len(refusals) != 1 || refusals[0].Status != http.StatusForbidden || refusals[0].Reason != "forward_refused: proof_replayed" {
		t.Errorf("audited %+v, want one 403 forward_refused: proof_replayed", refusals)
	}
}
