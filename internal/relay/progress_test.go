package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcp-hangar/hangar/internal/endpoint"
)

// TestProgressWriterCounts: the writer recognises a progress notification
// as mcp-go writes it (the marshalled JSONRPCNotification in an SSE event)
// and nothing else, and a call waits for what it queued only until it is
// written.
func TestProgressWriterCounts(t *testing.T) {
	t.Parallel()
	event := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("event: message\ndata: %s\n\n", b)
	}
	progress := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationProgress),
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"progressToken": "t", "progress": 1}}}}
	other := progress
	other.Method = "notifications/message"

	var got *progressCount
	h := CountProgress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = r.Context().Value(progressCountKey{}).(*progressCount)
		ProgressQueued(r.Context())
		ProgressQueued(r.Context())
		for _, e := range []string{event(other), event(progress)} {
			if _, err := w.Write([]byte(e)); err != nil {
				t.Error(err)
			}
		}
		if got == nil {
			return
		}
		// One written of two queued: the wait ends at its bound.
		began := time.Now()
		AwaitProgressWritten(r.Context())
		if d := time.Since(began); d < progressWriteWait {
			t.Errorf("waited %s with a notification unwritten, want %s", d, progressWriteWait)
		}
		_, _ = w.Write([]byte(event(progress)))
		began = time.Now()
		AwaitProgressWritten(r.Context())
		if d := time.Since(began); d > progressWriteWait/2 {
			t.Errorf("waited %s with everything written", d)
		}
	}))
	for _, withToken := range []bool{true, false} {
		got = nil
		params := `{"name":"x"}`
		if withToken {
			params = `{"name":"x","_meta":{"progressToken":"t"}}`
		}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`
		env, eerr := endpoint.ParseEnvelope([]byte(body))
		if eerr != nil {
			t.Fatal(eerr)
		}
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body)).WithContext(endpoint.WithEnvelope(context.Background(), env))
		h.ServeHTTP(httptest.NewRecorder(), req)
		switch {
		case withToken && (got == nil || got.written.Load() != 2 || got.queued.Load() != 2):
			t.Errorf("with a progress token: count %+v, want 2 written of 2 queued", got)
		case !withToken && got != nil:
			t.Error("a call without a progress token was counted")
		}
	}
}
