package batch

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// cacheClock is a settable clock for Cache.now.
type cacheClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *cacheClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *cacheClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestCache(ttl time.Duration, maxBytes int) (*Cache, *cacheClock) {
	clk := &cacheClock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	c := NewCache(ttl, maxBytes)
	c.now = clk.now
	return c, clk
}

func TestCachePutGetDelete(t *testing.T) {
	t.Parallel()
	c, _ := newTestCache(time.Minute, 1<<10)
	ids := map[string]bool{}
	for _, data := range []string{"one", "two", ""} {
		id := c.Put(me, data)
		if !strings.HasPrefix(id, ContinuationPrefix) || len(id) != len(ContinuationPrefix)+24 {
			t.Errorf("id %q: want cont_ and 24 hex digits", id)
		}
		if ids[id] {
			t.Errorf("duplicate id %q", id)
		}
		ids[id] = true
		if got, ok := c.Get(me, id); !ok || got != data {
			t.Errorf("Get(%q) = %q %v, want %q", id, got, ok, data)
		}
	}
	if c.Len() != 3 {
		t.Errorf("Len = %d, want 3", c.Len())
	}
	for id := range ids {
		if !c.Delete(me, id) {
			t.Errorf("Delete(%q) = false", id)
		}
		if c.Delete(me, id) {
			t.Errorf("second Delete(%q) = true", id)
		}
		if _, ok := c.Get(me, id); ok {
			t.Errorf("Get(%q) after Delete found it", id)
		}
	}
	if c.Len() != 0 || c.bytes != 0 {
		t.Errorf("after deleting all: Len %d bytes %d", c.Len(), c.bytes)
	}
	if _, ok := c.Get(me, "cont_nothere"); ok {
		t.Error("Get of an unknown id found something")
	}
}

func TestCacheTTL(t *testing.T) {
	t.Parallel()
	c, clk := newTestCache(10*time.Minute, 1<<10)
	old := c.Put(me, "old")
	clk.advance(5 * time.Minute)
	young := c.Put(me, "young")

	clk.advance(5 * time.Minute) // old is exactly at its expiry: still there
	if _, ok := c.Get(me, old); !ok {
		t.Error("entry gone at exactly its TTL")
	}
	clk.advance(time.Nanosecond)
	if _, ok := c.Get(me, old); ok {
		t.Error("entry still there past its TTL")
	}
	if _, ok := c.Get(me, young); !ok {
		t.Error("younger entry expired with the old one")
	}
	if c.Len() != 1 || c.bytes != len("young") {
		t.Errorf("Len %d bytes %d after expiry", c.Len(), c.bytes)
	}
	clk.advance(5 * time.Minute)
	if _, ok := c.Get(me, young); ok {
		t.Error("younger entry still there past its TTL")
	}
	if c.Len() != 0 || c.bytes != 0 {
		t.Errorf("Len %d bytes %d, want empty", c.Len(), c.bytes)
	}
}

func TestCacheExpiresOnPut(t *testing.T) {
	t.Parallel()
	c, clk := newTestCache(time.Second, 1<<10)
	c.Put(me, "a")
	c.Put(me, "b")
	clk.advance(2 * time.Second)
	c.Put(me, "c")
	if c.Len() != 1 || c.bytes != 1 {
		t.Errorf("Len %d bytes %d: expired entries not dropped by Put", c.Len(), c.bytes)
	}
}

func TestCacheByteBound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		maxBytes int
		sizes    []int
		keep     []bool // which of the puts survive, in order
	}{
		{"fits", 10, []int{4, 4}, []bool{true, true}},
		{"exactly full", 8, []int{4, 4}, []bool{true, true}},
		{"oldest out first", 10, []int{4, 4, 4}, []bool{false, true, true}},
		{"several out for a big one", 10, []int{3, 3, 3, 9}, []bool{false, false, false, true}},
		{"only as many as needed", 10, []int{2, 3, 4, 3}, []bool{false, true, true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newTestCache(time.Hour, tt.maxBytes)
			ids := make([]string, len(tt.sizes))
			for i, n := range tt.sizes {
				ids[i] = c.Put(me, strings.Repeat("x", n))
			}
			total := 0
			for i, id := range ids {
				_, ok := c.Get(me, id)
				if ok != tt.keep[i] {
					t.Errorf("put %d (%d bytes) kept = %v, want %v", i, tt.sizes[i], ok, tt.keep[i])
				}
				if ok {
					total += tt.sizes[i]
				}
			}
			if c.bytes != total || c.bytes > tt.maxBytes {
				t.Errorf("bytes = %d, want %d (max %d)", c.bytes, total, tt.maxBytes)
			}
		})
	}
}

func TestCacheDeleteFreesBytes(t *testing.T) {
	t.Parallel()
	c, _ := newTestCache(time.Hour, 10)
	a := c.Put(me, strings.Repeat("a", 6))
	c.Delete(me, a)
	b := c.Put(me, strings.Repeat("b", 6))
	d := c.Put(me, strings.Repeat("d", 4))
	for _, id := range []string{b, d} {
		if _, ok := c.Get(me, id); !ok {
			t.Errorf("entry %s evicted although the deleted one freed its bytes", id)
		}
	}
}

func TestCacheConcurrentUse(t *testing.T) {
	t.Parallel()
	c := NewCache(time.Minute, 1<<12)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 50 {
				id := c.Put(me, strings.Repeat("x", (i+j)%64))
				c.Get(me, id)
				if j%3 == 0 {
					c.Delete(me, id)
				}
				c.Len()
			}
		})
	}
	wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := 0
	for el := c.order.Front(); el != nil; el = el.Next() {
		sum += len(el.Value.(*entry).data)
	}
	if sum != c.bytes || c.bytes > c.maxBytes || len(c.byID) != c.order.Len() {
		t.Errorf("inconsistent cache: bytes %d (sum %d, max %d), byID %d, order %d", c.bytes, sum, c.maxBytes, len(c.byID), c.order.Len())
	}
}
