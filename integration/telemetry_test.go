package integration

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcp-hangar/hangar/internal/app"
	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// otlpReceiver is an OTLP/HTTP collector in the test process: it decodes
// what the gateway exports and keeps it for the test to look at.
type otlpReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.Span
	metrics map[string]bool
	got     chan struct{} // a signal per export
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{metrics: map[string]bool{}, got: make(chan struct{}, 1)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		switch req.URL.Path {
		case "/v1/traces":
			var m coltrace.ExportTraceServiceRequest
			if err = proto.Unmarshal(body, &m); err == nil {
				for _, rs := range m.ResourceSpans {
					for _, ss := range rs.ScopeSpans {
						r.spans = append(r.spans, ss.Spans...)
					}
				}
			}
		case "/v1/metrics":
			var m colmetrics.ExportMetricsServiceRequest
			if err = proto.Unmarshal(body, &m); err == nil {
				for _, rm := range m.ResourceMetrics {
					for _, sm := range rm.ScopeMetrics {
						for _, mt := range sm.Metrics {
							if mt.GetHistogram() != nil && len(mt.GetHistogram().DataPoints) > 0 {
								r.metrics[mt.Name] = true
							}
						}
					}
				}
			}
		default:
			err = fmt.Errorf("unexpected path %s", req.URL.Path)
		}
		r.mu.Unlock()
		if err != nil {
			t.Errorf("otlp receiver: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case r.got <- struct{}{}:
		default:
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(r.Close)
	return r
}

// wait returns the spans once find is satisfied by them, waiting for
// exports until the deadline.
func (r *otlpReceiver) wait(t *testing.T, what string, find func([]*tracepb.Span) bool) []*tracepb.Span {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		r.mu.Lock()
		spans := append([]*tracepb.Span(nil), r.spans...)
		r.mu.Unlock()
		if find(spans) {
			return spans
		}
		select {
		case <-r.got:
		case <-deadline:
			t.Fatalf("no %s among %d exported spans: %s", what, len(spans), describeSpans(spans))
		}
	}
}

func (r *otlpReceiver) hasMetric(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.metrics[name]
}

func describeSpans(spans []*tracepb.Span) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "\n  %q %s trace %x span %x parent %x %v", s.Name, s.Kind, s.TraceId, s.SpanId, s.ParentSpanId, spanAttrs(s))
	}
	return b.String()
}

func spanAttrs(s *tracepb.Span) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.Key] = strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			out[kv.Key] = strconv.FormatBool(v.BoolValue)
		default:
			out[kv.Key] = kv.Value.String()
		}
	}
	return out
}

func spanNamed(spans []*tracepb.Span, name string, kind tracepb.Span_SpanKind, match func(*tracepb.Span) bool) *tracepb.Span {
	for _, s := range spans {
		if s.Name == name && s.Kind == kind && (match == nil || match(s)) {
			return s
		}
	}
	return nil
}

func inTrace(trace []byte) func(*tracepb.Span) bool {
	return func(s *tracepb.Span) bool { return bytes.Equal(s.TraceId, trace) }
}

func childOf(parent *tracepb.Span) func(*tracepb.Span) bool {
	return func(s *tracepb.Span) bool { return bytes.Equal(s.ParentSpanId, parent.SpanId) }
}

// jsonLines decodes the gateway's JSON log lines.
func jsonLines(s *syncBuffer) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(s.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// callWithTrace calls name with a client's traceparent in _meta; it
// returns the client's trace id and the tool's text.
func callWithTrace(t *testing.T, c *mcpclient.Client, name string, args map[string]any) ([]byte, string, bool) {
	t.Helper()
	trace, parent := randomBytes(16), randomBytes(8)
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{
		"traceparent": "00-" + hex.EncodeToString(trace) + "-" + hex.EncodeToString(parent) + "-01"}}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	text := ""
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			text = tc.Text
		}
	}
	return append(trace, parent...), text, res.IsError
}

func randomBytes(n int) []byte {
	b, _ := hex.DecodeString(randomHex(n))
	return b
}

func wantAttrs(t *testing.T, s *tracepb.Span, want map[string]string) {
	t.Helper()
	got := spanAttrs(s)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: %s = %q, want %q (all: %v)", s.Name, k, got[k], v, got)
		}
	}
	for k := range got {
		if strings.HasPrefix(k, "gen_ai.tool.call.arguments") || strings.Contains(strings.ToLower(k), "token") {
			t.Errorf("span %q carries %s", s.Name, k)
		}
	}
}

// startTestkitHTTP runs the testkit binary serving streamable HTTP on a
// loopback port, for a remote provider the gateway reaches over TCP.
func startTestkitHTTP(t *testing.T, bin string) int {
	port := freePort(t)
	cmd := exec.Command(bin, "--transport", "http", "--port", strconv.Itoa(port))
	cmd.Stderr = newTestLog(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/mcp")
		if err == nil {
			resp.Body.Close()
			return port
		}
		if time.Now().After(deadline) {
			t.Fatalf("testkit on port %d: %v", port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTelemetryTraces follows calls through the gateway into providers in
// the spans exported over OTLP: a call by name (with a cold start), a
// hangar_call batch, a tool error, a refused call, and the trace context
// the providers receive; then the MCP metrics, exemplars and log lines.
func TestTelemetryTraces(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "200")
	recv := newOTLPReceiver(t)
	bin := filepath.Join(t.TempDir(), "testkit")
	build := exec.Command("go", "build", "-o", bin, "./images/testkit")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build testkit: %v\n%s", err, out)
	}
	webPort := startTestkitHTTP(t, bin)
	const token = "telemetry-test-token"
	// The scraper's token reaches every server: /metrics in full, in
	// OpenMetrics when asked (a servers-limited token gets its servers'
	// series as text).
	const scraper = "telemetry-test-scraper"
	var logs syncBuffer
	path := writeConfig(t, fmt.Sprintf(`
auth:
  tokens:
    - {name: agent, token_sha256: "%s", scopes: [hangar:read, hangar:call], servers: [tk, meta, web]}
    - {name: prometheus, token_sha256: "%s", scopes: [hangar:read]}
front_door: {prefetch: true}
telemetry:
  otlp: {endpoint: %q}
  sample_ratio: 1.0
mcp_servers:
  tk:
    mode: docker
    image: mcp-hangar/testkit:dev
    start_timeout_s: 30
  meta:
    mode: subprocess
    command: [%q]
  web:
    mode: remote
    endpoint: http://127.0.0.1:%d/mcp
  other:
    mode: subprocess
    command: [%q]
`, auth.HashHex(token), auth.HashHex(scraper), recv.URL, bin, webPort, bin))
	g := startGatewayFile(t, path, app.Options{Log: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	headers := map[string]string{"Authorization": "Bearer " + token}
	dial := func(t *testing.T, opts ...mcpclient.ClientOption) *mcpclient.Client {
		tr, err := transport.NewStreamableHTTP(g.MCPURL, transport.WithHTTPHeaders(headers))
		if err != nil {
			t.Fatal(err)
		}
		return startSession(t, mcpclient.NewClient(tr, opts...)).Client
	}
	modern := dial(t)
	// The front door lists the providers' tools once their prefetch (a
	// start, tools/list and a stop) is done; the first call then finds
	// tk cold again.
	for deadline := time.Now().Add(60 * time.Second); ; {
		res, err := modern.ListTools(t.Context(), mcp.ListToolsRequest{})
		listed := map[string]bool{}
		if err == nil {
			for _, tl := range res.Tools {
				listed[tl.Name] = true
			}
		}
		if listed["tk__echo"] && listed["meta__echo_meta"] && listed["web__echo_meta"] && g.App.Providers != nil {
			if p, ok := g.App.Providers.Get("tk"); ok && p.State() == provider.Cold {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the front door does not list the providers' tools (or tk is not cold): %v, %v", listed, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	t.Run("call by name, cold start", func(t *testing.T) {
		ids, text, isErr := callWithTrace(t, modern, "tk__echo", map[string]any{"text": "secret-argument"})
		if isErr || text != "secret-argument" {
			t.Fatalf("tk__echo = %q (error %v)", text, isErr)
		}
		trace, parent := ids[:16], ids[16:]
		var srv, cli, cold *tracepb.Span
		recv.wait(t, "SERVER, CLIENT and cold start spans of tk__echo", func(spans []*tracepb.Span) bool {
			srv = spanNamed(spans, "tools/call tk__echo", tracepb.Span_SPAN_KIND_SERVER, inTrace(trace))
			if srv == nil {
				return false
			}
			cli = spanNamed(spans, "tools/call echo", tracepb.Span_SPAN_KIND_CLIENT, childOf(srv))
			cold = spanNamed(spans, "hangar.cold_start", tracepb.Span_SPAN_KIND_INTERNAL, childOf(srv))
			return cli != nil && cold != nil
		})
		if !bytes.Equal(srv.ParentSpanId, parent) {
			t.Errorf("SERVER span's parent %x, want the client's span %x from _meta", srv.ParentSpanId, parent)
		}
		wantAttrs(t, srv, map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "tk__echo",
			"gen_ai.operation.name": "execute_tool", "mcp.protocol.version": mcp.LATEST_PROTOCOL_VERSION,
			"network.transport": "tcp", "client.address": "127.0.0.1", "hangar.server": "tk", "hangar.identity": "agent"})
		if spanAttrs(srv)["jsonrpc.request.id"] == "" {
			t.Error("SERVER span has no jsonrpc.request.id")
		}
		if _, ok := spanAttrs(srv)["mcp.session.id"]; ok {
			t.Error("mcp.session.id set on a 2026-07-28 request")
		}
		wantAttrs(t, cli, map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo",
			"network.transport": "pipe", "hangar.server": "tk", "hangar.cold_start": "true"})
		for _, s := range []*tracepb.Span{srv, cli, cold} {
			if s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
				t.Errorf("span %q has ERROR status", s.Name)
			}
		}
		// Log lines of the call carry its trace: its one audit entry is
		// the call path's (front_door, the server's own tool name).
		var traced int
		for _, l := range jsonLines(&logs) {
			if l["msg"] == "audit" && l["action"] == "front_door" && l["mcp_server"] == "tk" && l["tool"] == "echo" {
				if l["trace_id"] != hex.EncodeToString(trace) || l["span_id"] == "" {
					t.Errorf("audit line %v: want trace_id %x and a span_id", l, trace)
				}
				traced++
			}
		}
		if traced == 0 {
			t.Error("no audit line of the call")
		}
		if strings.Contains(logs.String(), token) {
			t.Error("the token is in the log")
		}
	})

	t.Run("hangar_call batch", func(t *testing.T) {
		ids, text, isErr := callWithTrace(t, modern, "hangar_call", map[string]any{"calls": []any{
			map[string]any{"mcp_server": "tk", "tool": "echo", "arguments": map[string]any{"text": "a"}},
			map[string]any{"mcp_server": "meta", "tool": "echo", "arguments": map[string]any{"text": "b"}},
		}})
		if isErr {
			t.Fatalf("hangar_call: %s", text)
		}
		trace := ids[:16]
		var srv *tracepb.Span
		var clients []*tracepb.Span
		recv.wait(t, "two CLIENT spans under hangar_call", func(spans []*tracepb.Span) bool {
			srv = spanNamed(spans, "tools/call hangar_call", tracepb.Span_SPAN_KIND_SERVER, inTrace(trace))
			clients = clients[:0]
			for _, s := range spans {
				if srv != nil && s.Kind == tracepb.Span_SPAN_KIND_CLIENT && bytes.Equal(s.ParentSpanId, srv.SpanId) {
					clients = append(clients, s)
				}
			}
			return len(clients) == 2
		})
		servers := map[string]bool{}
		for _, c := range clients {
			if c.Name != "tools/call echo" {
				t.Errorf("CLIENT span %q, want tools/call echo", c.Name)
			}
			servers[spanAttrs(c)["hangar.server"]] = true
		}
		if !servers["tk"] || !servers["meta"] {
			t.Errorf("CLIENT spans' servers %v, want tk and meta", servers)
		}
	})

	t.Run("tool error", func(t *testing.T) {
		ids, _, isErr := callWithTrace(t, modern, "tk__fail", map[string]any{"message": "boom"})
		if !isErr {
			t.Fatal("tk__fail did not fail")
		}
		var srv, cli *tracepb.Span
		recv.wait(t, "spans of tk__fail", func(spans []*tracepb.Span) bool {
			srv = spanNamed(spans, "tools/call tk__fail", tracepb.Span_SPAN_KIND_SERVER, inTrace(ids[:16]))
			if srv != nil {
				cli = spanNamed(spans, "tools/call fail", tracepb.Span_SPAN_KIND_CLIENT, childOf(srv))
			}
			return cli != nil
		})
		for _, s := range []*tracepb.Span{srv, cli} {
			wantAttrs(t, s, map[string]string{"error.type": "tool_error"})
			if s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
				t.Errorf("span %q status %v, want ERROR", s.Name, s.Status)
			}
		}
	})

	t.Run("refused call", func(t *testing.T) {
		ids, parent := randomBytes(16), randomBytes(8)
		// other is a server the token may not call.
		body := `{"jsonrpc":"2.0","id":"refused-1","method":"tools/call","params":{"name":"other__echo","arguments":{"text":"x"},` +
			`"_meta":{"traceparent":"00-` + hex.EncodeToString(ids) + `-` + hex.EncodeToString(parent) + `-01",` +
			`"io.modelcontextprotocol/protocolVersion":"` + mcp.LATEST_PROTOCOL_VERSION + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, g.MCPURL, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", mcp.LATEST_PROTOCOL_VERSION)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "other__echo")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var rpc struct {
			Error struct{ Code int } `json:"error"`
		}
		if err := json.Unmarshal(answer, &rpc); err != nil || rpc.Error.Code == 0 {
			t.Fatalf("refusal: %d %s", resp.StatusCode, answer)
		}
		var srv *tracepb.Span
		spans := recv.wait(t, "the refused call's SERVER span", func(spans []*tracepb.Span) bool {
			srv = spanNamed(spans, "tools/call other__echo", tracepb.Span_SPAN_KIND_SERVER, inTrace(ids))
			return srv != nil
		})
		wantAttrs(t, srv, map[string]string{"error.type": strconv.Itoa(rpc.Error.Code), "jsonrpc.request.id": "refused-1"})
		if !bytes.Equal(srv.ParentSpanId, parent) {
			t.Errorf("refused call's SERVER span parent %x, want %x", srv.ParentSpanId, parent)
		}
		if srv.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
			t.Errorf("refused call's status %v, want ERROR", srv.Status)
		}
		if c := spanNamed(spans, "tools/call echo", tracepb.Span_SPAN_KIND_CLIENT, inTrace(ids)); c != nil {
			t.Errorf("a refused call reached a provider: %v", spanAttrs(c))
		}
	})

	t.Run("providers receive the CLIENT span's context", func(t *testing.T) {
		for _, server := range []string{"meta", "web"} {
			t.Run(server, func(t *testing.T) {
				ids, text, isErr := callWithTrace(t, modern, server+"__echo_meta", nil)
				if isErr {
					t.Fatalf("echo_meta: %s", text)
				}
				var got struct {
					Meta   map[string]any `json:"meta"`
					Header string         `json:"traceparent_header"`
				}
				if err := json.Unmarshal([]byte(text), &got); err != nil {
					t.Fatalf("echo_meta answer %q: %v", text, err)
				}
				var cli *tracepb.Span
				recv.wait(t, "the CLIENT span of echo_meta", func(spans []*tracepb.Span) bool {
					cli = spanNamed(spans, "tools/call echo_meta", tracepb.Span_SPAN_KIND_CLIENT, inTrace(ids[:16]))
					return cli != nil
				})
				want := "00-" + hex.EncodeToString(cli.TraceId) + "-" + hex.EncodeToString(cli.SpanId) + "-01"
				if got.Meta["traceparent"] != want {
					t.Errorf("provider's _meta traceparent %v, want the CLIENT span's %s", got.Meta["traceparent"], want)
				}
				if server == "web" {
					if got.Header != want {
						t.Errorf("provider's traceparent header %q, want %s", got.Header, want)
					}
					wantAttrs(t, cli, map[string]string{"network.transport": "tcp", "server.address": "127.0.0.1",
						"server.port": strconv.Itoa(webPort)})
				}
			})
		}
	})

	t.Run("legacy session", func(t *testing.T) {
		legacy := dial(t, mcpclient.WithProtocolVersion("2025-11-25"))
		ids, _, isErr := callWithTrace(t, legacy, "tk__echo", map[string]any{"text": "x"})
		if isErr {
			t.Fatal("tk__echo failed")
		}
		var srv *tracepb.Span
		recv.wait(t, "the legacy call's SERVER span", func(spans []*tracepb.Span) bool {
			srv = spanNamed(spans, "tools/call tk__echo", tracepb.Span_SPAN_KIND_SERVER, inTrace(ids[:16]))
			return srv != nil
		})
		wantAttrs(t, srv, map[string]string{"mcp.protocol.version": "2025-11-25"})
		if spanAttrs(srv)["mcp.session.id"] == "" {
			t.Error("a 2025-11-25 request's span has no mcp.session.id")
		}
	})

	t.Run("go-sdk client", func(t *testing.T) {
		for _, version := range []string{"2025-11-25", mcp.LATEST_PROTOCOL_VERSION} {
			t.Run(version, func(t *testing.T) {
				c := sdk.NewClient(&sdk.Implementation{Name: "telemetry-test", Version: "1"}, nil)
				hc := &http.Client{Transport: bearer{token: token}}
				cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: g.MCPURL, HTTPClient: hc, MaxRetries: 1},
					&sdk.ClientSessionOptions{ProtocolVersion: version})
				if err != nil {
					t.Fatalf("go-sdk connect: %v", err)
				}
				defer cs.Close()
				trace, parent := randomBytes(16), randomBytes(8)
				res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "tk__echo", Arguments: map[string]any{"text": "sdk"},
					Meta: sdk.Meta{"traceparent": "00-" + hex.EncodeToString(trace) + "-" + hex.EncodeToString(parent) + "-01"}})
				if err != nil || res.IsError {
					t.Fatalf("go-sdk tk__echo: %v %v", err, res)
				}
				var srv, cli *tracepb.Span
				recv.wait(t, "the go-sdk call's spans", func(spans []*tracepb.Span) bool {
					srv = spanNamed(spans, "tools/call tk__echo", tracepb.Span_SPAN_KIND_SERVER, inTrace(trace))
					if srv != nil {
						cli = spanNamed(spans, "tools/call echo", tracepb.Span_SPAN_KIND_CLIENT, childOf(srv))
					}
					return cli != nil
				})
				if !bytes.Equal(srv.ParentSpanId, parent) {
					t.Errorf("SERVER span parent %x, want the go-sdk client's %x", srv.ParentSpanId, parent)
				}
				wantAttrs(t, srv, map[string]string{"mcp.protocol.version": version, "hangar.identity": "agent"})
				if _, ok := spanAttrs(srv)["mcp.session.id"]; ok != (version == "2025-11-25") {
					t.Errorf("mcp.session.id present %v on %s", ok, version)
				}
			})
		}
	})

	t.Run("metrics", func(t *testing.T) {
		deadline := time.Now().Add(30 * time.Second)
		for !recv.hasMetric("mcp.server.operation.duration") || !recv.hasMetric("mcp.client.operation.duration") {
			if time.Now().After(deadline) {
				t.Fatal("the MCP duration histograms were not exported over OTLP")
			}
			select {
			case <-recv.got:
			case <-time.After(time.Second):
			}
		}
		text := scrape(t, g.URL+"/metrics", scraper, "application/openmetrics-text; version=1.0.0")
		if !regexp.MustCompile(`mcp_server_operation_duration_seconds_bucket\{[^}]*\} \d+ # \{trace_id="[0-9a-f]{32}"\}`).MatchString(text) {
			var lines []string
			for _, l := range strings.Split(text, "\n") {
				if strings.HasPrefix(l, "mcp_server_operation_duration_seconds_bucket") {
					lines = append(lines, l)
				}
			}
			t.Errorf("no exemplar with a trace id on mcp_server_operation_duration_seconds:\n%s", strings.Join(lines, "\n"))
		}
		checkDashboard(t, scrape(t, g.URL+"/metrics", scraper, ""))
	})
}

// bearer adds the token to every request of the go-sdk client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func scrape(t *testing.T, url, token, accept string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// checkDashboard checks that every metric the Grafana dashboard's queries
// name is one /metrics of the running gateway serves.
func checkDashboard(t *testing.T, metrics string) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "compose", "grafana", "hangar.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	served := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) `).FindAllStringSubmatch(metrics, -1) {
		served[m[1]] = true
	}
	name := regexp.MustCompile(`\b(?:hangar|mcp)_[a-z0-9_]+`)
	// Label names (in matchers, by and without) are no metrics.
	labels := regexp.MustCompile(`\{[^}]*\}|\b(?:by|without)\s*\([^)]*\)`)
	var queries int
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			queries++
			names := name.FindAllString(labels.ReplaceAllString(tg.Expr, ""), -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query %q names no hangar metric", p.Title, tg.Expr)
			}
			for _, n := range names {
				family := n
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if f, ok := strings.CutSuffix(n, suffix); ok && served[f] {
						family = f
					}
				}
				if !served[family] {
					t.Errorf("panel %q: metric %s is not in /metrics", p.Title, n)
				}
			}
		}
	}
	if queries < 8 {
		t.Errorf("the dashboard has %d queries", queries)
	}
}
