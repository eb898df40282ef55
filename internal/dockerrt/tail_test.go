package dockerrt

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"empty", 16, nil, ""},
		{"under the bound", 16, []string{"abc\n", "def\n"}, "abc\ndef\n"},
		{"partial line kept", 16, []string{"abc\nde"}, "abc\nde"},
		{"front cut to a line boundary", 10, []string{"line1\n", "line2\n", "line3\n"}, "line3\n"},
		{"cut keeps whole lines", 12, []string{"aaaa\nbbbb\n", "cccc\n"}, "bbbb\ncccc\n"},
		{"one big write keeps its tail", 8, []string{"0123456789\nabcdefg\n"}, "abcdefg\n"},
		{"cut without a newline keeps the bytes", 5, []string{"abcdefghij"}, "fghij"},
		{"newline only at the very end keeps all", 6, []string{"xxxxxxxxxxx\n"}, "xxxxx\n"},
		{"many small writes", 6, []string{"a", "b", "c", "d", "e", "f", "g", "h"}, "cdefgh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl := NewTail(tt.max)
			for _, w := range tt.writes {
				n, err := tl.Write([]byte(w))
				if n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := tl.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if len(tl.buf) > tt.max {
				t.Errorf("buffer holds %d bytes, max %d", len(tl.buf), tt.max)
			}
		})
	}
}

// TestTailExactlyFull: a write of exactly max bytes into an empty Tail
// discards nothing, but Write takes the n >= max branch and sets drop, so
// String cuts the first line as if it were a partial one.
func TestTailExactlyFull(t *testing.T) {
	t.Parallel()
	tl := NewTail(10)
	if _, err := tl.Write([]byte("ab\ncdefgh\n")); err != nil { // 10 bytes
		t.Fatal(err)
	}
	if got, want := tl.String(), "ab\ncdefgh\n"; got != want {
		t.Errorf("String() = %q, want %q (nothing was discarded)", got, want)
	}
}

func TestTailLastLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		n    int
		want string
	}{
		{"empty", "", 3, ""},
		{"fewer lines", "one\ntwo\n", 3, "one | two"},
		{"last n", "a\nb\nc\nd\n", 2, "c | d"},
		{"no trailing newline", "a\nb\nc", 2, "b | c"},
		{"trimmed", "  a  \n\tb\t\n", 5, "a | b"},
		{"blank lines skipped", "a\n\n  \nb\n", 5, "a | b"},
		{"traceback", "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: boom\n", 1, "ValueError: boom"},
		{"crlf", "a\r\nb\r\n", 2, "a | b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl := NewTail(1 << 10)
			_, _ = tl.Write([]byte(tt.text))
			if got := tl.LastLines(tt.n); got != tt.want {
				t.Errorf("LastLines(%d) = %q, want %q", tt.n, got, tt.want)
			}
		})
	}
}

func TestTailConcurrentWrites(t *testing.T) {
	t.Parallel()
	tl := NewTail(256)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				fmt.Fprintf(tl, "writer %d line %d\n", i, j)
				_ = tl.String()
				_ = tl.LastLines(2)
			}
		})
	}
	wg.Wait()
	s := tl.String()
	if len(s) > 256 {
		t.Errorf("tail grew to %d bytes", len(s))
	}
	if !strings.HasSuffix(s, "\n") || !strings.HasPrefix(s, "writer ") {
		t.Errorf("tail does not hold whole lines: %q", s)
	}
}

func TestOOMTracker(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(tr *oomTracker) bool
		want bool
	}{
		{"unknown container", func(tr *oomTracker) bool { return tr.take("x", false) }, false},
		{"tracked, no oom", func(tr *oomTracker) bool { tr.track("x"); return tr.take("x", false) }, false},
		{"tracked and marked", func(tr *oomTracker) bool { tr.track("x"); tr.mark("x"); return tr.take("x", false) }, true},
		{"marked before tracked", func(tr *oomTracker) bool { tr.mark("x"); tr.track("x"); return tr.take("x", false) }, true},
		{"marked twice", func(tr *oomTracker) bool { tr.mark("x"); tr.mark("x"); return tr.take("x", false) }, true},
		{"other container marked", func(tr *oomTracker) bool { tr.track("x"); tr.mark("y"); return tr.take("x", false) }, false},
		{"take forgets", func(tr *oomTracker) bool { tr.mark("x"); tr.take("x", false); return tr.take("x", false) }, false},
		{"wait sees an event already there", func(tr *oomTracker) bool { tr.track("x"); tr.mark("x"); return tr.take("x", true) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.run(newOOMTracker()); got != tt.want {
				t.Errorf("take = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOOMTrackerGrace(t *testing.T) {
	t.Parallel()
	t.Run("late event within the grace", func(t *testing.T) {
		t.Parallel()
		tr := newOOMTracker()
		tr.track("c")
		go func() {
			time.Sleep(20 * time.Millisecond)
			tr.mark("c")
		}()
		if !tr.take("c", true) {
			t.Error("an oom event 20ms after the exit was missed")
		}
	})
	t.Run("no event: gives up after the grace", func(t *testing.T) {
		t.Parallel()
		tr := newOOMTracker()
		tr.track("c")
		began := time.Now()
		if tr.take("c", true) {
			t.Error("oom reported without an event")
		}
		if d := time.Since(began); d < oomGrace-10*time.Millisecond || d > 5*time.Second {
			t.Errorf("waited %v, want about %v", d, oomGrace)
		}
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if len(tr.seen) != 0 {
			t.Errorf("tracker still holds %v", tr.seen)
		}
	})
}

func TestEngineState(t *testing.T) {
	t.Parallel()
	var s EngineState
	if s.Available() || s.LastError() != "" {
		t.Errorf("zero state: available %v error %q", s.Available(), s.LastError())
	}
	steps := []struct {
		ok        bool
		err       error
		available bool
		lastErr   string
	}{
		{false, errors.New("Cannot connect to the Docker daemon"), false, "Cannot connect to the Docker daemon"},
		{true, nil, true, ""},
		{false, errors.New("stream cut"), false, "stream cut"},
		{false, nil, false, "stream cut"}, // no new error: the last one stays
		{true, nil, true, ""},
	}
	for i, st := range steps {
		s.set(st.ok, st.err)
		if s.Available() != st.available || s.LastError() != st.lastErr {
			t.Errorf("step %d: available %v error %q, want %v %q", i, s.Available(), s.LastError(), st.available, st.lastErr)
		}
	}
}
