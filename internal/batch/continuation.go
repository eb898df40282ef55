package batch

import (
	"container/list"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/forward"
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
	// dir holds entries of diskMin bytes or more as files, so a big result
	// is not resident while it waits to be fetched; "" keeps all in memory.
	dir      string
	mu       sync.Mutex
	ttl      time.Duration
	maxBytes int
	bytes    int
	order    *list.List // of *entry, oldest first (all share one TTL)
	byID     map[string]*list.Element
	now      func() time.Time
	timer    *time.Timer // expires the oldest entry; nil when empty
	release  func()      // returns freed memory to the OS
	// replica is named in every id (forward.ID); "" without replicas.
	replica string
}

// SetReplica makes every continuation ID name replica, so that another
// replica passes a request carrying it here (package forward).
func (c *Cache) SetReplica(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.replica = name
}

type entry struct {
	id      string
	owner   Owner
	data    string // in memory; or
	file    string // on disk
	size    int
	expires time.Time
}

// diskMin is the size from which an entry goes to the directory, if set.
const diskMin = 1 << 20

// SetDir keeps entries of 1 MiB or more as files in dir, which it creates
// and empties (files left by an earlier run are of no use: their IDs died
// with it). Call it before the first Put.
func (c *Cache) SetDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("continuation dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("continuation dir: %w", err)
	}
	c.mu.Lock()
	c.dir = dir
	c.mu.Unlock()
	return nil
}

// OnDisk reports whether data of n bytes is kept as a file: then the
// store holds no reference to the caller's string.
func (c *Cache) OnDisk(n int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dir != "" && n >= diskMin
}

// NewCacheFor is the continuation store the config's batch section sizes
// (10 minutes and 256 MiB where it says nothing); its bound and TTL take
// effect at start, not on reload.
func NewCacheFor(b config.Batch) *Cache {
	ttl, size := 10*time.Minute, 256<<20
	if b.ContinuationTTL > 0 {
		ttl = b.ContinuationTTL
	}
	if b.MaxContinuationBytes > 0 {
		size = b.MaxContinuationBytes
	}
	return NewCache(ttl, size)
}

// NewCache keeps entries for ttl, at most maxBytes in all.
func NewCache(ttl time.Duration, maxBytes int) *Cache {
	return &Cache{ttl: ttl, maxBytes: maxBytes, order: list.New(), byID: map[string]*list.Element{}, now: time.Now, release: releaseMemory}
}

// releaseMemory collects twice before handing free memory back: buffers
// that encoded the big answer sit in encoding/json's sync.Pool, which only
// the second collection after their last use empties.
func releaseMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// MaxBytes is the store's bound.
func (c *Cache) MaxBytes() int { return c.maxBytes }

// Put stores data for owner and returns its continuation ID, or an error wrapping
// ErrContinuationFull that says how much room there is.
func (c *Cache) Put(owner Owner, data string) (string, error) {
	c.mu.Lock()
	id := forward.ID(ContinuationPrefix+randomHex(12), c.replica)
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
	e := &entry{id: id, owner: owner, data: data, size: len(data), expires: c.now().Add(c.ttl)}
	if c.dir != "" && len(data) >= diskMin {
		// Reserved under the lock, written outside it.
		e.file, e.data = filepath.Join(c.dir, id), ""
	}
	c.bytes += len(data)
	if e.file != "" {
		dir := c.dir
		c.mu.Unlock()
		err := os.WriteFile(e.file, unsafe.Slice(unsafe.StringData(data), len(data)), 0o600)
		c.mu.Lock()
		if err != nil {
			c.bytes -= len(data)
			c.mu.Unlock()
			_ = os.Remove(e.file)
			c.released(freed)
			return "", fmt.Errorf("continuation store: writing %d bytes to %s: %w", len(data), dir, err)
		}
	}
	c.byID[id] = c.order.PushBack(e)
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

// Get returns the data of id if owner stored it. An entry of another owner
// is answered exactly like an unknown ID, so that nobody can learn that it
// exists.
func (c *Cache) Get(owner Owner, id string) (string, bool) {
	c.mu.Lock()
	freed := c.expireLocked()
	el, ok := c.lookupLocked(owner, id)
	var e entry
	if ok {
		e = *el.Value.(*entry)
	}
	c.mu.Unlock()
	c.released(freed)
	if !ok || e.file == "" {
		return e.data, ok
	}
	b, err := os.ReadFile(e.file)
	if err != nil {
		return "", false // deleted or expired meanwhile
	}
	return string(b), true
}

// Read returns the piece of id's data that starts at offset and is at
// most limit bytes, both moved back to the start of a UTF-8 sequence (a
// piece never splits a character; one longer than limit is returned
// whole), the offset it starts at, and the data's total size. An entry on
// disk is read only around the piece. Like Get, another owner's entry is
// not found.
func (c *Cache) Read(owner Owner, id string, offset, limit int) (piece string, off, total int, found bool) {
	c.mu.Lock()
	freed := c.expireLocked()
	el, ok := c.lookupLocked(owner, id)
	var e entry
	if ok {
		e = *el.Value.(*entry)
	}
	c.mu.Unlock()
	c.released(freed)
	if !ok {
		return "", 0, 0, false
	}
	total = e.size
	offset = min(max(offset, 0), total)
	// A window with room for a character on either side of the piece.
	lo, hi := max(offset-utf8.UTFMax, 0), min(offset+limit+utf8.UTFMax, total)
	window := e.data
	if e.file != "" {
		f, err := os.Open(e.file)
		if err != nil {
			return "", 0, 0, false
		}
		defer f.Close()
		b := make([]byte, hi-lo)
		if _, err := f.ReadAt(b, int64(lo)); err != nil && !errors.Is(err, io.EOF) {
			return "", 0, 0, false
		}
		window = unsafe.String(unsafe.SliceData(b), len(b))
	} else {
		window = window[lo:hi]
	}
	// Positions below are relative to the window; its ends are only
	// trusted as boundaries where they are the data's ends.
	start := runeStartIn(window, offset-lo, lo == 0)
	end := runeStartIn(window, min(start+limit, len(window)), hi == total)
	if end == start && lo+start < total {
		_, size := utf8.DecodeRuneInString(window[start:])
		end = start + size
	}
	return window[start:end], lo + start, total, true
}

// runeStartIn moves i back to the start of the UTF-8 sequence it falls in;
// atEnd says whether len(s) is the end of the data.
func runeStartIn(s string, i int, atEnd bool) int {
	if i >= len(s) && atEnd {
		return len(s)
	}
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// Delete removes id if owner stored it and reports whether it did; like
// Get, it cannot tell another owner's entry from a missing one.
func (c *Cache) Delete(owner Owner, id string) bool {
	c.mu.Lock()
	el, ok := c.lookupLocked(owner, id)
	freed := 0
	if ok {
		freed = c.removeLocked(el)
	}
	c.mu.Unlock()
	c.released(freed)
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
	c.bytes -= e.size
	if e.file != "" {
		_ = os.Remove(e.file)
	}
	// Also for a file: the memory that carried the big result through the
	// gateway is free by now but still resident until released.
	return e.size
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
