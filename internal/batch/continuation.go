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
	data    string
	expires time.Time
}

// NewCache keeps entries for ttl, at most maxBytes in all.
func NewCache(ttl time.Duration, maxBytes int) *Cache {
	return &Cache{ttl: ttl, maxBytes: maxBytes, order: list.New(), byID: map[string]*list.Element{}, now: time.Now}
}

// Put stores data and returns its continuation ID.
func (c *Cache) Put(data string) string {
	id := ContinuationPrefix + randomHex(12)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	for c.bytes+len(data) > c.maxBytes && c.order.Len() > 0 {
		c.removeLocked(c.order.Front())
	}
	c.byID[id] = c.order.PushBack(&entry{id: id, data: data, expires: c.now().Add(c.ttl)})
	c.bytes += len(data)
	return id
}

// Get returns the data of id.
func (c *Cache) Get(id string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	el, ok := c.byID[id]
	if !ok {
		return "", false
	}
	return el.Value.(*entry).data, true
}

// Delete removes id and reports whether it was there.
func (c *Cache) Delete(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[id]
	if ok {
		c.removeLocked(el)
	}
	return ok
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
