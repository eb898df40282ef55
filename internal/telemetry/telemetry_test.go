package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-hangar/hangar/internal/config"
)

type rig struct {
	t      *Telemetry
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	rec    *fakeRecorder
}

func newRig(t *testing.T) rig {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	rec := &fakeRecorder{}
	tel, err := NewWith(tp, mp, rec)
	if err != nil {
		t.Fatal(err)
	}
	return rig{t: tel, spans: spans, reader: reader, rec: rec}
}

func (r rig) span(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	var names []string
	for _, s := range r.spans.GetSpans() {
		if s.Name == name {
			return s
		}
		names = append(names, s.Name)
	}
	t.Fatalf("no span %q; have %q", name, names)
	return tracetest.SpanStub{}
}

type fakeRecorder struct {
	mu  sync.Mutex
	ops []string
}

func (f *fakeRecorder) ServerOperation(method, errorType string, _ float64, traceID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops = append(f.ops, "server "+method+" "+errorType+" "+traceID)
}

func (f *fakeRecorder) ClientOperation(server, method, errorType string, _ float64, traceID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops = append(f.ops, "client "+server+" "+method+" "+errorType+" "+traceID)
}

func attrs(s tracetest.SpanStub) map[attribute.Key]string {
	out := map[attribute.Key]string{}
	for _, a := range s.Attributes {
		out[a.Key] = a.Value.Emit()
	}
	return out
}

const (
	clientTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientParent = "00f067aa0ba902b7"
	traceparent  = "00-" + clientTrace + "-" + clientParent + "-01"
)

func TestServerSpans(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		req      ServerRequest
		span     string
		want     map[attribute.Key]string
		absent   []attribute.Key
		parented bool
	}{
		{
			name: "tools/call with traceparent in _meta",
			req: ServerRequest{Method: "tools/call", ID: json.RawMessage(`7`), ProtocolVersion: "2026-07-28", SessionID: "s1",
				Params:    json.RawMessage(`{"name":"math__add","arguments":{"a":1},"_meta":{"traceparent":"` + traceparent + `"}}`),
				Transport: TransportTCP, ClientAddress: "10.0.0.9", Identity: "agent"},
			span: "tools/call math__add",
			want: map[attribute.Key]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "math__add",
				"gen_ai.operation.name": "execute_tool", "jsonrpc.request.id": "7", "mcp.protocol.version": "2026-07-28",
				"network.transport": "tcp", "client.address": "10.0.0.9", "hangar.identity": "agent"},
			absent:   []attribute.Key{"mcp.session.id", "a"},
			parented: true,
		},
		{
			name: "traceparent in a header, legacy session",
			req: ServerRequest{Method: "prompts/get", ID: json.RawMessage(`"r-1"`), ProtocolVersion: "2025-11-25", SessionID: "s1",
				Params: json.RawMessage(`{"name":"greet"}`), Transport: TransportTCP,
				Header: http.Header{"Traceparent": {traceparent}}},
			span: "prompts/get greet",
			want: map[attribute.Key]string{"mcp.method.name": "prompts/get", "gen_ai.prompt.name": "greet",
				"jsonrpc.request.id": "r-1", "mcp.session.id": "s1", "mcp.protocol.version": "2025-11-25"},
			absent:   []attribute.Key{"gen_ai.tool.name", "gen_ai.operation.name"},
			parented: true,
		},
		{
			name: "resources/read names no target",
			req: ServerRequest{Method: "resources/read", ID: json.RawMessage(`1`), Params: json.RawMessage(`{"uri":"file:///a"}`),
				Transport: TransportTCP},
			span: "resources/read",
			want: map[attribute.Key]string{"mcp.resource.uri": "file:///a"},
		},
		{
			name: "initialize reads its version from params",
			req:  ServerRequest{Method: "initialize", ID: json.RawMessage(`0`), Params: json.RawMessage(`{"protocolVersion":"2025-11-25"}`)},
			span: "initialize",
			want: map[attribute.Key]string{"mcp.protocol.version": "2025-11-25"},
		},
		{
			name: "stdio, decoded already",
			req:  ServerRequest{Method: "tools/call", Target: "echo", Meta: map[string]any{"traceparent": traceparent}, Transport: TransportPipe},
			span: "tools/call echo", want: map[attribute.Key]string{"network.transport": "pipe", "gen_ai.tool.name": "echo"},
			parented: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			ctx, op := r.t.StartServer(t.Context(), tt.req)
			if ServerOp(ctx) != op {
				t.Error("ServerOp(ctx) is not the operation")
			}
			op.End()
			s := r.span(t, tt.span)
			if s.SpanKind != trace.SpanKindServer {
				t.Errorf("kind %v", s.SpanKind)
			}
			got := attrs(s)
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			for _, k := range tt.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s is set (%q)", k, got[k])
				}
			}
			if tt.parented != (s.Parent.TraceID().String() == clientTrace && s.Parent.SpanID().String() == clientParent) {
				t.Errorf("parent %v, want the client's: %v", s.Parent, tt.parented)
			}
			if s.Status.Code == codes.Error {
				t.Errorf("status %v", s.Status)
			}
		})
	}
}

func TestClientSpanAndInjection(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx, srv := r.t.StartServer(t.Context(), ServerRequest{Method: "tools/call", Params: json.RawMessage(`{"name":"pool__add"}`), ID: json.RawMessage(`1`)})
	gctx := WithGroup(ctx, "pool")
	cctx, op := r.t.StartClient(gctx, ClientRequest{Method: "tools/call", Tool: "add", Server: "math-1",
		Address: "math.internal", Port: 8080, Transport: TransportTCP, ColdStart: true})
	meta := MetaFields(cctx)
	headers := Headers(cctx)
	op.SetErrorType(ErrorToolError)
	op.End()
	srv.End()

	c := r.span(t, "tools/call add")
	s := r.span(t, "tools/call pool__add")
	if c.SpanKind != trace.SpanKindClient || c.Parent.SpanID() != s.SpanContext.SpanID() {
		t.Errorf("client span kind %v parent %v, want CLIENT under %v", c.SpanKind, c.Parent.SpanID(), s.SpanContext.SpanID())
	}
	want := "00-" + c.SpanContext.TraceID().String() + "-" + c.SpanContext.SpanID().String() + "-01"
	if meta["traceparent"] != want || headers["traceparent"] != want {
		t.Errorf("injected traceparent %v / %v, want the CLIENT span's %s", meta["traceparent"], headers["traceparent"], want)
	}
	got := attrs(c)
	for k, v := range map[attribute.Key]string{"server.address": "math.internal", "server.port": "8080", "hangar.server": "math-1",
		"hangar.group": "pool", "hangar.cold_start": "true", "error.type": "tool_error", "gen_ai.tool.name": "add"} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if c.Status.Code != codes.Error {
		t.Errorf("client status %v, want Error", c.Status)
	}
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	if len(r.rec.ops) != 2 || r.rec.ops[0] != "client math-1 tools/call tool_error "+c.SpanContext.TraceID().String() ||
		!strings.HasPrefix(r.rec.ops[1], "server tools/call  ") {
		t.Errorf("recorded %q", r.rec.ops)
	}
}

func TestErrorTypes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		do   func(op *Op, w http.ResponseWriter)
		want string
	}{
		{"ok", func(_ *Op, w http.ResponseWriter) {
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\"error\":{\"code\":1"}],"structuredContent":{"error":{"code":5}}}}`))
		}, ""},
		{"json-rpc error answer", func(_ *Op, w http.ResponseWriter) {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":"x","error":{"code":-32003,"message":"no"}}`))
		}, "-32003"},
		{"in an SSE event", func(_ *Op, w http.ResponseWriter) {
			_, _ = w.Write([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32602,\"message\":\"bad\"}}\n\n"))
		}, "-32602"},
		{"http status only", func(_ *Op, w http.ResponseWriter) {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte("session not found"))
		}, "404"},
		{"tool error", func(op *Op, _ http.ResponseWriter) { op.ToolError() }, "tool_error"},
		{"first error wins", func(op *Op, w http.ResponseWriter) {
			op.Fail(-32603)
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"x"}}`))
		}, "-32603"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			_, op := r.t.StartServer(t.Context(), ServerRequest{Method: "tools/call", Params: json.RawMessage(`{"name":"x"}`)})
			tt.do(op, WatchResponse(httptest.NewRecorder(), op))
			op.End()
			s := r.span(t, "tools/call x")
			got := attrs(s)["error.type"]
			if got != tt.want {
				t.Errorf("error.type %q, want %q", got, tt.want)
			}
			if (tt.want != "") != (s.Status.Code == codes.Error) {
				t.Errorf("status %v with error.type %q", s.Status, got)
			}
		})
	}
}

func TestSteps(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx, op := r.t.StartServer(t.Context(), ServerRequest{Method: "tools/call", Params: json.RawMessage(`{"name":"x"}`)})
	sctx, end := Step(ctx, StepColdStart, AttrServer.String("math"))
	_, endPull := Step(sctx, StepImagePull)
	endPull(nil)
	end(context.DeadlineExceeded)
	StepSince(ctx, StepQueueWait, time.Now().Add(-5*time.Millisecond), nil)
	StepSince(ctx, "hangar.too_short", time.Now(), nil)
	Event(ctx, EventRetry)
	op.End()
	srv := r.span(t, "tools/call x")
	cold := r.span(t, StepColdStart)
	pull := r.span(t, StepImagePull)
	wait := r.span(t, StepQueueWait)
	if cold.Parent.SpanID() != srv.SpanContext.SpanID() || pull.Parent.SpanID() != cold.SpanContext.SpanID() ||
		wait.Parent.SpanID() != srv.SpanContext.SpanID() {
		t.Error("steps are not children of the span they ran under")
	}
	if cold.Status.Code != codes.Error || wait.EndTime.Sub(wait.StartTime) < 5*time.Millisecond {
		t.Errorf("cold start status %v, queue wait %v", cold.Status, wait.EndTime.Sub(wait.StartTime))
	}
	if n := len(r.spans.GetSpans()); n != 4 {
		t.Errorf("%d spans, want 4 (a wait under a millisecond is none)", n)
	}
	if len(srv.Events) != 1 || srv.Events[0].Name != EventRetry {
		t.Errorf("events %v", srv.Events)
	}
}

func TestToolMiddleware(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	mw := r.t.ToolMiddleware(func(context.Context) string { return "me" })
	var inner trace.SpanContext
	h := mw(func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		inner = trace.SpanContextFromContext(ctx)
		return mcp.NewToolResultError("nope"), nil
	})
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": traceparent}}
	if _, err := h(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	s := r.span(t, "tools/call echo")
	got := attrs(s)
	if got["network.transport"] != "pipe" || got["error.type"] != "tool_error" || got["hangar.identity"] != "me" ||
		s.Parent.TraceID().String() != clientTrace || inner.SpanID() != s.SpanContext.SpanID() {
		t.Errorf("stdio span %v, parent %v, handler saw %v", got, s.Parent, inner.SpanID())
	}
	// Under an HTTP SERVER span it starts none of its own.
	ctx, op := r.t.StartServer(t.Context(), ServerRequest{Method: "tools/call", Params: json.RawMessage(`{"name":"echo"}`)})
	h2 := mw(func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, context.Canceled })
	_, _ = h2(ctx, req)
	op.End()
	if n := len(r.spans.GetSpans()); n != 2 {
		t.Errorf("%d spans, want 2", n)
	}
	if e := attrs(r.spans.GetSpans()[1])["error.type"]; e != "-32603" {
		t.Errorf("handler error: error.type %q", e)
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx, op := r.t.StartServer(t.Context(), ServerRequest{Method: "tools/call", Params: json.RawMessage(`{"name":"x"}`), Transport: TransportTCP})
	_, c := r.t.StartClient(ctx, ClientRequest{Method: "tools/call", Tool: "y", Server: "s", Transport: TransportPipe})
	c.End()
	op.Fail(-32003)
	op.End()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	found := map[string]map[attribute.Key]string{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok || len(h.DataPoints) != 1 || m.Unit != "s" {
				t.Errorf("%s: %T %d points, unit %q", m.Name, m.Data, len(h.DataPoints), m.Unit)
				continue
			}
			a := map[attribute.Key]string{}
			for _, kv := range h.DataPoints[0].Attributes.ToSlice() {
				a[kv.Key] = kv.Value.Emit()
			}
			found[m.Name] = a
		}
	}
	// Refused before any tool answered: the name is the caller's and stays
	// out of the series (the span has it).
	if a := found["mcp.server.operation.duration"]; a["mcp.method.name"] != "tools/call" || a["error.type"] != "-32003" || a["gen_ai.tool.name"] != "" {
		t.Errorf("server duration attributes %v", a)
	}
	if a := found["mcp.client.operation.duration"]; a["network.transport"] != "pipe" || a["gen_ai.tool.name"] != "y" {
		t.Errorf("client duration attributes %v", a)
	}
}

// Not parallel: AllocsPerRun refuses to run beside other tests.
func TestOffCostsNothing(t *testing.T) {
	var off *Telemetry
	ctx := t.Context()
	req := ServerRequest{Method: "tools/call", Params: json.RawMessage(`{"name":"x"}`)}
	w := httptest.NewRecorder()
	allocs := testing.AllocsPerRun(100, func() {
		c, op := off.StartServer(ctx, req)
		c, cop := off.StartClient(c, ClientRequest{Method: "tools/call"})
		c = WithGroup(c, "g")
		_, end := Step(c, StepColdStart)
		end(nil)
		StepSince(c, StepQueueWait, time.Time{}, nil)
		if MetaFields(c) != nil || Headers(c) != nil || WatchResponse(w, op) != w || ServerOp(c) != nil {
			t.Fatal("off: something was made")
		}
		cop.End()
		op.Fail(1)
		op.End()
	})
	if allocs != 0 {
		t.Errorf("off: %v allocations per request", allocs)
	}
}

// TestMetricsOnly: with no OTLP endpoint but a Recorder, every operation
// still reaches the Prometheus side, with its error type and no trace id,
// and nothing of tracing is made.
func TestMetricsOnly(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	rec := &fakeRecorder{}
	tel, err := New(t.Context(), Options{Recorder: rec})
	if err != nil || tel == nil || tel.Tracing() {
		t.Fatalf("New without endpoint: %v, %v (tracing %v)", tel, err, tel.Tracing())
	}
	if off, _ := New(t.Context(), Options{}); off != nil {
		t.Fatalf("New without endpoint nor recorder: %v, want nil", off)
	}
	ctx, op := tel.StartServer(t.Context(), ServerRequest{Method: "tools/call", Params: json.RawMessage(`{"name":"x"}`)})
	if ServerOp(ctx) != op || op == nil {
		t.Fatal("no server operation in the context")
	}
	w := WatchResponse(httptest.NewRecorder(), op)
	cctx, cop := tel.StartClient(ctx, ClientRequest{Method: "tools/call", Tool: "add", Server: "math"})
	if MetaFields(cctx) != nil || Headers(cctx) != nil || Recording(cctx) {
		t.Error("metrics only: trace context was made")
	}
	cop.ToolError()
	cop.End()
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`))
	op.End()
	rctx := tel.WithClient(t.Context(), ClientRequest{Server: "kit"})
	_, rop := StartRequest(rctx, "prompts/get", "greet", "")
	rop.EndRequest(nil)
	want := []string{"client math tools/call tool_error ", "server tools/call -32602 ", "client kit prompts/get  "}
	if !slices.Equal(rec.ops, want) {
		t.Errorf("recorded %q, want %q", rec.ops, want)
	}
}

// TestClientErrorType: a provider's JSON-RPC error answer is its code,
// however wrapped; a failure with no answer is _OTHER.
func TestClientErrorType(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want string
	}{
		{mcp.ErrInvalidParams, "-32602"},
		{fmt.Errorf("call add: %w", mcp.ErrMethodNotFound), "-32601"},
		{(&mcp.JSONRPCErrorDetails{Code: mcp.INTERNAL_ERROR, Message: "x"}).AsError(), "-32603"},
		{(&mcp.JSONRPCErrorDetails{Code: mcp.RESOURCE_NOT_FOUND, Message: "x"}).AsError(), "-32002"},
		{(&mcp.JSONRPCErrorDetails{Code: mcp.UNSUPPORTED_PROTOCOL_VERSION, Message: "x"}).AsError(), "-32022"},
		{context.DeadlineExceeded, ErrorOther},
		{errors.New("broken pipe"), ErrorOther},
	} {
		if got := ClientErrorType(tt.err); got != tt.want {
			t.Errorf("ClientErrorType(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestBindLog(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	if BindLog(t.Context(), log) != log {
		t.Error("no span: the logger must come back as is")
	}
	ctx, op := r.t.StartServer(t.Context(), ServerRequest{Method: "ping"})
	BindLog(ctx, log).Info("x")
	op.End()
	sc := r.span(t, "ping").SpanContext
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if line[FieldTraceID] != sc.TraceID().String() || line[FieldSpanID] != sc.SpanID().String() {
		t.Errorf("log line %v, want trace %s span %s", line, sc.TraceID(), sc.SpanID())
	}
}

// Not parallel: the environment is the process's.
func TestEnabled(t *testing.T) {
	tests := []struct {
		name string
		cfg  config.Telemetry
		env  map[string]string
		want bool
	}{
		{"default off", config.Telemetry{}, nil, false},
		{"config endpoint", config.Telemetry{OTLP: config.OTLP{Endpoint: "http://c:4318"}}, nil, true},
		{"env endpoint", config.Telemetry{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true},
		{"env traces endpoint", config.Telemetry{}, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, true},
		{"sdk disabled", config.Telemetry{OTLP: config.OTLP{Endpoint: "http://c:4318"}}, map[string]string{"OTEL_SDK_DISABLED": "true"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"} {
				t.Setenv(k, tt.env[k])
			}
			if got := Enabled(tt.cfg); got != tt.want {
				t.Errorf("Enabled = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHTTPURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		c    config.OTLP
		want string
	}{
		{config.OTLP{Endpoint: "http://c:4318"}, "http://c:4318/v1/traces"},
		{config.OTLP{Endpoint: "https://c/otlp/"}, "https://c/otlp/v1/traces"},
		{config.OTLP{Endpoint: "c:4318", Insecure: true}, "http://c:4318/v1/traces"},
		{config.OTLP{Endpoint: "c:4318"}, "https://c:4318/v1/traces"},
	} {
		if got := httpURL(tt.c, "/v1/traces"); got != tt.want {
			t.Errorf("httpURL(%+v) = %q, want %q", tt.c, got, tt.want)
		}
	}
}

func TestRequestSpans(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	if c, op := StartRequest(t.Context(), "resources/read", "", "file:///a"); op != nil || c != t.Context() {
		t.Fatal("a request with no provider noted made a span")
	}
	ctx, srv := r.t.StartServer(t.Context(), ServerRequest{Method: "resources/read", Params: json.RawMessage(`{"uri":"file:///a"}`)})
	ctx = r.t.WithClient(ctx, ClientRequest{Server: "docs", Transport: TransportPipe})
	_, read := StartRequest(ctx, "resources/read", "", "file:///a")
	read.EndRequest(nil)
	_, get := StartRequest(ctx, "prompts/get", "greet", "")
	get.EndRequest(context.DeadlineExceeded)
	srv.End()
	rd := r.span(t, "resources/read")
	for _, s := range r.spans.GetSpans() {
		if s.Name == "resources/read" && s.SpanKind == trace.SpanKindClient {
			rd = s
		}
	}
	if rd.SpanKind != trace.SpanKindClient || attrs(rd)["mcp.resource.uri"] != "file:///a" || attrs(rd)["hangar.server"] != "docs" {
		t.Errorf("resources/read CLIENT span: %v %v", rd.SpanKind, attrs(rd))
	}
	pg := r.span(t, "prompts/get greet")
	if a := attrs(pg); a["gen_ai.prompt.name"] != "greet" || a["error.type"] != ErrorOther || pg.Status.Code != codes.Error {
		t.Errorf("prompts/get CLIENT span: %v %v", a, pg.Status)
	}
}

// TestMetaFieldsAsPropagator: the trace context written directly is what
// the W3C propagators write, sampled or not, with state and baggage.
func TestMetaFieldsAsPropagator(t *testing.T) {
	t.Parallel()
	ts, _ := trace.ParseTraceState("k=v,x=y")
	bag, _ := baggage.Parse("user=a,tenant=b")
	for _, flags := range []trace.TraceFlags{0, trace.FlagsSampled} {
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: [16]byte{1, 2, 3}, SpanID: [8]byte{4, 5}, TraceFlags: flags, TraceState: ts})
		ctx := baggage.ContextWithBaggage(trace.ContextWithSpanContext(t.Context(), sc), bag)
		want := propagation.MapCarrier{}
		Propagator().Inject(ctx, want)
		meta, headers := MetaFields(ctx), Headers(ctx)
		if len(meta) != len(want) || len(headers) != len(want) {
			t.Fatalf("fields %v / %v, want %v", meta, headers, want)
		}
		for k, v := range want {
			m, _ := meta[k].(string)
			h := headers[k]
			if k == "baggage" {
				// Members in any order: a baggage is a set.
				m, h, v = sortedMembers(m), sortedMembers(h), sortedMembers(v)
			}
			if m != v || h != v {
				t.Errorf("%s: %v / %v, want %v", k, m, h, v)
			}
		}
	}
}

func sortedMembers(b string) string {
	ms := strings.Split(b, ",")
	slices.Sort(ms)
	return strings.Join(ms, ",")
}

// TestLogHandler: a line logged with a traced context carries its ids,
// once, also when a BindLog logger bound them; one without a span has none.
func TestLogHandler(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil)))
	ctx, op := r.t.StartServer(t.Context(), ServerRequest{Method: "ping"})
	log.InfoContext(ctx, "by context")
	BindLog(ctx, log).InfoContext(ctx, "bound")
	log.With("component", "x").WithGroup("g").InfoContext(ctx, "grouped", "k", "v")
	log.InfoContext(t.Context(), "untraced")
	op.End()
	sc := r.span(t, "ping").SpanContext
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines: %q", len(lines), lines)
	}
	for i, l := range lines {
		want := i < 3
		if n := strings.Count(l, `"trace_id":"`+sc.TraceID().String()+`"`); (n == 1) != want || n > 1 {
			t.Errorf("line %s: trace_id %d times, want it %v", l, n, want)
		}
		if want && !strings.Contains(l, `"span_id":"`+sc.SpanID().String()+`"`) {
			t.Errorf("line %s: no span_id", l)
		}
	}
}

// TestMethodLabelsAreBounded: a method the protocol does not define is
// _OTHER in spans and both duration histograms, however many a caller
// makes up; a tool name a refused call named makes no series either.
func TestMethodLabelsAreBounded(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for i := range 200 {
		ctx, op := r.t.StartServer(t.Context(), ServerRequest{Method: fmt.Sprintf("junk/%d", i), Transport: TransportTCP})
		_, c := r.t.StartClient(ctx, ClientRequest{Method: fmt.Sprintf("junk/%d", i), Server: "s", Transport: TransportPipe})
		c.End()
		op.Fail(-32601)
		op.End()
		ctx, op = r.t.StartServer(t.Context(), ServerRequest{Method: "tools/call", Params: json.RawMessage(fmt.Sprintf(`{"name":"nope-%d"}`, i)), Transport: TransportTCP})
		_ = ctx
		op.Fail(-32602)
		op.End()
	}
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok {
				continue
			}
			if n := len(h.DataPoints); n > 2 {
				t.Errorf("%s has %d series after 200 made-up methods and tool names, want at most 2", m.Name, n)
			}
			for _, dp := range h.DataPoints {
				if v, _ := dp.Attributes.Value("mcp.method.name"); v.Emit() != MethodOther && v.Emit() != "tools/call" {
					t.Errorf("%s: mcp.method.name %q", m.Name, v.Emit())
				}
			}
		}
	}
	for _, s := range r.spans.GetSpans() {
		if strings.HasPrefix(s.Name, "junk/") {
			t.Fatalf("span named %q", s.Name)
		}
	}
	for _, m := range []string{"tools/call", "initialize", "notifications/tools/list_changed", "subscriptions/listen", "mcp/list", "server/discover"} {
		if MethodName(m) != m {
			t.Errorf("MethodName(%q) = %q", m, MethodName(m))
		}
	}
	for _, m := range []string{"", "junk", "tools/call2", "mcp/whatever", "notifications/made-up"} {
		if MethodName(m) != MethodOther {
			t.Errorf("MethodName(%q) = %q, want %s", m, MethodName(m), MethodOther)
		}
	}
}
