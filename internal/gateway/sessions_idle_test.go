package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/relay"
)

// idleSessions is a gateway endpoint on a real listener, with a tool
// that broadcasts while it runs, for tests of what a 2025-11-25 session is
// sent between and during its requests.
type idleSessions struct {
	h   *fdHarness
	url string
}

func newIdleSessions(t *testing.T) *idleSessions {
	t.Helper()
	h := newFrontDoor(t, nil, nil, nil)
	h.refresh(t)
	// mcp-go can drop a notification its forwarder takes just as the
	// answer is written (internal/relay/progress.go): both tools return
	// once the call's stream holds the one list_changed they expect.
	h.srv.AddTool(mcp.NewTool("test_broadcast"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		h.srv.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
		relay.ProgressQueued(ctx)
		relay.AwaitProgressWritten(ctx)
		return mcp.NewToolResultText("sent"), nil
	})
	h.srv.AddTool(mcp.NewTool("test_wait"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		relay.ProgressQueued(ctx)
		relay.AwaitProgressWritten(ctx)
		return mcp.NewToolResultText("waited"), nil
	})
	ep := h.g.HTTP(h.srv, endpoint.Options{})
	srv := httptest.NewServer(ep.Handler)
	t.Cleanup(func() {
		srv.Close()
		ep.Close()
	})
	return &idleSessions{h: h, url: srv.URL + "/mcp"}
}

// post sends body on session ("" for none) and returns the answer's
// content type and body.
func (s *idleSessions) post(t *testing.T, session, body string) (string, string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	if session != "" {
		req.Header.Set(mcpserver.HeaderKeySessionID, session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s: %d %s", body, resp.StatusCode, b.String())
	}
	return resp.Header.Get(mcpserver.HeaderKeySessionID), resp.Header.Get("Content-Type"), b.String()
}

func (s *idleSessions) open(t *testing.T) string {
	t.Helper()
	id, _, _ := s.post(t, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+
		mcp.LATEST_LEGACY_PROTOCOL_VERSION+`","capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	if id == "" {
		t.Fatal("no session id")
	}
	s.post(t, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return id
}

// before reports whether body holds want, ahead of the answer's result.
func before(body, want string) bool {
	i := strings.Index(body, want)
	return i >= 0 && i < strings.Index(body, `"result"`)
}

// TestIdleSessionNotifications: what a session is sent while idle comes
// ahead of its next answer, once; what it is sent during a call comes on
// that call's stream; with a GET stream open it comes there, and after the
// stream ends ahead of the next answer again.
func TestIdleSessionNotifications(t *testing.T) {
	t.Parallel()
	s := newIdleSessions(t)
	a, b := s.open(t), s.open(t)
	const changed = `"method":"notifications/tools/list_changed"`
	call := func(tool string) string {
		return `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"` + tool + `","_meta":{"progressToken":1}}}`
	}
	ping := `{"jsonrpc":"2.0","id":7,"method":"ping"}`

	s.h.srv.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
	for _, id := range []string{a, b} {
		if _, ct, body := s.post(t, id, call("test_wait")); ct != "text/event-stream" || !before(body, changed) {
			t.Fatalf("the answer after an idle notification: %s %s", ct, body)
		}
		if _, _, body := s.post(t, id, ping); strings.Contains(body, changed) {
			t.Fatalf("an idle notification sent twice: %s", body)
		}
	}

	if _, ct, body := s.post(t, a, call("test_broadcast")); ct != "text/event-stream" || !before(body, changed) {
		t.Fatalf("a call that broadcasts: %s %s", ct, body)
	}
	if _, _, body := s.post(t, b, call("test_wait")); !before(body, changed) {
		t.Fatalf("the other session's next answer: %s", body)
	}

	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	req.Header.Set(mcpserver.HeaderKeySessionID, a)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v %v", err, resp)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	s.h.srv.SendNotificationToAllClients("notifications/message", map[string]any{"level": "info", "data": "on the stream"})
	for got := false; !got; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the GET stream ended")
			}
			got = strings.Contains(l, `"on the stream"`)
		case <-time.After(5 * time.Second):
			t.Fatal("nothing on the GET stream within 5 s")
		}
	}
	cancel()
	resp.Body.Close()
	for range lines {
	}
	// Once the stream is gone, a notification waits for the next answer.
	waitFor(t, "a notification ahead of the answer after the GET stream", func() bool {
		s.h.srv.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
		_, _, body := s.post(t, a, call("test_wait"))
		return before(body, changed)
	})
	if _, _, body := s.post(t, a, call("test_broadcast")); !before(body, changed) {
		t.Fatalf("a call after the GET stream: %s", body)
	}
}

// TestIdleSessionsStaySmall: an idle 2025-11-25 session holds about a
// kilobyte, not mcp-go's 10 KB session object, and a little more with
// notifications waiting.
func TestIdleSessionsStaySmall(t *testing.T) {
	s := newIdleSessions(t)
	s.open(t) // the first allocates what every session shares
	const n = 1000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ids := make([]string, 0, n)
	for range n {
		ids = append(ids, s.open(t))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("%d B of heap per idle session", per)
	if per > 3000 {
		t.Errorf("%d B of heap per idle session, want at most 3,000 (mcp-go's own session object is ~10 KB)", per)
	}
	// A notification for all of them leaves each a few hundred bytes
	// while it waits (mcp-go's own session: a 4.8 KB channel from the
	// start).
	s.h.srv.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
	runtime.GC()
	runtime.ReadMemStats(&before)
	waiting := (int64(before.HeapAlloc) - int64(after.HeapAlloc)) / n
	t.Logf("%d B more per idle session with a notification waiting", waiting)
	if waiting > 1000 {
		t.Errorf("%d B more per idle session with a notification waiting, want at most 1,000", waiting)
	}
	runtime.KeepAlive(ids)
	// And each still works.
	if _, _, body := s.post(t, ids[n/2], `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); !strings.Contains(body, `"hangar_list"`) {
		t.Fatal(fmt.Sprintf("tools/list: %s", body))
	}
}

// TestIdleSessionNotificationBurst: many notifications for an idle
// session all come ahead of its next answer, in the order sent; past
// about mcp-go's 100 the rest are dropped, as mcp-go drops them.
func TestIdleSessionNotificationBurst(t *testing.T) {
	t.Parallel()
	s := newIdleSessions(t)
	a := s.open(t)
	for _, sent := range []int{60, 130} {
		for i := range sent - 1 {
			s.h.srv.SendNotificationToAllClients("notifications/message", map[string]any{"level": "info", "data": fmt.Sprintf("n%03d", i)})
		}
		s.h.srv.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
		// test_wait returns once the list_changed, sent last, is written
		// (or 100 ms passed, when it was dropped).
		_, _, body := s.post(t, a, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"test_wait","_meta":{"progressToken":1}}}`)
		last := -1
		for i := range min(sent-1, 99) {
			at := strings.Index(body, fmt.Sprintf(`"n%03d"`, i))
			if at < 0 || at < last {
				t.Fatalf("%d sent: n%03d missing or out of order in %.300s", sent, i, body)
			}
			last = at
		}
		if sent < 100 && !before(body, `"notifications/tools/list_changed"`) {
			t.Fatalf("%d sent: no list_changed ahead of the answer", sent)
		}
		if sent > 120 && strings.Contains(body, `"n128"`) {
			t.Errorf("%d sent: all kept, none dropped past the bound", sent)
		}
	}
}
