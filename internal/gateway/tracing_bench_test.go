package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/metrics"
	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// BenchmarkFrontDoorCallHTTPTraced is BenchmarkFrontDoorCallHTTP with
// telemetry on: every call sampled (ratio 1.0), spans and metrics exported
// over OTLP/HTTP to a receiver in this process that reads and drops them.
// Its cpu-ns/op against BenchmarkFrontDoorCallHTTP's, same run, is what
// tracing costs per call.
func BenchmarkFrontDoorCallHTTPTraced(b *testing.B) {
	var exported atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		exported.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer recv.Close()
	one := 1.0
	var tel *telemetry.Telemetry
	g, h := benchGatewayWith(b, func(m *metrics.Metrics) *telemetry.Telemetry {
		t, err := telemetry.New(b.Context(), telemetry.Options{Recorder: m, Config: config.Telemetry{
			OTLP: config.OTLP{Endpoint: recv.URL}, SampleRatio: &one}})
		if err != nil || t == nil {
			b.Fatalf("telemetry: %v", err)
		}
		tel = t
		return t
	})
	post(b, h, "hangar_call", toolRequest(1, "hangar_call", `{"calls":[{"mcp_server":"math","tool":"add","arguments":{"a":1,"b":2}}]}`))
	g.FrontDoor.Refresh(b.Context())
	body := toolRequest(1, "math__add", `{"a":1,"b":2}`)
	for deadline := time.Now().Add(5 * time.Second); !try(h, "math__add", body); {
		if time.Now().After(deadline) {
			b.Fatal("math__add is not on the front door")
		}
		time.Sleep(time.Millisecond)
	}
	b.ReportAllocs()
	stop := cpuPerOp(b)
	for b.Loop() {
		post(b, h, "math__add", body)
	}
	// The export of what the loop made is part of its cost.
	if err := tel.Shutdown(b.Context()); err != nil {
		b.Fatal(err)
	}
	stop()
	if exported.Load() == 0 {
		b.Fatal("nothing was exported")
	}
}
