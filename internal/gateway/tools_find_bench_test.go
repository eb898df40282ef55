package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sys/unix"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/toolsearch/labelled"
)

// labelledServers are the servers of internal/toolsearch's labelled set
// (real MCP servers' published tools), copies times over, as predefined
// tools: the front door lists and indexes them without starting anything.
func labelledServers(t testing.TB, copies int) []*config.Server {
	t.Helper()
	set, err := labelled.Servers("../toolsearch/testdata/servers")
	if err != nil {
		t.Fatal(err)
	}
	var out []*config.Server
	for c := range copies {
		for _, ls := range set {
			id := ls.ID
			if c > 0 {
				id = fmt.Sprintf("%s-%d", id, c)
			}
			s := server(id)
			s.Summary = ls.Summary
			for _, tool := range ls.Tools {
				props := map[string]any{}
				for _, p := range tool.Params {
					props[p] = map[string]any{"type": "string"}
				}
				schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
				s.Tools.Predefined = append(s.Tools.Predefined, config.ToolDef{Name: tool.Name, Description: tool.Description, InputSchema: schema})
			}
			out = append(out, s)
		}
	}
	return out
}

// labelledQueries are the labelled set's queries.
func labelledQueries(t testing.TB) []string {
	qs, err := labelled.Queries("../toolsearch/testdata/queries.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(qs))
	for _, q := range qs {
		out = append(out, q.Text)
	}
	return out
}

// searchBench is a search-mode front door over the labelled servers,
// twice over (1,228 tools), its index caught up.
func searchBench(b *testing.B) *fdHarness {
	h := newFrontDoor(b, nil, nil, func(c *config.Config) { c.FrontDoor.Discovery = config.DiscoverySearch }, labelledServers(b, 2)...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.g.FrontDoor.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	h.g.FrontDoor.Refresh(ctx)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := h.g.FrontDoor.SearchCaughtUp(wctx); err != nil {
		b.Fatal(err)
	}
	return h
}

// BenchmarkFindTools is hangar_find_tools over 1,228 tools with the
// labelled queries, in process through mcp-go's tools/call (filters,
// middlewares, the index), and reports its latency percentiles:
//
//	go test -run '^$' -bench FindTools ./internal/gateway/
func BenchmarkFindTools(b *testing.B) {
	h := searchBench(b)
	queries := labelledQueries(b)
	var took, cpu []time.Duration
	// The call runs on this goroutine: its thread's CPU time is the
	// call's, whatever else the machine runs.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		args, _ := json.Marshal(map[string]any{"query": queries[i%len(queries)], "limit": 10})
		msg := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hangar_find_tools","arguments":%s}}`, args)
		began, cpuBegan := time.Now(), threadCPU()
		out, err := json.Marshal(h.srv.HandleMessage(context.Background(), msg))
		cpu = append(cpu, threadCPU()-cpuBegan)
		took = append(took, time.Since(began))
		if err != nil || !strings.Contains(string(out), `\"matches\"`) {
			b.Fatalf("find: %v %.300s", err, out)
		}
		i++
	}
	b.StopTimer()
	reportPercentiles(b, "", took)
	reportPercentiles(b, "cpu-", cpu)
}

// reportPercentiles reports the p50 and p99 of ds in microseconds.
func reportPercentiles(b *testing.B, prefix string, ds []time.Duration) {
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), prefix+"p50-µs")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), prefix+"p99-µs")
}

// threadCPU is the CPU time of the calling thread, to the nanosecond
// (getrusage counts in scheduler ticks).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// BenchmarkSearchModeToolsList is tools/list in search mode over 1,228
// tools through mcp-go's own path (stdio and in-process clients; over
// HTTP it is served from the listing), in process: all of it is gateway
// CPU.
func BenchmarkSearchModeToolsList(b *testing.B) {
	h := searchBench(b)
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	var cpu []time.Duration
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		began := threadCPU()
		out, err := json.Marshal(h.srv.HandleMessage(context.Background(), msg))
		cpu = append(cpu, threadCPU()-began)
		if err != nil || !strings.Contains(string(out), `"hangar_find_tools"`) || strings.Contains(string(out), `"github__list_issues"`) {
			b.Fatalf("tools/list: %v %.300s", err, out)
		}
	}
	b.StopTimer()
	reportPercentiles(b, "cpu-", cpu)
}

// BenchmarkSearchModeToolsListHTTP is the same list on the stateless
// protocol through the gateway's whole HTTP handler, served from the
// listing (frontdoor_listing.go) after the first.
func BenchmarkSearchModeToolsListHTTP(b *testing.B) {
	h := searchBench(b)
	handler := h.g.HTTP(h.srv, endpoint.Options{}).Handler
	var cpu []time.Duration
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		began := threadCPU()
		handler.ServeHTTP(rec, listRequest(mcp.LATEST_PROTOCOL_VERSION))
		cpu = append(cpu, threadCPU()-began)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"hangar_find_tools"`) || strings.Contains(rec.Body.String(), `"github__list_issues"`) {
			b.Fatalf("tools/list: %d %.300s", rec.Code, rec.Body.String())
		}
	}
	b.StopTimer()
	reportPercentiles(b, "cpu-", cpu)
}

// BenchmarkSearchModeToolsListHTTPLegacy is the search-mode list on a
// 2025-11-25 session through the gateway's whole HTTP handler, served
// from the listing after the first (internal/frontdoor/listing.go), as
// figure 12 of the bench measures on the binary.
func BenchmarkSearchModeToolsListHTTPLegacy(b *testing.B) {
	h := searchBench(b)
	handler := h.g.HTTP(h.srv, endpoint.Options{}).Handler
	send := func(body, session string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		req.RemoteAddr = "127.0.0.1:50000"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK && rec.Code != http.StatusAccepted {
			b.Fatalf("%d %s", rec.Code, rec.Body.String())
		}
		return rec
	}
	rec := send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+mcp.LATEST_LEGACY_PROTOCOL_VERSION+
		`","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}`, "")
	session := rec.Header().Get("Mcp-Session-Id")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
	var cpu []time.Duration
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		began := threadCPU()
		rec := send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`, session)
		cpu = append(cpu, threadCPU()-began)
		if !strings.Contains(rec.Body.String(), `"hangar_find_tools"`) || strings.Contains(rec.Body.String(), `"github__list_issues"`) {
			b.Fatalf("tools/list: %.300s", rec.Body.String())
		}
	}
	b.StopTimer()
	reportPercentiles(b, "cpu-", cpu)
}
