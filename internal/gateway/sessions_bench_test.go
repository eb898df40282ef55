package gateway_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/endpoint"
)

// BenchmarkIdleSessions is a warm call by callable name on a 2025-11-25
// session beside idle ones (figure 14's second half, in process), and
// the heap each idle session holds:
//
//	go test -run '^$' -bench IdleSessions -benchmem ./internal/gateway/
//
// heap-B/session is deterministic; compare cpu-ns/op between the
// sub-benchmarks of one run.
func BenchmarkIdleSessions(b *testing.B) {
	for _, idle := range []int{0, 10000} {
		b.Run(fmt.Sprintf("idle=%d", idle), func(b *testing.B) {
			g, _ := benchGateway(b)
			h := g.HTTP(g.MCPServer(), endpoint.Options{MaxSessions: idle + 10, MaxSessionsPerIdentity: idle + 10}).Handler
			send := legacySender(b, h)
			session := openLegacySession(send)
			warm := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hangar_call","arguments":{"calls":[{"mcp_server":"math","tool":"add","arguments":{"a":1,"b":2}}]}}}`
			send(warm, session)
			g.FrontDoor.Refresh(b.Context())
			body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"math__add","arguments":{"a":1,"b":2}}}`
			if rec := send(body, session); !bytes.Contains(rec.Body.Bytes(), []byte(`"result"`)) || bytes.Contains(rec.Body.Bytes(), []byte(`isError":true`)) {
				b.Fatalf("math__add: %s", rec.Body.String())
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for range idle {
				openLegacySession(send)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportAllocs()
			b.ResetTimer()
			done := cpuPerOp(b)
			for b.Loop() {
				if rec := send(body, session); !bytes.Contains(rec.Body.Bytes(), []byte(`"result"`)) {
					b.Fatalf("%s", rec.Body.String())
				}
			}
			done()
			if idle > 0 {
				b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(idle), "heap-B/session")
			}
		})
	}
}

// legacySender posts a message on a 2025-11-25 session ("" for none).
func legacySender(b *testing.B, h http.Handler) func(body, session string) *httptest.ResponseRecorder {
	return func(body, session string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader([]byte(body)))
		req.RemoteAddr = "127.0.0.1:50000"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
		if session != "" {
			req.Header.Set(mcpserver.HeaderKeySessionID, session)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK && rec.Code != http.StatusAccepted {
			b.Fatalf("%d %s", rec.Code, rec.Body.String())
		}
		return rec
	}
}

// openLegacySession opens a session as a client does (initialize, then
// notifications/initialized) and returns its id.
func openLegacySession(send func(body, session string) *httptest.ResponseRecorder) string {
	rec := send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+mcp.LATEST_LEGACY_PROTOCOL_VERSION+
		`","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}`, "")
	session := rec.Header().Get(mcpserver.HeaderKeySessionID)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
	return session
}
