package metrics

import (
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// The MCP semantic conventions' duration histograms, as Prometheus names
// them (mcp.server.operation.duration in seconds →
// mcp_server_operation_duration_seconds), with exemplars carrying the
// trace of a sampled observation. They are fed by internal/telemetry,
// which does so with OTLP off too (metrics only, no exemplars).
const (
	lMethod    = "mcp_method_name"
	lErrorType = "error_type"
	lTraceID   = "trace_id"
)

type mcpOps struct {
	server *prometheus.HistogramVec
	client *prometheus.HistogramVec
	// series caches children by label values: WithLabelValues hashes and
	// locks on every call.
	series  sync.Map // seriesKey → *mcpSeries
	buckets []float64
}

// seriesKey is a histogram (server or client) and its label values
// (server, method, error type).
type seriesKey struct {
	server bool
	k      [3]string
}

func newMCPOps() *mcpOps {
	return &mcpOps{
		buckets: telemetry.DurationBuckets(),
		server: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mcp_server_operation_duration_seconds", Help: "MCP requests served by the gateway, by method and error type (OpenTelemetry mcp.server.operation.duration).",
			Buckets: telemetry.DurationBuckets(),
		}, []string{lMethod, lErrorType}),
		client: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mcp_client_operation_duration_seconds", Help: "MCP requests the gateway sent to MCP servers, by server, method and error type (OpenTelemetry mcp.client.operation.duration).",
			Buckets: telemetry.DurationBuckets(),
		}, []string{lServer, lMethod, lErrorType}),
	}
}

var _ telemetry.Recorder = (*Metrics)(nil)

// ServerOperation implements telemetry.Recorder.
func (m *Metrics) ServerOperation(method, errorType string, seconds float64, traceID string) {
	m.mcp.observer(m.mcp.server, [3]string{"", method, errorType}).observe(seconds, traceID)
}

// ClientOperation implements telemetry.Recorder.
func (m *Metrics) ClientOperation(server, method, errorType string, seconds float64, traceID string) {
	m.mcp.observer(m.mcp.client, [3]string{server, method, errorType}).observe(seconds, traceID)
}

func (o *mcpOps) observer(vec *prometheus.HistogramVec, k [3]string) *mcpSeries {
	key := seriesKey{vec == o.server, k}
	if v, ok := o.series.Load(key); ok {
		return v.(*mcpSeries)
	}
	var obs prometheus.Observer
	if vec == o.server {
		obs = vec.WithLabelValues(k[1], k[2])
	} else {
		obs = vec.WithLabelValues(k[0], k[1], k[2])
	}
	s := &mcpSeries{obs: obs, lastExemplar: make([]atomic.Int64, len(o.buckets)+1), buckets: o.buckets}
	s.ex, _ = obs.(prometheus.ExemplarObserver)
	v, _ := o.series.LoadOrStore(key, s)
	return v.(*mcpSeries)
}

// exemplarEvery is how often a bucket of a series takes a new exemplar.
// Prometheus keeps the latest exemplar per bucket and scrapes every few
// seconds at most, so one a second per bucket shows a scrape as much as
// one per call, without the label map and exemplar each call would build
// (most of what a traced call cost this histogram).
const exemplarEvery = int64(time.Second)

// mcpSeries is one histogram child, with when each of its buckets last took
// an exemplar.
type mcpSeries struct {
	obs          prometheus.Observer
	ex           prometheus.ExemplarObserver
	buckets      []float64
	lastExemplar []atomic.Int64 // by bucket, +Inf last; unix nanoseconds
}

func (s *mcpSeries) observe(v float64, traceID string) {
	if traceID != "" && s.ex != nil {
		b, _ := slices.BinarySearch(s.buckets, v)
		now := time.Now().UnixNano()
		last := &s.lastExemplar[b]
		if old := last.Load(); now-old >= exemplarEvery && last.CompareAndSwap(old, now) {
			s.ex.ObserveWithExemplar(v, prometheus.Labels{lTraceID: traceID})
			return
		}
	}
	s.obs.Observe(v)
}

// forget drops a removed server's client series.
func (o *mcpOps) forget(id string) {
	o.series.Range(func(k, _ any) bool {
		if k.(seriesKey).k[0] == id {
			o.series.Delete(k)
		}
		return true
	})
	o.client.DeletePartialMatch(prometheus.Labels{lServer: id})
}

// Refusal outcomes and pull outcomes every gateway shows from the start
// (at 0), so a dashboard's queries find their series before the first one.
var (
	refusalKinds = []string{"forbidden", "unauthenticated", "rate_limited",
		provider.KindToolNotAllowed, provider.KindUnknownServer, provider.KindUnknownGroup, provider.KindQuarantined}
	pullOutcomes = []string{"success", "failure"}
)

func newRefusals() *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hangar_refusals_total", Help: "Tool calls the gateway refused (and audited), by reason kind.",
	}, []string{lReason})
	for _, k := range refusalKinds {
		v.WithLabelValues(k)
	}
	return v
}

func newPulls() *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hangar_image_pulls_total", Help: "Image pulls from a registry by outcome.",
	}, []string{lOutcome})
	for _, o := range pullOutcomes {
		v.WithLabelValues(o)
	}
	return v
}

// kindRe is what a refusal kind looks like (tool_not_allowed).
var kindRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z_]{0,39}$`) })

// Refused counts a refusal; reason is the audit entry's ("kind: why"),
// of which the kind alone is the label. A nil *Metrics counts nothing.
func (m *Metrics) Refused(reason string) {
	if m == nil {
		return
	}
	kind, _, _ := strings.Cut(reason, ":")
	if !kindRe().MatchString(kind) {
		// A reason that is not a kind ("why" text) must not become a
		// series of its own.
		kind = "other"
	}
	m.refusals.WithLabelValues(kind).Inc()
}

// ImagePulled counts a finished pull.
func (m *Metrics) ImagePulled(err error) {
	outcome := "success"
	if err != nil {
		outcome = "failure"
	}
	m.pulls.WithLabelValues(outcome).Inc()
}
