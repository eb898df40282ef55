package dockerrt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Stream ids of the engine's multiplexed attach stream (as in stdcopy).
const (
	streamStdin  = 0
	streamStdout = 1
	streamStderr = 2
	streamSystem = 3
)

// maxSystemErr bounds how much of an engine error frame is kept.
const maxSystemErr = 64 << 10

// stdoutReader reads the stdout (and stdin) frames of an attach stream,
// frame by frame into the caller's buffer, and copies each stderr frame to
// stderr through a fixed 32 KiB buffer as it comes to one. A stdio
// provider's client reads its answers straight from it: no goroutine and
// pipe between the engine's stream and the reader, one wake-up less per
// answer. Memory does not grow with the frame size (stdcopy.StdCopy grows
// its buffer to the largest frame and keeps it for the life of the
// stream: one 60 MiB answer would pin 60 MiB of the gateway until the
// provider stops). Read returns io.EOF at a clean end of the stream.
type stdoutReader struct {
	src    io.Reader
	stderr io.Writer
	hdr    [8]byte
	left   int64  // bytes of the current stdout frame not yet read
	buf    []byte // for stderr frames, made on the first
	err    error  // sticky
}

func newStdoutReader(src io.Reader, stderr io.Writer) *stdoutReader {
	return &stdoutReader{src: src, stderr: stderr}
}

func (d *stdoutReader) Read(p []byte) (int, error) {
	for d.left == 0 {
		if d.err != nil {
			return 0, d.err
		}
		d.err = d.next()
	}
	if len(p) == 0 {
		return 0, nil
	}
	if int64(len(p)) > d.left {
		p = p[:d.left]
	}
	n, err := d.src.Read(p)
	d.left -= int64(n)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // inside a frame
		}
		d.left, d.err = 0, err
		if n > 0 {
			err = nil // the error comes with the next Read
		}
	}
	return n, err
}

// next reads frame headers until one starts stdout data (d.left > 0),
// copying stderr frames on the way.
func (d *stdoutReader) next() error {
	if _, err := io.ReadFull(d.src, d.hdr[:]); err != nil {
		return err // io.EOF at a clean end, io.ErrUnexpectedEOF cut in a header
	}
	size := int64(binary.BigEndian.Uint32(d.hdr[4:]))
	switch d.hdr[0] {
	case streamStdin, streamStdout:
		d.left = size
		return nil
	case streamStderr:
		if d.buf == nil {
			d.buf = make([]byte, 32<<10)
		}
		n, err := io.CopyBuffer(d.stderr, io.LimitReader(d.src, size), d.buf)
		if err != nil {
			return err
		}
		if n < size {
			return io.ErrUnexpectedEOF
		}
		return nil
	case streamSystem:
		msg := make([]byte, min(size, maxSystemErr))
		if _, err := io.ReadFull(d.src, msg); err != nil {
			return err
		}
		return fmt.Errorf("error from the engine in the attach stream: %s", msg)
	default:
		return fmt.Errorf("attach stream: unknown stream id %d", d.hdr[0])
	}
}

// demux splits an attach stream into stdout and stderr until it ends; it
// returns nil at a clean end of the stream.
func demux(stdout, stderr io.Writer, src io.Reader) error {
	_, err := io.CopyBuffer(stdout, newStdoutReader(src, stderr), make([]byte, 32<<10))
	return err
}
