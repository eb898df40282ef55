package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Figure 11: what tracing costs a call (issue 22's target: on, sampling
// every call and exporting over OTLP, costs at most 15% more gateway CPU
// than off). Two gateways, one with telemetry off and one exporting to a
// receiver in the bench process, each with a warm math provider, take
// calls by name in alternating rounds; each one's CPU is read from before
// its first round until its span exporter has flushed after the last.

const targetTracingRatio = 1.15

// telemetryFlush is longer than the span processor's schedule delay
// (OTEL_BSP_SCHEDULE_DELAY, 5 s by default): what the rounds left in its
// queue is exported, and counted, before the CPU is read.
const telemetryFlush = 6 * time.Second

// TelemetryResult is figure 11.
type TelemetryResult struct {
	Off, On PathResult
	// OffCPU and OnCPU are each gateway's CPU time per call over the whole
	// measurement, its export included.
	OffCPU, OnCPU time.Duration
	// Exports and Bytes are what the receiver got from the traced gateway.
	Exports, Bytes int64
}

// otlpReceiver is an OTLP/HTTP endpoint that reads what it gets and
// answers with an empty success.
func otlpReceiver() (addr string, exports, bytes *atomic.Int64, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, nil, err
	}
	exports, bytes = new(atomic.Int64), new(atomic.Int64)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		if strings.HasSuffix(r.URL.Path, "/v1/traces") {
			exports.Add(1)
			bytes.Add(n)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), exports, bytes, func() { _ = srv.Close() }, nil
}

// Telemetry measures figure 11 on its own two gateways.
func (b *Bench) Telemetry(ctx context.Context) (*TelemetryResult, error) {
	addr, exports, bytes, stopRecv, err := otlpReceiver()
	if err != nil {
		return nil, err
	}
	defer stopRecv()
	defs := []srvDef{{"math", mathImage}}
	off, err := b.StartGateway("teloff", configYAML(defs, ""))
	if err != nil {
		return nil, err
	}
	defer stopGateway(off, b.log)
	on, err := b.StartGateway("telon", configYAML(defs, fmt.Sprintf(
		"telemetry:\n  otlp:\n    endpoint: http://%s\n    insecure: true\n  sample_ratio: 1.0\n", addr)))
	if err != nil {
		return nil, err
	}
	defer stopGateway(on, b.log)
	var calls []callFn
	for _, g := range []*Gateway{off, on} {
		c, err := Dial(ctx, g.MCPURL)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		call := frontDoorAdd(c, "math__add")
		// The first call starts the provider; the front door lists
		// math__add once it has its catalog.
		deadline := time.Now().Add(30 * time.Second)
		for err := call(ctx, 0); err != nil; err = call(ctx, 0) {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return nil, fmt.Errorf("gateway %s: math__add: %w", g.Name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		calls = append(calls, call)
	}
	paths := []path{{workers: calls[:1], cpu: off.CPU}, {workers: calls[1:], cpu: on.CPU}}
	if _, err := interleave(ctx, 1, b.n(100, 20), paths); err != nil { // warm-up
		return nil, err
	}
	time.Sleep(telemetryFlush) // the warm-up's spans leave first
	offBefore, err := off.CPU()
	if err != nil {
		return nil, err
	}
	onBefore, err := on.CPU()
	if err != nil {
		return nil, err
	}
	exportsBefore, bytesBefore := exports.Load(), bytes.Load()
	const rounds = 10
	r, err := interleave(ctx, rounds, b.n(1500, 300)/rounds, paths)
	if err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(telemetryFlush):
	}
	offAfter, err := off.CPU()
	if err != nil {
		return nil, err
	}
	onAfter, err := on.CPU()
	if err != nil {
		return nil, err
	}
	res := &TelemetryResult{Off: r[0], On: r[1], Exports: exports.Load() - exportsBefore, Bytes: bytes.Load() - bytesBefore}
	res.OffCPU = (offAfter - offBefore) / time.Duration(r[0].Calls)
	res.OnCPU = (onAfter - onBefore) / time.Duration(r[1].Calls)
	if res.Exports == 0 {
		return nil, fmt.Errorf("telemetry: the traced gateway exported nothing to %s: %s", addr, on.LogTail(10))
	}
	return res, nil
}

func (x *TelemetryResult) ratio() float64 {
	if x.OffCPU <= 0 {
		return 0
	}
	return float64(x.OnCPU) / float64(x.OffCPU)
}

func (x *TelemetryResult) ok() bool { return x.OffCPU > 0 && x.ratio() <= targetTracingRatio }

func (r *Report) figure11(b *strings.Builder) {
	b.WriteString("## 11. Telemetry: gateway CPU per call with tracing off and on\n\n")
	if r.failed(11, b) {
		return
	}
	x := r.Telemetry
	if x == nil {
		b.WriteString("Not run.\n\n")
		return
	}
	t := &table{head: []string{"Telemetry", "N", "Median", "p99", "Gateway CPU per call (rounds only)", "Gateway CPU per call (export flushed)", "Ratio to off", "Target"}}
	t.add("off (no OTLP endpoint: the Prometheus MCP histograms only)", fmt.Sprint(x.Off.Calls), FormatDuration(x.Off.Lat.P50), FormatDuration(x.Off.Lat.P99),
		FormatDuration(x.Off.CPUPerCall), FormatDuration(x.OffCPU), "—", "—")
	t.add("on: sample_ratio 1.0, OTLP/HTTP to a local receiver", fmt.Sprint(x.On.Calls), FormatDuration(x.On.Lat.P50), FormatDuration(x.On.Lat.P99),
		FormatDuration(x.On.CPUPerCall), FormatDuration(x.OnCPU), FormatRatio(x.ratio()),
		fmt.Sprintf("≤ %.2f×: %s", targetTracingRatio, verdict(x.ok())))
	b.WriteString(t.String())
	fmt.Fprintf(b, "\nTwo gateways, each with one warm math provider, take `math__add` by its callable name (one client each) in alternating rounds. "+
		"The traced one samples every call (a SERVER and a CLIENT span, the MCP duration histograms over OTLP and in /metrics with exemplars, trace context in the provider's `_meta`) "+
		"and exports to an OTLP/HTTP receiver in the bench process (%d span exports, %d bytes; its CPU is the bench's, not the gateway's). "+
		"The figure is the gateway's CPU from before the first round until %s after the last, so the span processor has exported what the rounds made; "+
		"the rounds-only column leaves out exports that ran between rounds. Wall times are noisy on a shared machine; CPU per call is the measure.\n\n",
		x.Exports, x.Bytes, telemetryFlush)
}
