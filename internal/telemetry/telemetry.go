// Package telemetry is hangar's OpenTelemetry side: the one place that
// knows span names, span and metric attributes (MCP's semantic
// conventions, semconv mcpconv, plus hangar.*), how trace context travels
// in params._meta and headers, and how traces and metrics are exported
// over OTLP/HTTP (otlp.go, otlpmetrics.go; there is no gRPC export). It also names the fields of the gateway's log lines and binds
// them to a request's logger (log.go, lazylog.go).
//
// Off (no endpoint in the config nor in OTEL_EXPORTER_OTLP_*), there is
// no tracer and no OTLP exporter: with a Recorder (the Prometheus
// histograms) the gateway holds a metrics-only *Telemetry, whose
// operations are a start time and an error type, no span, no params
// decoded and no trace context; without one it holds nil, whose methods
// return at once.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/semconv/v1.39.0/mcpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-hangar/hangar/internal/config"
)

// ScopeName is the instrumentation scope of hangar's spans and metrics.
const ScopeName = "github.com/mcp-hangar/hangar"

// Recorder receives each finished operation for the Prometheus side
// (internal/metrics); traceID is "" when the operation was not sampled.
type Recorder interface {
	ServerOperation(method, errorType string, seconds float64, traceID string)
	ClientOperation(server, method, errorType string, seconds float64, traceID string)
}

// Telemetry makes hangar's spans and records its MCP metrics. A nil
// *Telemetry is off; one with a nil tracer only feeds the Recorder.
type Telemetry struct {
	tracer    trace.Tracer // nil: metrics only, no span
	serverDur mcpconv.ServerOperationDuration
	clientDur mcpconv.ClientOperationDuration
	rec       Recorder
	sets      setCache
	shutdown  []func(context.Context) error
	// forwardBaggage are the keys of a client's baggage passed on to
	// providers (telemetry.forward_baggage); nil: none.
	forwardBaggage map[string]bool
}

// Options say where to export; the zero value of each field falls back to
// the OTEL_* environment variables, as the SDK reads them.
type Options struct {
	Config      config.Telemetry
	ServiceName string // "" → OTEL_SERVICE_NAME, else "hangar"
	Version     string
	// Instance names the gateway (service.instance.id).
	Instance string
	Recorder Recorder
}

// Enabled reports whether telemetry is on for c and the environment: an
// OTLP endpoint is configured, and OTEL_SDK_DISABLED is not true.
func Enabled(c config.Telemetry) bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return c.Enabled() || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" ||
		os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// New starts the OTLP trace and metric pipelines. When telemetry is off
// it returns a metrics-only Telemetry that feeds o.Recorder (the
// Prometheus MCP histograms fill either way), or nil, nil without one.
// Call Shutdown to flush.
func New(ctx context.Context, o Options) (*Telemetry, error) {
	if !Enabled(o.Config) {
		if o.Recorder == nil {
			return nil, nil
		}
		return &Telemetry{rec: o.Recorder}, nil
	}
	res, err := newResource(ctx, o)
	if err != nil {
		return nil, err
	}
	spans, metrics, err := exporters(ctx, o.Config.OTLP)
	if err != nil {
		return nil, err
	}
	topts := []sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(newEnvBatcher(spans)), sdktrace.WithResource(res)}
	if s := Sampler(o.Config); s != nil {
		// Without it the SDK reads OTEL_TRACES_SAMPLER(_ARG) itself.
		topts = append(topts, sdktrace.WithSampler(s))
	}
	tp := sdktrace.NewTracerProvider(topts...)
	mopts := []sdkmetric.Option{sdkmetric.WithResource(res),
		// The interval is OTEL_METRIC_EXPORT_INTERVAL's (default 60 s).
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics))}
	if os.Getenv("OTEL_METRICS_EXEMPLAR_FILTER") == "" {
		// The SDK's default (trace_based) offers every sampled call to an
		// exemplar reservoir per histogram, a fifth of what tracing cost
		// a call; the traces carry the calls already, and /metrics keeps
		// exemplars with their trace ids. OTEL_METRICS_EXEMPLAR_FILTER
		// turns them back on.
		mopts = append(mopts, sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter))
	}
	mp := sdkmetric.NewMeterProvider(mopts...)
	t, err := NewWith(tp, mp, o.Recorder)
	if err != nil {
		_ = tp.Shutdown(ctx)
		_ = mp.Shutdown(ctx)
		return nil, err
	}
	t.shutdown = []func(context.Context) error{tp.Shutdown, mp.Shutdown}
	t.forwardBaggage = forwardSet(o.Config.ForwardBaggage)
	return t, nil
}

// Sampler decides which requests are recorded; nil leaves it to the SDK
// (OTEL_TRACES_SAMPLER). Unless c trusts remote sampling, a client's
// traceparent cannot decide: its sampled flag would let any client have
// every request recorded (and exported) or none. Its trace id is still
// continued, and spans under a recorded span of the gateway are recorded.
func Sampler(c config.Telemetry) sdktrace.Sampler {
	if c.TrustRemoteSampling {
		if c.SampleRatio == nil {
			return nil
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*c.SampleRatio))
	}
	own := sdktrace.TraceIDRatioBased(ownRatio(c))
	return sdktrace.ParentBased(own, sdktrace.WithRemoteParentSampled(own), sdktrace.WithRemoteParentNotSampled(own))
}

// ownRatio is the gateway's own share of requests recorded: sample_ratio,
// else what OTEL_TRACES_SAMPLER(_ARG) says of new traces, else all.
func ownRatio(c config.Telemetry) float64 {
	if c.SampleRatio != nil {
		return *c.SampleRatio
	}
	switch strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_SAMPLER"))) {
	case "always_off", "parentbased_always_off":
		return 0
	case "traceidratio", "parentbased_traceidratio":
		if r, err := strconv.ParseFloat(strings.TrimSpace(os.Getenv("OTEL_TRACES_SAMPLER_ARG")), 64); err == nil && r >= 0 && r <= 1 {
			return r
		}
	}
	return 1
}

// forwardSet is telemetry.forward_baggage as a set; nil forwards nothing.
func forwardSet(keys []string) map[string]bool {
	if len(keys) == 0 {
		return nil
	}
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// NewWith makes spans with tp and metrics with mp (tests use the SDK's
// in-memory exporters); rec may be nil.
func NewWith(tp trace.TracerProvider, mp metric.MeterProvider, rec Recorder) (*Telemetry, error) {
	meter := mp.Meter(ScopeName)
	serverDur, err := mcpconv.NewServerOperationDuration(meter, metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	clientDur, err := mcpconv.NewClientOperationDuration(meter, metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	return &Telemetry{tracer: tp.Tracer(ScopeName), serverDur: serverDur, clientDur: clientDur, rec: rec}, nil
}

// durationBuckets are the conventions' advice for the MCP durations.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// DurationBuckets returns the buckets of the MCP duration histograms, for
// the Prometheus side to use the same.
func DurationBuckets() []float64 { return append([]float64(nil), durationBuckets...) }

// Tracing reports whether t makes spans (OTLP is configured), not only
// metrics.
func (t *Telemetry) Tracing() bool { return t != nil && t.tracer != nil }

// Shutdown flushes and stops the exporters.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	for _, f := range t.shutdown {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

func newResource(ctx context.Context, o Options) (*resource.Resource, error) {
	name := o.ServiceName
	if name == "" {
		name = "hangar"
	}
	attrs := []resource.Option{
		resource.WithAttributes(semconv.ServiceName(name), semconv.ServiceVersion(o.Version)),
		// Last: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
		resource.WithFromEnv(),
	}
	if o.Instance != "" {
		attrs = append([]resource.Option{resource.WithAttributes(semconv.ServiceInstanceID(o.Instance))}, attrs...)
	}
	r, err := resource.New(ctx, attrs...)
	if err != nil && r == nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return r, nil
}

func envFirst(keys ...string) string {
	for _, k := range keys {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return ""
}

// exporters resolves both signals' settings before it makes either, so
// a bad setting fails the start without an exporter to stop.
func exporters(ctx context.Context, c config.OTLP) (sdktrace.SpanExporter, sdkmetric.Exporter, error) {
	ts, err := settingsFor(signalTraces, c)
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: traces: %w", err)
	}
	ms, err := settingsFor(signalMetrics, c)
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: metrics: %w", err)
	}
	me, err := newMetricExporter(ms)
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: metrics: %w", err)
	}
	spans, err := otlptrace.New(ctx, traceClient{newPoster(ts)})
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: traces: %w", err)
	}
	return spans, me, nil
}

// httpURL is the signal's URL under the configured base, as
// OTEL_EXPORTER_OTLP_ENDPOINT is read (the base plus /v1/<signal>).
func httpURL(c config.OTLP, signal string) string {
	base := c.Endpoint
	if !strings.Contains(base, "://") {
		scheme := "https://"
		if c.Insecure {
			scheme = "http://"
		}
		base = scheme + base
	}
	return strings.TrimRight(base, "/") + signal
}
