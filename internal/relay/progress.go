package relay

import (
	"bytes"
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/endpoint"
)

// Progress a front-door call relays is queued to mcp-go, whose forwarder
// writes it into the call's response stream. mcp-go v1.2.1 can drop one
// that its forwarder took off the queue just as the response is written
// (the forwarder then finds the request done). So a call that relayed
// progress returns only once the response stream holds every notification
// it queued, or a moment has passed: the writer below counts them. The
// tools/list_changed that hangar_find_tools sends its session on
// activate or reset (tools_find.go) is counted the same way.

// progressWriteWait bounds how long a call's result waits for its last
// progress to be written.
const progressWriteWait = 100 * time.Millisecond

// progressCountKey carries a call's progressCount from CountProgress, an
// HTTP stage before mcp-go, to the tool handler's progress reporter
// (ProgressTo): mcp-go passes handlers the HTTP request's context only.
type progressCountKey struct{}

// progressCount is what a tools/call carrying a progressToken queued and
// what its response stream holds.
type progressCount struct {
	queued, written atomic.Int64
}

// progressEvent starts an SSE event mcp-go writes for a progress
// notification (writeSSEEvent: one Write per event).
var progressEvent = []byte(`event: message` + "\n" + `data: {"jsonrpc":"2.0","method":"notifications/progress"`)

// listChangedEvent starts the SSE event of a tools/list_changed.
var listChangedEvent = []byte(`event: message` + "\n" + `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"`)

type progressWriter struct {
	http.ResponseWriter
	n *progressCount
}

func (w progressWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if err == nil && (bytes.HasPrefix(p, progressEvent) || bytes.HasPrefix(p, listChangedEvent)) {
		w.n.written.Add(1)
	}
	return n, err
}

func (w progressWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w progressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// CountProgress counts the progress written for tools/call requests that
// carry a progressToken, and the list_changed written for calls of the
// tools named in listChanging (hangar_find_tools); every other request
// passes untouched.
func CountProgress(next http.Handler, listChanging ...string) http.Handler {
	marks := make([][]byte, 0, len(listChanging)+1)
	marks = append(marks, []byte(`"progressToken"`))
	for _, name := range listChanging {
		marks = append(marks, []byte(`"`+name+`"`))
	}
	counted := func(params []byte) bool {
		for _, m := range marks {
			if bytes.Contains(params, m) {
				return true
			}
		}
		return false
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		env, ok := endpoint.RequestEnvelope(r.Context())
		if !ok || env.Method != string(mcp.MethodToolsCall) || !counted(env.Params) {
			next.ServeHTTP(w, r)
			return
		}
		n := &progressCount{}
		next.ServeHTTP(progressWriter{w, n}, r.WithContext(context.WithValue(r.Context(), progressCountKey{}, n)))
	})
}

// ProgressQueued records one progress notification queued for the call in
// ctx.
func ProgressQueued(ctx context.Context) {
	if n, ok := ctx.Value(progressCountKey{}).(*progressCount); ok {
		n.queued.Add(1)
	}
}

// AwaitProgressWritten returns once the response stream of the call in ctx
// holds the progress queued for it, or progressWriteWait has passed.
func AwaitProgressWritten(ctx context.Context) {
	n, ok := ctx.Value(progressCountKey{}).(*progressCount)
	if !ok || n.written.Load() >= n.queued.Load() {
		return
	}
	deadline := time.Now().Add(progressWriteWait)
	for n.written.Load() < n.queued.Load() && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(200 * time.Microsecond)
	}
}
