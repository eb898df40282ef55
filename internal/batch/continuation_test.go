package batch

import (
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"
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
	c.release = nil
	return c, clk
}

// put is Put for data that must fit.
func put(t *testing.T, c *Cache, data string) string {
	t.Helper()
	id, err := c.Put(me, data)
	if err != nil {
		t.Fatalf("Put(%d bytes): %v", len(data), err)
	}
	return id
}

func TestCachePutGetDelete(t *testing.T) {
	t.Parallel()
	c, _ := newTestCache(time.Minute, 1<<10)
	ids := map[string]bool{}
	for _, data := range []string{"one", "two", ""} {
		id := put(t, c, data)
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
	old := put(t, c, "old")
	clk.advance(5 * time.Minute)
	young := put(t, c, "young")

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
	put(t, c, "a")
	put(t, c, "b")
	clk.advance(2 * time.Second)
	put(t, c, "c")
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
		keep     []bool // which of the puts are stored, in order
	}{
		{"fits", 10, []int{4, 4}, []bool{true, true}},
		{"exactly full", 8, []int{4, 4}, []bool{true, true}},
		{"one byte over is refused", 8, []int{4, 5}, []bool{true, false}},
		{"refused, not evicting", 10, []int{4, 4, 4}, []bool{true, true, false}},
		{"larger than the whole store", 10, []int{11}, []bool{false}},
		{"a small one still fits after a refusal", 10, []int{6, 5, 4}, []bool{true, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newTestCache(time.Hour, tt.maxBytes)
			total := 0
			for i, n := range tt.sizes {
				id, err := c.Put(me, strings.Repeat("x", n))
				if stored := err == nil; stored != tt.keep[i] {
					t.Fatalf("put %d (%d bytes): err = %v, want stored %v", i, n, err, tt.keep[i])
				}
				if err != nil {
					if !errors.Is(err, ErrContinuationFull) || !strings.Contains(err.Error(), "batch.max_continuation_bytes") {
						t.Errorf("put %d: error %q does not say the store is full and which key bounds it", i, err)
					}
					continue
				}
				total += n
				if _, ok := c.Get(me, id); !ok {
					t.Errorf("put %d: stored entry not found", i)
				}
			}
			if c.Bytes() != total || c.Bytes() > tt.maxBytes {
				t.Errorf("bytes = %d, want %d (max %d)", c.Bytes(), total, tt.maxBytes)
			}
		})
	}
}

func TestCacheExpiryTimerFreesMemory(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := NewCache(time.Minute, 64<<20)
		var released atomic.Int32
		c.release = func() { released.Add(1) }
		big := put(t, c, strings.Repeat("x", releaseBytes))
		time.Sleep(30 * time.Second)
		small := put(t, c, "small")
		time.Sleep(30*time.Second + 2*time.Millisecond)
		synctest.Wait()
		if _, ok := c.byID[big]; ok || c.Bytes() != len("small") {
			t.Fatalf("big entry not expired by the timer: bytes %d", c.Bytes())
		}
		if released.Load() != 1 {
			t.Errorf("memory released %d times after a big entry expired, want 1", released.Load())
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if c.Len() != 0 {
			t.Errorf("small entry not expired by the re-armed timer")
		}
		if released.Load() != 1 {
			t.Errorf("memory released again for a small entry")
		}
		_ = small
	})
}

func TestCacheDeleteFreesBytes(t *testing.T) {
	t.Parallel()
	c, _ := newTestCache(time.Hour, 10)
	a := put(t, c, strings.Repeat("a", 6))
	c.Delete(me, a)
	b := put(t, c, strings.Repeat("b", 6))
	d := put(t, c, strings.Repeat("d", 4))
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
				id, err := c.Put(me, strings.Repeat("x", (i+j)%64))
				if err != nil {
					continue // full: a refusal is a valid outcome here
				}
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

// readRef is how hangar_fetch_continuation cut pieces before Cache.Read:
// over the whole data in memory.
func readRef(data string, offset, limit int) (string, int) {
	runeStart := func(i int) int {
		for i > 0 && i < len(data) && !utf8.RuneStart(data[i]) {
			i--
		}
		return i
	}
	off := runeStart(min(offset, len(data)))
	end := runeStart(min(off+limit, len(data)))
	if end == off && off < len(data) {
		_, size := utf8.DecodeRuneInString(data[off:])
		end = off + size
	}
	return data[off:end], off
}

func TestCacheReadInMemoryAndOnDisk(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for b.Len() < diskMin+100 {
		b.WriteString("aé✓😀") // 1, 2, 3 and 4 bytes
	}
	data := b.String()
	mem := NewCache(time.Hour, 1<<30)
	disk := NewCache(time.Hour, 1<<30)
	dir := t.TempDir() + "/cont"
	if err := disk.SetDir(dir); err != nil {
		t.Fatal(err)
	}
	memID, diskID := put(t, mem, data), put(t, disk, data)
	if !disk.OnDisk(len(data)) || mem.OnDisk(len(data)) {
		t.Fatal("OnDisk")
	}
	files, _ := os.ReadDir(dir)
	if len(files) != 1 || files[0].Name() != diskID {
		t.Fatalf("files in the store's dir: %v", files)
	}
	for _, off := range []int{0, 1, 2, 3, 4, 5, 9, 10, 500000, len(data) - 5, len(data) - 1, len(data), len(data) + 7} {
		for _, limit := range []int{1, 2, 3, 4, 7, 500000, 2000000} {
			want, wantOff := readRef(data, off, limit)
			for name, c := range map[string]*Cache{"memory": mem, "disk": disk} {
				id := memID
				if c == disk {
					id = diskID
				}
				got, gotOff, total, ok := c.Read(me, id, off, limit)
				if !ok || got != want || gotOff != wantOff || total != len(data) {
					t.Errorf("%s Read(%d, %d) = %d bytes at %d (total %d, %v), want %d bytes at %d", name, off, limit, len(got), gotOff, total, ok, len(want), wantOff)
				}
			}
		}
	}
	if got, ok := disk.Get(me, diskID); !ok || got != data {
		t.Errorf("Get from disk: %d bytes, %v", len(got), ok)
	}
	if !disk.Delete(me, diskID) {
		t.Fatal("Delete")
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("file left after Delete: %v", files)
	}
	if _, _, _, ok := disk.Read(me, diskID, 0, 10); ok {
		t.Error("Read after Delete found it")
	}
	// Small entries stay in memory even with a dir.
	small := put(t, disk, "tiny")
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("a small entry went to disk: %v", files)
	}
	if got, _, _, ok := disk.Read(me, small, 0, 10); !ok || got != "tiny" {
		t.Errorf("small entry = %q", got)
	}
}

func TestCacheDiskEntriesExpire(t *testing.T) {
	t.Parallel()
	c, clk := newTestCache(time.Minute, 1<<30)
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/cont_left_by_an_earlier_run", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.SetDir(dir); err != nil {
		t.Fatal(err)
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("SetDir kept files of an earlier run: %v", files)
	}
	put(t, c, strings.Repeat("d", diskMin))
	clk.advance(2 * time.Minute)
	put(t, c, "trigger expiry")
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("expired entry's file still there: %v", files)
	}
	if c.Bytes() != len("trigger expiry") {
		t.Errorf("bytes = %d", c.Bytes())
	}
}
