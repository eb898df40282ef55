package batch

import (
	"container/list"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// ContinuationPrefix starts every continuation ID (seed 001).
const ContinuationPrefix = "cont_"

// ErrContinuationFull is returned by Put when the store has no room for
// the data until entries expire or are deleted.
var ErrContinuationFull = errors.New("continuation store is full")

// releaseBytes is how much data leaving the store at once makes it hand
// the memory back to the operating system: a big result would otherwise
// stay resident until the runtime's next forced GC and scavenge, minutes
// later, long after its continuation has gone.
const releaseBytes = 8 << 20

// Cache keeps the full text of truncated results for a while. It is bounded
// by total bytes and by age: entries are removed when they expire (by a
// timer, so that the memory goes when the TTL says, not at the next use),
// and a Put that does not fit is refused rather than evicting a
// continuation a client may be in the middle of reading.
type Cache struct {
	mu       sync.Mutex
	ttl      time.Duration
	maxBytes int
	bytes    int
	order    *list.List // of *entry, oldest first (all share one TTL)
	byID     map[string]*list.Element
	now      func() time.Time
	timer    *time.Timer // expires the oldest entry; nil when empty
	release  func()      // returns freed memory to the OS
}

type entry struct {
	id      string
	data    string
	expires time.Time
}

// NewCache keeps entries for ttl, at most maxBytes in all.
func NewCache(ttl time.Duration, maxBytes int) *Cache {
	return &Cache{ttl: ttl, maxBytes: maxBytes, order: list.New(), byID: map[string]*list.Element{}, now: time.Now, release: debug.FreeOSMemory}
}

// MaxBytes is the store's bound.
func (c *Cache) MaxBytes() int { return c.maxBytes }

// Put stores data and returns its continuation ID, or an error wrapping
// ErrContinuationFull that says how much room there is.
func (c *Cache) Put(data string) (string, error) {
	id := ContinuationPrefix + randomHex(12)
	c.mu.Lock()
	freed := c.expireLocked()
	if c.bytes+len(data) > c.maxBytes {
		used := c.bytes
		c.mu.Unlock()
		c.released(freed)
		if len(data) > c.maxBytes {
			return "", fmt.Errorf("%w: the result's %d bytes are more than it holds in all (%d bytes, batch.max_continuation_bytes)", ErrContinuationFull, len(data), c.maxBytes)
		}
		return "", fmt.Errorf("%w: the result's %d bytes do not fit (%d of %d bytes in use, batch.max_continuation_bytes); fetch and delete continuations or wait for them to expire", ErrContinuationFull, len(data), used, c.maxBytes)
	}
	c.byID[id] = c.order.PushBack(&entry{id: id, data: data, expires: c.now().Add(c.ttl)})
	c.bytes += len(data)
	if c.timer == nil {
		c.timer = time.AfterFunc(c.ttl, c.tick)
	}
	c.mu.Unlock()
	c.released(freed)
	return id, nil
}

// tick expires what is due and re-arms the timer for the next entry.
func (c *Cache) tick() {
	c.mu.Lock()
	freed := c.expireLocked()
	c.timer = nil
	if front := c.order.Front(); front != nil {
		// A little past the expiry, since an entry is kept while now is
		// not After its expiry.
		c.timer = time.AfterFunc(front.Value.(*entry).expires.Sub(c.now())+time.Millisecond, c.tick)
	}
	c.mu.Unlock()
	c.released(freed)
}

func (c *Cache) released(n int) {
	if n >= releaseBytes && c.release != nil {
		c.release()
	}
}

// Get returns the data of id.
func (c *Cache) Get(id string) (string, bool) {
	c.mu.Lock()
	freed := c.expireLocked()
	el, ok := c.byID[id]
	var data string
	if ok {
		data = el.Value.(*entry).data
	}
	c.mu.Unlock()
	c.released(freed)
	return data, ok
}

// Delete removes id and reports whether it was there.
func (c *Cache) Delete(id string) bool {
	c.mu.Lock()
	el, ok := c.byID[id]
	freed := 0
	if ok {
		freed = c.removeLocked(el)
	}
	c.mu.Unlock()
	c.released(freed)
	return ok
}

// Len is the number of entries.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// Bytes is how much data the store holds.
func (c *Cache) Bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

func (c *Cache) expireLocked() (freed int) {
	now := c.now()
	for el := c.order.Front(); el != nil && now.After(el.Value.(*entry).expires); el = c.order.Front() {
		freed += c.removeLocked(el)
	}
	return freed
}

func (c *Cache) removeLocked(el *list.Element) int {
	e := c.order.Remove(el).(*entry)
	delete(c.byID, e.id)
	c.bytes -= len(e.data)
	return len(e.data)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
