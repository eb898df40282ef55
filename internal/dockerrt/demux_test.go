package dockerrt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/moby/moby/api/pkg/stdcopy"
)

func frame(stream byte, payload string) []byte {
	h := make([]byte, 8)
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(payload)))
	return append(h, payload...)
}

func TestDemux(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("b", 3<<20)
	tests := []struct {
		name           string
		stream         []byte
		stdout, stderr string
		errContains    string
		sameAsStdCopy  bool
	}{
		{"empty", nil, "", "", "", true},
		{"stdout and stderr interleaved", concat(frame(1, "out1 "), frame(2, "err1"), frame(1, "out2")), "out1 out2", "err1", "", true},
		{"stdin frames go to stdout", frame(0, "in"), "in", "", "", true},
		{"empty frame", concat(frame(1, ""), frame(1, "x")), "x", "", "", true},
		{"a frame bigger than any buffer", concat(frame(1, big), frame(2, "e")), big, "e", "", true},
		{"engine error", concat(frame(1, "a"), frame(3, "boom")), "a", "", "error from the engine in the attach stream: boom", false},
		{"unknown stream", frame(7, "x"), "", "", "unknown stream id 7", false},
		{"cut in a header", append(frame(1, "a"), 1, 0, 0), "a", "", "unexpected EOF", false},
		{"cut in a payload", frame(1, "abcdef")[:10], "ab", "", "unexpected EOF", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			err := demux(&out, &errb, bytes.NewReader(tt.stream))
			if tt.errContains == "" && err != nil {
				t.Fatalf("demux: %v", err)
			}
			if tt.errContains != "" && (err == nil || !strings.Contains(err.Error(), tt.errContains)) {
				t.Fatalf("demux error = %v, want %q", err, tt.errContains)
			}
			if out.String() != tt.stdout || errb.String() != tt.stderr {
				t.Errorf("stdout %d bytes %.20q, stderr %q; want %d bytes, %q", out.Len(), out.String(), errb.String(), len(tt.stdout), tt.stderr)
			}
			if tt.sameAsStdCopy {
				var o2, e2 bytes.Buffer
				if _, err := stdcopy.StdCopy(&o2, &e2, bytes.NewReader(tt.stream)); err != nil || o2.String() != out.String() || e2.String() != errb.String() {
					t.Errorf("differs from stdcopy.StdCopy (err %v)", err)
				}
			}
		})
	}
}

// TestStdoutReaderSmallReads: read a few bytes at a time, as a line
// reader over a provider's stdout may, the frames come out whole and in
// order, stderr frames between them are copied as they are reached, and
// an error stays.
func TestStdoutReaderSmallReads(t *testing.T) {
	t.Parallel()
	stream := concat(frame(1, "{\"a\":"), frame(2, "warn\n"), frame(1, ""), frame(1, "1}\n"), frame(2, "bye"), frame(1, "x"))
	var errb bytes.Buffer
	r := newStdoutReader(bytes.NewReader(stream[:len(stream)-1]), &errb) // cut in the last frame
	var out []byte
	buf := make([]byte, 3)
	var err error
	for err == nil {
		var n int
		n, err = r.Read(buf)
		out = append(out, buf[:n]...)
	}
	if string(out) != "{\"a\":1}\n" || errb.String() != "warn\nbye" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("stdout %q, stderr %q, err %v", out, errb.String(), err)
	}
	if n, again := r.Read(buf); n != 0 || !errors.Is(again, io.ErrUnexpectedEOF) {
		t.Errorf("after the error: %d, %v", n, again)
	}
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// The point of demux: memory does not grow with the frame size.
func TestDemuxStreamsLargeFrames(t *testing.T) {
	const size = 64 << 20
	h := frame(1, "")
	binary.BigEndian.PutUint32(h[4:], size)
	// What matters is that no allocation is of the frame's size: count
	// bytes, not allocations, so that whatever else the process allocates
	// meanwhile (other tests' goroutines, the race detector) cannot decide
	// the outcome.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	src := io.MultiReader(bytes.NewReader(h), io.LimitReader(zeros{}, size))
	n := &counter{}
	if err := demux(n, io.Discard, src); err != nil || n.n != size {
		t.Errorf("demux: %v, %d bytes", err, n.n)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Errorf("%d bytes allocated while demultiplexing one 64 MiB frame, want a small buffer's worth", got)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

type counter struct{ n int }

func (c *counter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }
