package gateway_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// Benchmarks of the warm call path through the real HTTP handler (auth
// middleware, body limit, scope guard, mcp-go's streamable server, the
// tool handler, the batch executor, the provider) against an in-memory
// provider, so only the gateway's own work is measured:
//
//	go test -run '^$' -bench . -benchmem -cpuprofile cpu.out ./internal/gateway/
//	go tool pprof -top -cum cpu.out
//
// Requests use the stateless 2026-07-28 protocol, as the bench's default
// client does.

func benchGateway(b *testing.B) (*gateway.Gateway, http.Handler) {
	b.Helper()
	cfg := config.Default()
	cfg.Servers["math"] = server("math")
	// As deployed: JSON logs at INFO (slog's JSON handler formats With
	// attributes eagerly, so its cost shows even when nothing is logged).
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	mgr := provider.NewManager(newFakeLauncher(), provider.Options{Log: log})
	g := gateway.New(cfg, mgr, nil, nil, log)
	for _, ch := range g.PublishConfig(b.Context(), cfg, "bench", false) {
		if ch.Action == catalog.Refused {
			b.Fatalf("%s not served: %s", ch.ID, ch.Reason)
		}
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = mgr.StopAll(ctx, "bench")
	})
	return g, g.HTTP(g.MCPServer(), gateway.HTTPOptions{}).Handler
}

func toolRequest(id int, tool, args string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `,` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"` + mcp.LATEST_PROTOCOL_VERSION + `",` +
		`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"0"}}}}`)
}

func post(b *testing.B, h http.Handler, tool string, body []byte) {
	req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
	req.RemoteAddr = "127.0.0.1:50000"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.LATEST_PROTOCOL_VERSION)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"result"`)) || bytes.Contains(rec.Body.Bytes(), []byte(`isError":true`)) {
		b.Fatalf("%s: %d %s", tool, rec.Code, rec.Body.String())
	}
	_, _ = io.Copy(io.Discard, rec.Body)
}

// BenchmarkHangarCallHTTP is one warm hangar_call of one add.
func BenchmarkHangarCallHTTP(b *testing.B) {
	g, h := benchGateway(b)
	if _, ok := g.Providers.Get("math"); !ok {
		b.Fatal("math not registered")
	}
	body := toolRequest(1, "hangar_call", `{"calls":[{"mcp_server":"math","tool":"add","arguments":{"a":1,"b":2}}]}`)
	post(b, h, "hangar_call", body) // starts the provider
	b.ReportAllocs()
	for b.Loop() {
		post(b, h, "hangar_call", body)
	}
}

// BenchmarkHangarCallHTTPCapable is BenchmarkHangarCallHTTP from a client
// that declares sampling, elicitation and roots, as most do: the call runs
// on a goroutine of its own, ready to ask the client by multi round trip.
func BenchmarkHangarCallHTTPCapable(b *testing.B) {
	_, h := benchGateway(b)
	body := bytes.Replace(toolRequest(1, "hangar_call", `{"calls":[{"mcp_server":"math","tool":"add","arguments":{"a":1,"b":2}}]}`),
		[]byte(`clientCapabilities":{}`), []byte(`clientCapabilities":{"sampling":{},"elicitation":{},"roots":{}}`), 1)
	post(b, h, "hangar_call", body)
	b.ReportAllocs()
	for b.Loop() {
		post(b, h, "hangar_call", body)
	}
}

// BenchmarkHangarCallHTTPLegacy is BenchmarkHangarCallHTTP on a 2025-11-25
// session: the session table's checks are on the path.
func BenchmarkHangarCallHTTPLegacy(b *testing.B) {
	_, h := benchGateway(b)
	send := func(body, session string) *httptest.ResponseRecorder {
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
	rec := send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+mcp.LATEST_LEGACY_PROTOCOL_VERSION+
		`","capabilities":{"sampling":{}},"clientInfo":{"name":"bench","version":"0"}}}`, "")
	session := rec.Header().Get(mcpserver.HeaderKeySessionID)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hangar_call","arguments":{"calls":[{"mcp_server":"math","tool":"add","arguments":{"a":1,"b":2}}]}}}`
	send(body, session)
	b.ReportAllocs()
	for b.Loop() {
		if rec := send(body, session); !bytes.Contains(rec.Body.Bytes(), []byte(`"result"`)) {
			b.Fatalf("%s", rec.Body.String())
		}
	}
}

// BenchmarkHealthHTTP is the gateway's trivial tool: the cost of the
// gateway's HTTP and MCP layers alone.
func BenchmarkHealthHTTP(b *testing.B) {
	_, h := benchGateway(b)
	body := toolRequest(1, "hangar_health", `{}`)
	b.ReportAllocs()
	for b.Loop() {
		post(b, h, "hangar_health", body)
	}
}

// BenchmarkFloorHTTP is a bare mcp-go streamable HTTP server with one
// trivial tool through the same requests: the floor the gateway's
// BenchmarkHealthHTTP is compared with.
func BenchmarkFloorHTTP(b *testing.B) {
	s := mcpserver.NewMCPServer("floor", "1", mcpserver.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("noop"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	h := mcpserver.NewStreamableHTTPServer(s, mcpserver.WithEndpointPath("/mcp"))
	body := toolRequest(1, "noop", `{}`)
	b.ReportAllocs()
	for b.Loop() {
		post(b, h, "noop", body)
	}
}

// BenchmarkToolsListHTTP is tools/list of the gateway's own tools.
func BenchmarkToolsListHTTP(b *testing.B) {
	_, h := benchGateway(b)
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"` + mcp.LATEST_PROTOCOL_VERSION + `",` +
		`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"0"}}}}`)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		req.RemoteAddr = "127.0.0.1:50000"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", mcp.LATEST_PROTOCOL_VERSION)
		req.Header.Set("Mcp-Method", "tools/list")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"hangar_call"`)) {
			b.Fatalf("tools/list: %d %.300s", rec.Code, rec.Body.String())
		}
	}
}
