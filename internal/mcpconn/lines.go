package mcpconn

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/mark3labs/mcp-go/mcp"
)

// Large stdio messages. mcp-go's stdio transport reads a message with
// bufio.Reader.ReadString and then decodes it four or five times over
// (envelope, response, result, content), so a 60 MiB tool answer costs
// several hundred MiB. The lineReader below sits in front of it: short
// lines pass through untouched; a long answer to tools/call is read here
// once, its big texts are decoded without copying (the strings alias the
// line's own buffer) and set aside, and mcp-go gets the same message with
// short markers in their place, which Conn.CallTool swaps back. A line over
// the read limit is not kept at all: the call gets a JSON-RPC error.

// spillMin is the length from which a line is handled here, and from
// which a text in it is set aside.
const spillMin = 256 << 10

// readChunk is the size of the pieces a long line is read in.
const readChunk = 1 << 20

// spillMarker starts a text that stands for one set aside; a NUL keeps it
// from looking like anything a provider would send.
const spillMarker = "\x00hangar-spill:"

var maxMessageBytes atomic.Int64

func init() { maxMessageBytes.Store(DefaultMaxMessageBytes) }

// DefaultMaxMessageBytes is the read limit until SetMaxMessageBytes: the
// default batch.max_response_size_bytes plus batch.max_continuation_bytes,
// and 1 MiB for the envelope.
const DefaultMaxMessageBytes = (10 << 20) + (256 << 20) + (1 << 20)

// SetMaxMessageBytes sets the longest message read from a provider over
// stdio, for connections made from now on; 0 or less restores the
// default. The gateway sets it from its limits: a bigger answer could be
// neither returned nor kept as a continuation.
func SetMaxMessageBytes(n int64) {
	if n <= 0 {
		n = DefaultMaxMessageBytes
	}
	maxMessageBytes.Store(n)
}

// pendingCalls are the tools/call requests waiting for an answer, and the
// texts set aside from their answers.
type pendingCalls struct {
	mu      sync.Mutex
	waiting map[string]bool     // request id → a tools/call is waiting
	spilled map[string][]string // request id → texts set aside
}

func (p *pendingCalls) begin(id string) {
	p.mu.Lock()
	if p.waiting == nil {
		p.waiting, p.spilled = map[string]bool{}, map[string][]string{}
	}
	p.waiting[id] = true
	p.mu.Unlock()
}

// end forgets id and returns what was set aside from its answer.
func (p *pendingCalls) end(id string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.waiting, id)
	texts := p.spilled[id]
	delete(p.spilled, id)
	return texts
}

func (p *pendingCalls) isWaiting(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiting[id]
}

// keep sets texts aside for id if a call still waits for it.
func (p *pendingCalls) keep(id string, texts []string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.waiting[id] {
		return false
	}
	p.spilled[id] = texts
	return true
}

// lineReader is what mcp-go's stdio transport reads instead of the
// provider's stdout.
type lineReader struct {
	src     *bufio.Reader
	max     int64
	calls   *pendingCalls
	pending []byte // what Read hands out next
	err     error  // returned once pending is drained
}

func newLineReader(r io.Reader, calls *pendingCalls) *lineReader {
	return &lineReader{src: bufio.NewReaderSize(r, 64<<10), max: maxMessageBytes.Load(), calls: calls}
}

func (l *lineReader) Read(p []byte) (int, error) {
	for len(l.pending) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		l.next()
	}
	n := copy(p, l.pending)
	l.pending = l.pending[n:]
	return n, nil
}

// next reads one line into pending.
func (l *lineReader) next() {
	line, err := l.src.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		// A whole line in the buffer: it is handed out before the next
		// read of src, so it can stay there.
		l.pending, l.err = line, err
		return
	}
	// A long line: read it in chunks, so that its memory is taken once
	// and never copied while it grows.
	chunks := [][]byte{append(make([]byte, 0, readChunk), line...)}
	total := int64(len(line))
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = l.src.ReadSlice('\n')
		total += int64(len(line))
		if total > l.max {
			l.pending = l.tooLong(chunks[0], err)
			return
		}
		last := &chunks[len(chunks)-1]
		for len(line) > 0 {
			if len(*last) == cap(*last) {
				chunks = append(chunks, make([]byte, 0, readChunk))
				last = &chunks[len(chunks)-1]
			}
			n := min(len(line), cap(*last)-len(*last))
			*last = append(*last, line[:n]...)
			line = line[n:]
		}
	}
	if err != nil {
		l.err = err
	}
	whole := make([]byte, 0, total)
	big := total >= collectAfter
	for i, c := range chunks {
		whole = append(whole, c...)
		chunks[i] = nil
		if big && (i+1)%collectEvery == 0 {
			// Hand the pieces already copied back to the OS, so that the
			// line is not resident twice while it is joined.
			debug.FreeOSMemory()
		}
	}
	l.pending = l.spill(whole)
	if big {
		// A collection that ran while the pieces and the whole line were
		// both live has set the next heap goal to twice both: without
		// collecting now, the answer's encoding would grow the heap that
		// far before the pieces are reclaimed.
		debug.FreeOSMemory()
	}
}

// From collectAfter bytes on, joining a line's pieces returns the memory
// of every collectEvery pieces to the OS as it goes. Such lines are rare
// and costly anyway; a forced collection is small beside them.
const (
	collectAfter = 8 << 20
	collectEvery = 8
)

// tooLong discards the rest of an over-limit line and returns an error
// answer for its request, if its id is in the first chunk.
func (l *lineReader) tooLong(head []byte, err error) []byte {
	for errors.Is(err, bufio.ErrBufferFull) {
		_, err = l.src.ReadSlice('\n')
	}
	if err != nil {
		l.err = err
	}
	id, ok := leadingID(head)
	if !ok {
		return nil // nothing waits for it that can be told
	}
	msg := fmt.Sprintf("provider message is over the read limit of %d bytes (batch.max_response_size_bytes + batch.max_continuation_bytes) and was dropped", l.max)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": mcp.INTERNAL_ERROR, "message": msg}})
	return append(b, '\n')
}

// leadingID finds the id of a JSON-RPC message from its first bytes, when
// it comes before any long member (as every MCP SDK writes it).
func leadingID(head []byte) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		switch key {
		case "method":
			// A request or notification from the provider: an error
			// "answer" would be taken for the answer to one of ours.
			return nil, false
		case "id":
			if bytes.Contains(head, []byte(`"method"`)) {
				return nil, false // the same, with the id first
			}
			return v, true
		}
	}
	return nil, false
}

// bigText is a content text of a long answer. A long one is not decoded
// by encoding/json: UnmarshalJSON keeps the quoted string as the slice of
// the input that encoding/json hands an Unmarshaler, so spill knows where
// it is in the line and can decode it in place.
type bigText struct {
	raw  []byte // the quoted string, aliasing the line; nil when short
	text string // a short text, decoded
}

func (b *bigText) UnmarshalJSON(data []byte) error {
	if len(data) >= spillMin && data[0] == '"' {
		b.raw = data
		return nil
	}
	return json.Unmarshal(data, &b.text)
}

// spill returns line, or when it answers a waiting tools/call with long
// texts, the same message with markers in their place.
func (l *lineReader) spill(line []byte) []byte {
	var msg struct {
		ID     *mcp.RequestId `json:"id"`
		Method string         `json:"method"`
		Result *struct {
			Content []struct {
				Type string  `json:"type"`
				Text bigText `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.ID == nil || msg.Method != "" || msg.Result == nil {
		return line
	}
	type span struct{ start, end int }
	var spans []span
	base := uintptr(unsafe.Pointer(unsafe.SliceData(line)))
	for _, it := range msg.Result.Content {
		raw := it.Text.raw
		if it.Type != "text" || raw == nil {
			continue
		}
		if !utf8.Valid(raw) {
			return line // encoding/json's repair of bad UTF-8 is mcp-go's to do
		}
		off := uintptr(unsafe.Pointer(unsafe.SliceData(raw))) - base
		if off >= uintptr(len(line)) || int(off)+len(raw) > len(line) {
			return line // not a slice of line: leave the message to mcp-go
		}
		spans = append(spans, span{int(off), int(off) + len(raw)})
	}
	id := msg.ID.String()
	if len(spans) == 0 || !l.calls.isWaiting(id) {
		return line
	}
	// From here line is decoded in place: the marked message is returned
	// even if the call stops waiting meanwhile (mcp-go then drops it).
	texts := make([]string, len(spans))
	out := make([]byte, 0, 256+32*len(spans))
	prev := 0
	for i, sp := range spans {
		texts[i] = unquoteInPlace(line[sp.start:sp.end])
		out = append(out, line[prev:sp.start]...)
		out = append(out, `"\u0000hangar-spill:`...)
		out = strconv.AppendInt(out, int64(i), 10)
		out = append(out, '"')
		prev = sp.end
	}
	l.calls.keep(id, texts)
	return append(out, line[prev:]...)
}

// unquoteInPlace decodes the JSON string q (quotes included, already
// validated by encoding/json) into q's own memory and returns it as a
// string sharing that memory: decoding never makes a string longer, and q
// is not used again.
func unquoteInPlace(q []byte) string {
	s := q[1 : len(q)-1]
	i := bytes.IndexByte(s, '\\')
	if i < 0 {
		return unsafe.String(unsafe.SliceData(s), len(s))
	}
	w := i
	for r := i; r < len(s); {
		c := s[r]
		if c != '\\' {
			s[w] = c
			w++
			r++
			continue
		}
		r++
		switch e := s[r]; e {
		case '"', '\\', '/':
			s[w] = e
		case 'b':
			s[w] = '\b'
		case 'f':
			s[w] = '\f'
		case 'n':
			s[w] = '\n'
		case 'r':
			s[w] = '\r'
		case 't':
			s[w] = '\t'
		case 'u':
			rr := hex4(s[r+1 : r+5])
			r += 5
			if utf16.IsSurrogate(rr) {
				rr2 := unicode.ReplacementChar
				if r+6 <= len(s) && s[r] == '\\' && s[r+1] == 'u' {
					if dec := utf16.DecodeRune(rr, hex4(s[r+2:r+6])); dec != unicode.ReplacementChar {
						rr2 = dec
						r += 6
					}
				}
				rr = rr2
			}
			w += utf8.EncodeRune(s[w:], rr)
			continue
		}
		w++
		r++
	}
	return unsafe.String(unsafe.SliceData(s), w)
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// spillSinkKey carries, from CallTool to the tap under it, where the texts
// read aside for one call go. A context value because mcp-go's client is
// between them and passes the request's context, and nothing else, to its
// transport.
type spillSinkKey struct{}

// restoreSpilled puts the texts set aside from res's message back in place
// of their markers.
func restoreSpilled(res *mcp.CallToolResult, texts []string) {
	for i, c := range res.Content {
		tc, ok := c.(mcp.TextContent)
		if !ok {
			continue
		}
		rest, ok := strings.CutPrefix(tc.Text, spillMarker)
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(rest); err == nil && n >= 0 && n < len(texts) {
			tc.Text = texts[n]
			res.Content[i] = tc
		}
	}
}
