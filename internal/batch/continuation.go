package batch

import (
	"container/list"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

// ContinuationPrefix starts every continuation ID (seed 001).
const ContinuationPrefix = "cont_"

// Cache keeps the full text of truncated results for a while. It is bounded
// by total bytes (oldest out first) and by age.
type Cache struct {
	mu       sync.Mutex
	ttl      time.Duration
	maxBytes int
	bytes    int
	order    *list.List // of *entry, oldest first
	byID     map[string]*list.Element
	now      func() time.Time
}

type entry struct {
	id      string
	owner   Owner
	data    string
	expires time.Time
}

// NewCache keeps entries for ttl, at most maxBytes in all.
func NewCache(ttl time.Duration, maxBytes int) *Cache {
	return &Cache{ttl: ttl, maxBytes: maxBytes, order: list.New(), byID: map[string]*list.Element{}, now: time.Now}
}

// Put stores data for owner and returns its continuation ID.
func (c *Cache) Put(owner Owner, data string) string {
	id := ContinuationPrefix + randomHex(12)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	for c.bytes+len(data) > c.maxBytes && c.order.Len() > 0 {
		c.removeLocked(c.order.Front())
	}
	c.byID[id] = c.order.PushBack(&entry{id: id, owner: owner, data: data, expires: c.now().Add(c.ttl)})
	c.bytes += len(data)
	return id
}

// Get returns the data of id if owner stored it. An entry of another owner
// is answered exactly like an unknown ID, so that nobody can learn that it
// exists.
func (c *Cache) Get(owner Owner, id string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	el, ok := c.lookupLocked(owner, id)
	if !ok {
		return "", false
	}
	return el.Value.(*entry).data, true
}

// Delete removes id if owner stored it and reports whether it did; like
// Get, it cannot tell another owner's entry from a missing one.
func (c *Cache) Delete(owner Owner, id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.lookupLocked(owner, id)
	if ok {
		c.removeLocked(el)
	}
	return ok
}

func (c *Cache) lookupLocked(owner Owner, id string) (*list.Element, bool) {
	el, ok := c.byID[id]
	if !ok || el.Value.(*entry).owner != owner {
		return nil, false
	}
	return el, true
}

// Len is the number of entries.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func (c *Cache) expireLocked() {
	now := c.now()
	for el := c.order.Front(); el != nil && now.After(el.Value.(*entry).expires); el = c.order.Front() {
		c.removeLocked(el)
	}
}

func (c *Cache) removeLocked(el *list.Element) {
	e := c.order.Remove(el).(*entry)
	delete(c.byID, e.id)
	c.bytes -= len(e.data)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
