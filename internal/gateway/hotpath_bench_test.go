package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/metrics"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/telemetry"
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
// client does. cpu-ns/op (the process's CPU time per call) is the figure
// to compare on a shared machine, against BenchmarkFloorHTTP's from the
// same run; ns/op there is mostly other people's load.

func benchGateway(b *testing.B) (*gateway.Gateway, http.Handler) {
	b.Helper()
	return benchGatewayWith(b, nil)
}

// benchGatewayWith is benchGateway with tel as its telemetry (nil: off).
func benchGatewayWith(b *testing.B, tel func(*metrics.Metrics) *telemetry.Telemetry) (*gateway.Gateway, http.Handler) {
	b.Helper()
	return benchGatewayServing(b, tel, "math")
}

// benchGatewayServing is benchGatewayWith serving the servers ids.
func benchGatewayServing(b *testing.B, tel func(*metrics.Metrics) *telemetry.Telemetry, ids ...string) (*gateway.Gateway, http.Handler) {
	b.Helper()
	cfg := config.Default()
	for _, id := range ids {
		cfg.Servers[id] = server(id)
	}
	// As deployed: JSON logs at INFO (slog's JSON handler formats With
	// attributes eagerly, so its cost shows even when nothing is logged),
	// Prometheus metrics, and the audit trail in SQLite through the
	// batched writer.
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	m := metrics.New()
	// Without tel, telemetry as deployed with no OTLP endpoint: metrics
	// only, for the Prometheus MCP histograms.
	t, err := telemetry.New(b.Context(), telemetry.Options{Recorder: m})
	if err != nil {
		b.Fatal(err)
	}
	if tel != nil {
		t = tel(m)
	}
	mgr := provider.NewManager(newFakeLauncher(), provider.Options{Log: log, Events: m, Telemetry: t})
	g := gateway.New(cfg, mgr, nil, m, log)
	g.Telemetry = t
	st, err := store.Open(filepath.Join(b.TempDir(), "hangar.db"), store.Options{Log: log})
	if err != nil {
		b.Fatal(err)
	}
	w := audit.New(st, audit.Options{Log: log})
	ctx, stop := context.WithCancel(context.Background())
	wrote := make(chan struct{})
	go func() { defer close(wrote); w.Run(ctx) }()
	g.AuditStore = w
	for _, ch := range g.Catalog.PublishConfig(b.Context(), cfg, "bench", false) {
		if ch.Action == catalog.Refused {
			b.Fatalf("%s not served: %s", ch.ID, ch.Reason)
		}
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = mgr.StopAll(ctx, "bench")
		stop()
		<-wrote
		_ = st.Close()
	})
	return g, g.HTTP(g.MCPServer(), endpoint.Options{}).Handler
}

// cpuPerOp reports the process's CPU time (user+system, every goroutine:
// the audit writer and the GC included) per operation as cpu-ns/op: on a
// shared machine wall time per op is noise, CPU time much less so. Call
// its result when the loop is done (defer).
func cpuPerOp(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func toolRequest(id int, tool, args string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `,` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"` + mcp.LATEST_PROTOCOL_VERSION + `",` +
		`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"0"}}}}`)
}

func post(b *testing.B, h http.Handler, tool string, body []byte) {
	rec := serve(h, tool, body)
	if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"result"`)) || bytes.Contains(rec.Body.Bytes(), []byte(`isError":true`)) {
		b.Fatalf("%s: %d %s", tool, rec.Code, rec.Body.String())
	}
}

// try reports whether a call of tool succeeds.
func try(h http.Handler, tool string, body []byte) bool {
	rec := serve(h, tool, body)
	return rec.Code == http.StatusOK && bytes.Contains(rec.Body.Bytes(), []byte(`"result"`)) && !bytes.Contains(rec.Body.Bytes(), []byte(`isError":true`))
}

func serve(h http.Handler, tool string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
	req.RemoteAddr = "127.0.0.1:50000"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.LATEST_PROTOCOL_VERSION)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
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
	defer cpuPerOp(b)()
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
	defer cpuPerOp(b)()
	for b.Loop() {
		post(b, h, "hangar_call", body)
	}
}

// BenchmarkHangarCallHTTPLegacy is BenchmarkHangarCallHTTP on a 2025-11-25
// session: the session table's checks are on the path, and the call is
// run directly (calls.go, plainSessionCall).
func BenchmarkHangarCallHTTPLegacy(b *testing.B) { benchLegacyCall(b, `{}`) }

// BenchmarkHangarCallHTTPLegacyCapable is BenchmarkHangarCallHTTPLegacy
// from a client that declares sampling, elicitation and roots: run
// directly too, its relays ready (relay/stream.go). It used to go to
// mcp-go (305 allocs/op against 184).
func BenchmarkHangarCallHTTPLegacyCapable(b *testing.B) {
	benchLegacyCall(b, `{"sampling":{},"elicitation":{},"roots":{"listChanged":true}}`)
}

func benchLegacyCall(b *testing.B, caps string) {
	_, h := benchGateway(b)
	send := legacySender(b, h)
	rec := send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+mcp.LATEST_LEGACY_PROTOCOL_VERSION+
		`","capabilities":`+caps+`,"clientInfo":{"name":"bench","version":"0"}}}`, "")
	session := rec.Header().Get(mcpserver.HeaderKeySessionID)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hangar_call","arguments":{"calls":[{"mcp_server":"math","tool":"add","arguments":{"a":1,"b":2}}]}}}`
	send(body, session)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		if rec := send(body, session); !bytes.Contains(rec.Body.Bytes(), []byte(`"result"`)) {
			b.Fatalf("%s", rec.Body.String())
		}
	}
}

// BenchmarkFrontDoorCallHTTP is one warm call of a provider tool by its
// callable name: the same path as hangar_call's, without the batch.
func BenchmarkFrontDoorCallHTTP(b *testing.B) {
	g, h := benchGateway(b)
	// Start the provider; its tools are on the front door once listed.
	post(b, h, "hangar_call", toolRequest(1, "hangar_call", `{"calls":[{"mcp_server":"math","tool":"add","arguments":{"a":1,"b":2}}]}`))
	g.FrontDoor.Refresh(b.Context())
	body := toolRequest(1, "math__add", `{"a":1,"b":2}`)
	for deadline := time.Now().Add(5 * time.Second); ; {
		if try(h, "math__add", body) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("math__add is not on the front door")
		}
		time.Sleep(time.Millisecond)
	}
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		post(b, h, "math__add", body)
	}
}

// BenchmarkHealthHTTP is the gateway's trivial tool: the cost of the
// gateway's HTTP and MCP layers alone.
func BenchmarkHealthHTTP(b *testing.B) {
	_, h := benchGateway(b)
	body := toolRequest(1, "hangar_health", `{}`)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		post(b, h, "hangar_health", body)
	}
}

// BenchmarkHangarListHTTP is hangar_list of 100 configured servers, 10
// of them started (bench figure 4).
func BenchmarkHangarListHTTP(b *testing.B) {
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = fmt.Sprintf("p%03d", i)
	}
	_, h := benchGatewayServing(b, nil, ids...)
	for _, id := range ids[:10] {
		post(b, h, "hangar_start", toolRequest(1, "hangar_start", `{"mcp_server":"`+id+`"}`))
	}
	body := toolRequest(1, "hangar_list", `{}`)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		post(b, h, "hangar_list", body)
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
	defer cpuPerOp(b)()
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
	defer cpuPerOp(b)()
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
