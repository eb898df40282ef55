package telemetry

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"testing"
	"time"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/mcp-hangar/hangar/internal/config"
)

// grpcReceiver is an OTLP/gRPC collector in the test process: it keeps
// the names of the spans and metrics it receives.
type grpcReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	colmetricspb.UnimplementedMetricsServiceServer
	mu      sync.Mutex
	spans   []string
	metrics []string
}

func (g *grpcReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				g.spans = append(g.spans, s.GetName())
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

type grpcMetrics struct{ *grpcReceiver }

func (g grpcMetrics) Export(_ context.Context, req *colmetricspb.ExportMetricsServiceRequest) (*colmetricspb.ExportMetricsServiceResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				g.metrics = append(g.metrics, m.GetName())
			}
		}
	}
	return &colmetricspb.ExportMetricsServiceResponse{}, nil
}

// TestGRPCExport: with protocol grpc, spans and the MCP duration metrics
// reach an OTLP/gRPC collector.
func TestGRPCExport(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	recv := &grpcReceiver{}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, recv)
	colmetricspb.RegisterMetricsServiceServer(srv, grpcMetrics{recv})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	one := 1.0
	tel, err := New(t.Context(), Options{Config: config.Telemetry{SampleRatio: &one,
		OTLP: config.OTLP{Endpoint: lis.Addr().String(), Protocol: config.OTLPGRPC, Insecure: true}}})
	if err != nil || !tel.Tracing() {
		t.Fatalf("New: %v, %v", tel, err)
	}
	ctx, op := tel.StartServer(t.Context(), ServerRequest{Method: "tools/call", Params: json.RawMessage(`{"name":"math__add"}`), Transport: TransportTCP})
	_, cop := tel.StartClient(ctx, ClientRequest{Method: "tools/call", Tool: "add", Server: "math", Transport: TransportPipe})
	cop.End()
	op.End()
	sctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	// Shutdown flushes both pipelines and returns once they were exported.
	if err := tel.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	want := map[string]bool{"tools/call math__add": false, "tools/call add": false, "mcp.server.operation.duration": false, "mcp.client.operation.duration": false}
	for _, n := range append(recv.spans, recv.metrics...) {
		if _, ok := want[n]; ok {
			want[n] = true
		}
	}
	for n, got := range want {
		if !got {
			t.Errorf("%s not received over gRPC (spans %q, metrics %q)", n, recv.spans, recv.metrics)
		}
	}
}
