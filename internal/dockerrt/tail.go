package dockerrt

import (
	"strings"
	"sync"
)

// Tail keeps the last bytes written to it; a provider's stderr goes here so
// that errors and hangar_details can show what the process said last without
// the gateway's memory growing with a chatty provider.
type Tail struct {
	mu   sync.Mutex
	max  int
	buf  []byte
	drop bool // something was discarded from the front
}

// NewTail returns a Tail that keeps at most max bytes.
func NewTail(max int) *Tail { return &Tail{max: max} }

// Write implements io.Writer; it never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if n >= t.max {
		t.drop = t.drop || len(t.buf) > 0 || n > t.max
		t.buf = append(t.buf[:0], p[n-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + n - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.drop = true
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns the kept text, starting at a line boundary when the front
// was cut.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.buf)
	if t.drop {
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
			s = s[i+1:]
		}
	}
	return s
}

// LastLines returns at most n trailing lines, trimmed, joined with " | " for
// use inside a one-line error message.
func (t *Tail) LastLines(n int) string {
	lines := strings.Split(strings.TrimRight(t.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, " | ")
}
