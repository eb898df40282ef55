package telemetry

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkCall is the telemetry of one traced call by name: its SERVER
// span, the CLIENT span of the provider call, the trace context put in
// the provider request, and both duration metrics; spans go to the
// gateway's batcher, whose exporter drops them (the export's encoding is
// not in it).
func BenchmarkCall(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(newEnvBatcher(discard{})))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tel, err := NewWith(tp, mp, nil)
	if err != nil {
		b.Fatal(err)
	}
	req := ServerRequest{Method: "tools/call", ID: json.RawMessage(`1`), ProtocolVersion: "2026-07-28",
		Params:    json.RawMessage(`{"name":"math__add","arguments":{"a":1,"b":2},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`),
		Transport: TransportTCP, ClientAddress: "127.0.0.1", Identity: "agent"}
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		ctx, op := tel.StartServer(context.Background(), req)
		_ = WatchResponse(w, op)
		op.Target("math", false)
		cctx, cop := tel.StartClient(ctx, ClientRequest{Method: "tools/call", Tool: "add", Server: "math", Transport: TransportPipe})
		_ = MetaFields(cctx)
		cop.End()
		op.End()
	}
}
