package telemetry

import (
	"encoding/json"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-hangar/hangar/internal/config"
)

const (
	remoteTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	// A client's traceparent, sampled (01) or not (00).
	sampledParent   = "00-" + remoteTrace + "-00f067aa0ba902b7-01"
	unsampledParent = "00-" + remoteTrace + "-00f067aa0ba902b7-00"
)

// sampledBy serves one request with traceparent under the sampler c
// makes and reports whether its SERVER span was recorded, and in which
// trace.
func sampledBy(t *testing.T, c config.Telemetry, traceparent string) (bool, string) {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	opts := []sdktrace.TracerProviderOption{sdktrace.WithSyncer(spans)}
	if s := Sampler(c); s != nil {
		opts = append(opts, sdktrace.WithSampler(s))
	}
	tel, err := NewWith(sdktrace.NewTracerProvider(opts...), sdkmetric.NewMeterProvider(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, op := tel.StartServer(t.Context(), ServerRequest{Method: "tools/call",
		Params: json.RawMessage(`{"name":"x","_meta":{"traceparent":"` + traceparent + `"}}`)})
	tid := trace.SpanContextFromContext(ctx).TraceID().String()
	op.End()
	return len(spans.GetSpans()) == 1, tid
}

// TestRemoteSampling: by default the gateway's ratio decides, whatever
// the client's sampled flag says (its trace id is still continued);
// trust_remote_sampling: true lets the flag decide.
func TestRemoteSampling(t *testing.T) {
	t.Parallel()
	zero, one := 0.0, 1.0
	tests := []struct {
		name        string
		c           config.Telemetry
		traceparent string
		recorded    bool
	}{
		{"a sampled client under ratio 0 is not recorded", config.Telemetry{SampleRatio: &zero}, sampledParent, false},
		{"an unsampled client under ratio 1 is recorded", config.Telemetry{SampleRatio: &one}, unsampledParent, true},
		{"no ratio: every request", config.Telemetry{}, unsampledParent, true},
		{"trusted: a sampled client under ratio 0 is recorded", config.Telemetry{SampleRatio: &zero, TrustRemoteSampling: true}, sampledParent, true},
		{"trusted: an unsampled client under ratio 1 is not", config.Telemetry{SampleRatio: &one, TrustRemoteSampling: true}, unsampledParent, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, tid := sampledBy(t, tt.c, tt.traceparent)
			if got != tt.recorded {
				t.Errorf("recorded = %v, want %v", got, tt.recorded)
			}
			if tid != remoteTrace {
				t.Errorf("trace id %s, want the client's %s", tid, remoteTrace)
			}
		})
	}
}

// TestBaggageNotForwarded: a client's baggage reaches providers (the
// _meta fields and headers of the gateway's requests) only with the keys
// telemetry.forward_baggage lists; none by default.
func TestBaggageNotForwarded(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		keys  []string
		wantB string
	}{
		{"none by default", nil, ""},
		{"listed keys only", []string{"tenant"}, "tenant=t1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			r.t.forwardBaggage = forwardSet(tt.keys)
			for _, req := range []ServerRequest{
				{Method: "tools/call", Params: json.RawMessage(`{"name":"x","_meta":{"traceparent":"` + sampledParent + `","baggage":"tenant=t1,user.email=a%40example.com"}}`)},
				{Method: "tools/call", Params: json.RawMessage(`{"name":"x"}`), Header: map[string][]string{
					"Traceparent": {sampledParent}, "Baggage": {"tenant=t1,user.email=a%40example.com"}}},
			} {
				ctx, op := r.t.StartServer(t.Context(), req)
				ctx, c := r.t.StartClient(ctx, ClientRequest{Method: "tools/call", Tool: "x", Server: "s"})
				meta, headers := MetaFields(ctx), Headers(ctx)
				c.End()
				op.End()
				if got, _ := meta["baggage"].(string); got != tt.wantB || headers["baggage"] != tt.wantB {
					t.Errorf("forwarded baggage %q (meta) / %q (headers), want %q", got, headers["baggage"], tt.wantB)
				}
				if strings.Contains(meta["traceparent"].(string), remoteTrace) == false {
					t.Errorf("the trace is not continued: %v", meta)
				}
			}
		})
	}
}
