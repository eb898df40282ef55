package telemetry

import (
	"bytes"
	"net/http"
	"strconv"
)

// WatchResponse returns w, wrapped so that the JSON-RPC error code of an
// error answer it carries (plain JSON or an SSE event), or else an HTTP
// error status, becomes op's error.type. A nil op gets w back.
func WatchResponse(w http.ResponseWriter, op *Op) http.ResponseWriter {
	if op == nil {
		return w
	}
	return &watched{ResponseWriter: w, op: op}
}

type watched struct {
	http.ResponseWriter
	op     *Op
	status int
	found  bool
}

func (w *watched) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		if code >= 400 {
			// Kept unless the body names a JSON-RPC code, which is the
			// better error.type.
			w.op.setStatusError(code)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *watched) Write(b []byte) (int, error) {
	if !w.found {
		if code, ok := errorCode(b); ok {
			w.found = true
			w.op.Fail(code)
		}
	}
	return w.ResponseWriter.Write(b)
}

// Flush keeps SSE streaming through the wrapper.
func (w *watched) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the writer below.
func (w *watched) Unwrap() http.ResponseWriter { return w.ResponseWriter }

var errorMember = []byte(`"error":{"code":`)

// errorCode finds a JSON-RPC error answer's code near the start of a
// message: after "jsonrpc" and "id", where encoders put the error member.
// A result's content is escaped JSON text or comes after the result
// member opens, so a look that far cannot take it for an error answer.
func errorCode(b []byte) (int, bool) {
	head := b
	if len(head) > 512 {
		head = head[:512]
	}
	i := bytes.Index(head, errorMember)
	if i < 0 || bytes.Contains(head[:i], []byte(`"result"`)) {
		return 0, false
	}
	rest := b[i+len(errorMember):]
	end := 0
	for end < len(rest) && (rest[end] == '-' || (rest[end] >= '0' && rest[end] <= '9')) {
		end++
	}
	code, err := strconv.Atoi(string(rest[:end]))
	return code, err == nil
}

func (o *Op) setStatusError(status int) {
	o.mu.Lock()
	if o.errType == "" {
		o.httpStatus = status
	}
	o.mu.Unlock()
}
