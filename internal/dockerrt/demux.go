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

// demux splits an attach stream into stdout and stderr frame by frame,
// streaming each frame's payload through a fixed 32 KiB buffer. It does
// what stdcopy.StdCopy does, except that StdCopy grows its buffer to the
// largest frame and keeps it for the life of the stream: one 60 MiB answer
// from a provider would pin 60 MiB of the gateway until the provider
// stops. It returns nil at a clean end of the stream.
func demux(stdout, stderr io.Writer, src io.Reader) error {
	var hdr [8]byte
	buf := make([]byte, 32<<10)
	for {
		if _, err := io.ReadFull(src, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		size := int64(binary.BigEndian.Uint32(hdr[4:]))
		var dst io.Writer
		switch hdr[0] {
		case streamStdin, streamStdout:
			dst = stdout
		case streamStderr:
			dst = stderr
		case streamSystem:
			msg := make([]byte, min(size, maxSystemErr))
			if _, err := io.ReadFull(src, msg); err != nil {
				return err
			}
			return fmt.Errorf("error from the engine in the attach stream: %s", msg)
		default:
			return fmt.Errorf("attach stream: unknown stream id %d", hdr[0])
		}
		n, err := io.CopyBuffer(dst, io.LimitReader(src, size), buf)
		if err != nil {
			return err
		}
		if n < size {
			return io.ErrUnexpectedEOF
		}
	}
}
