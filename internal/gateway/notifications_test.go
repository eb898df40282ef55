package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// TestModernNotificationsAccepted: whatever notification a 2026-07-28
// client sends gets 202, with or without _meta, when the header names the
// version (mcp-go answered a bare 400 without _meta).
func TestModernNotificationsAccepted(t *testing.T) {
	t.Parallel()
	g := gateway.New(config.Default(), provider.NewManager(nil, provider.Options{Log: quiet}), nil, nil, quiet)
	h := g.HTTP(g.MCPServer(), endpoint.Options{}).Handler
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + mcp.LATEST_PROTOCOL_VERSION + `"}`
	tests := []struct{ name, body string }{
		{"cancelled without _meta", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`},
		{"cancelled with _meta", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a",` + meta + `}}`},
		{"cancelled of nothing in flight", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`},
		{"cancelled without params", `{"jsonrpc":"2.0","method":"notifications/cancelled"}`},
		{"roots list changed", `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`},
		{"progress", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`},
		{"initialized", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"one of the future", `{"jsonrpc":"2.0","method":"notifications/something_new","params":{` + meta + `}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set(mcp.HeaderProtocolVersion, mcp.LATEST_PROTOCOL_VERSION)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if body, _ := io.ReadAll(rec.Body); rec.Code != http.StatusAccepted {
				t.Errorf("status %d (%s), want 202", rec.Code, body)
			}
		})
	}
}
