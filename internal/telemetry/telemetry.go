// Package telemetry is hangar's OpenTelemetry side: the one place that
// knows span names, span and metric attributes (MCP's semantic
// conventions, semconv mcpconv, plus hangar.*), how trace context travels
// in params._meta and headers, and how traces and metrics are exported
// over OTLP. It also names the fields of the gateway's log lines and binds
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
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
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
	protocol := o.Config.OTLP.Protocol
	if protocol == "" {
		protocol = envFirst("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	spans, err := traceExporter(ctx, protocol, o.Config.OTLP)
	if err != nil {
		return nil, fmt.Errorf("telemetry: trace exporter: %w", err)
	}
	metrics, err := metricExporter(ctx, protocol, o.Config.OTLP)
	if err != nil {
		_ = spans.Shutdown(ctx)
		return nil, fmt.Errorf("telemetry: metric exporter: %w", err)
	}
	topts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(spans), sdktrace.WithResource(res)}
	if r := o.Config.SampleRatio; r != nil {
		// Without it the SDK reads OTEL_TRACES_SAMPLER(_ARG) itself.
		topts = append(topts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*r))))
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
	return t, nil
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

// traceExporter and metricExporter give the exporters only what the
// config file sets: what it leaves out, they read from OTEL_EXPORTER_OTLP_*.
func traceExporter(ctx context.Context, protocol string, c config.OTLP) (sdktrace.SpanExporter, error) {
	if protocol == config.OTLPGRPC {
		var opts []otlptracegrpc.Option
		if c.Endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(grpcURL(c)))
		}
		if c.Insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		if len(c.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(c.Headers))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	var opts []otlptracehttp.Option
	if c.Endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(httpURL(c, "/v1/traces")))
	}
	if c.Insecure {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	if len(c.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(c.Headers))
	}
	return otlptracehttp.New(ctx, opts...)
}

func metricExporter(ctx context.Context, protocol string, c config.OTLP) (sdkmetric.Exporter, error) {
	if protocol == config.OTLPGRPC {
		var opts []otlpmetricgrpc.Option
		if c.Endpoint != "" {
			opts = append(opts, otlpmetricgrpc.WithEndpointURL(grpcURL(c)))
		}
		if c.Insecure {
			opts = append(opts, otlpmetricgrpc.WithInsecure())
		}
		if len(c.Headers) > 0 {
			opts = append(opts, otlpmetricgrpc.WithHeaders(c.Headers))
		}
		return otlpmetricgrpc.New(ctx, opts...)
	}
	var opts []otlpmetrichttp.Option
	if c.Endpoint != "" {
		opts = append(opts, otlpmetrichttp.WithEndpointURL(httpURL(c, "/v1/metrics")))
	}
	if c.Insecure {
		opts = append(opts, otlpmetrichttp.WithInsecure())
	}
	if len(c.Headers) > 0 {
		opts = append(opts, otlpmetrichttp.WithHeaders(c.Headers))
	}
	return otlpmetrichttp.New(ctx, opts...)
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

func grpcURL(c config.OTLP) string {
	if strings.Contains(c.Endpoint, "://") {
		return c.Endpoint
	}
	if c.Insecure {
		return "http://" + c.Endpoint
	}
	return "https://" + c.Endpoint
}
