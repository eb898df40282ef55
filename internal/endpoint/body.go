package endpoint

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/auth"
)

var (
	errBodyTooLarge   = errors.New("request body too large")
	errBodyOverLength = errors.New("request body longer than its Content-Length")
)

// readUpTo reads all of body if it is at most n bytes; size is the
// announced Content-Length (-1: unknown).
func readUpTo(body io.Reader, size, n int64) ([]byte, error) {
	if size > 0 && size <= n {
		// The announced length: one buffer of exactly that size (a
		// bytes.Buffer would first grow a small one by 512 bytes, a
		// second allocation per request), then a read that must see the
		// end, as net/http's body reader holds the body to its length.
		buf := make([]byte, size)
		if _, err := io.ReadFull(body, buf); err != nil {
			return nil, err
		}
		var one [1]byte
		switch k, err := body.Read(one[:]); {
		case k > 0:
			return nil, errBodyOverLength
		case err != nil && err != io.EOF:
			return nil, err
		}
		return buf, nil
	}
	buf := bytes.NewBuffer(make([]byte, 0, 512))
	got, err := buf.ReadFrom(io.LimitReader(body, n+1))
	if err != nil {
		return nil, err
	}
	if got > n {
		return nil, errBodyTooLarge
	}
	return buf.Bytes(), nil
}

// What is read and thrown away of a body after its 413, so that the
// client, still sending, reads the answer instead of a connection reset:
// closing a socket with unread data resets it. Bounded in time and size; a
// client that sends more only gets the reset.
const (
	drainTime  = time.Second
	drainBytes = 64 << 20
)

func tooLarge(w http.ResponseWriter, r *http.Request, n int64) {
	// The connection is closed after this answer: whatever was not
	// drained is never read.
	w.Header().Set("Connection", "close")
	// Full duplex: net/http would otherwise read at most 256 KiB of the
	// body before the answer and then stop the body for good.
	rc := http.NewResponseController(w)
	duplex := rc.EnableFullDuplex() == nil
	auth.WriteError(w, http.StatusRequestEntityTooLarge, nil, &auth.Error{Code: mcp.INVALID_REQUEST,
		Message: "request body is over the limit of " + strconv.FormatInt(n, 10) + " bytes (execution.max_request_body_bytes)"})
	if !duplex || r.Body == nil {
		return
	}
	_ = rc.Flush()
	_ = rc.SetReadDeadline(time.Now().Add(drainTime))
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, drainBytes))
}

// MemBody is a request body already read into memory: the guard looks at
// its bytes without copying them, and mcp-go reads it as usual.
type MemBody struct {
	b   []byte
	off int
}

func (b *MemBody) Read(p []byte) (int, error) {
	if b.off >= len(b.b) {
		return 0, io.EOF
	}
	n := copy(p, b.b[b.off:])
	b.off += n
	return n, nil
}

// WriteTo lets io.ReadAll-style consumers that use io.Copy skip a buffer.
func (b *MemBody) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(b.b[b.off:])
	b.off += n
	return int64(n), err
}

func (b *MemBody) Close() error { return nil }

// BodyBytes returns the body's bytes when checkEnvelope has read it.
func BodyBytes(r *http.Request) ([]byte, bool) {
	if b, ok := r.Body.(*MemBody); ok {
		return b.b[b.off:], true
	}
	return nil, false
}
