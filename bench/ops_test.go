package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestGatewayOps(t *testing.T) {
	const exposition = `# HELP mcp_server_operation_duration_seconds MCP requests served by the gateway.
# TYPE mcp_server_operation_duration_seconds histogram
mcp_server_operation_duration_seconds_bucket{error_type="",mcp_method_name="tools/call",le="+Inf"} 4
mcp_server_operation_duration_seconds_sum{error_type="",mcp_method_name="tools/call"} 0.002
mcp_server_operation_duration_seconds_count{error_type="",mcp_method_name="tools/call"} 4
mcp_server_operation_duration_seconds_bucket{error_type="tool_error",mcp_method_name="tools/call",le="+Inf"} 1
mcp_server_operation_duration_seconds_sum{error_type="tool_error",mcp_method_name="tools/call"} 0.001
mcp_server_operation_duration_seconds_count{error_type="tool_error",mcp_method_name="tools/call"} 1
mcp_server_operation_duration_seconds_bucket{error_type="",mcp_method_name="tools/list",le="+Inf"} 7
mcp_server_operation_duration_seconds_sum{error_type="",mcp_method_name="tools/list"} 9
mcp_server_operation_duration_seconds_count{error_type="",mcp_method_name="tools/list"} 7
# HELP mcp_client_operation_duration_seconds MCP requests the gateway sent.
# TYPE mcp_client_operation_duration_seconds histogram
mcp_client_operation_duration_seconds_bucket{error_type="",mcp_method_name="tools/call",mcp_server="math",le="+Inf"} 3
mcp_client_operation_duration_seconds_sum{error_type="",mcp_method_name="tools/call",mcp_server="math"} 0.0015
mcp_client_operation_duration_seconds_count{error_type="",mcp_method_name="tools/call",mcp_server="math"} 3
`
	var path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(exposition))
	}))
	defer srv.Close()
	read, err := gatewayOps(srv.URL + "/mcp?x=1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if path != "/metrics" {
		t.Errorf("read %s, want /metrics", path)
	}
	// tools/call only, errors included; tools/list left out.
	want := opTimes{Served: 3 * time.Millisecond, ServedN: 5, Sent: 1500 * time.Microsecond, SentN: 3}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if served, sent := got.means(); served != 600*time.Microsecond || sent != 300*time.Microsecond {
		t.Errorf("means: %v served, %v sent per call; want 600µs and 300µs", served, sent)
	}
	if d := got.sub(opTimes{Served: time.Millisecond, ServedN: 1}); d.Served != 2*time.Millisecond || d.ServedN != 4 || d.SentN != 3 {
		t.Errorf("sub: %+v", d)
	}
}

func TestGatewayOpsWithoutCalls(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("# TYPE up gauge\nup 1\n"))
	}))
	defer srv.Close()
	read, err := gatewayOps(srv.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := read(t.Context()); err == nil {
		t.Error("no tools/call histogram: want an error, got none")
	}
}
