// Package metrics holds hangar's Prometheus collectors. The registry is the
// single source of truth: /metrics (Scoped: a caller limited to some
// servers sees their series only) and hangar_metrics (both formats) are
// rendered from it.
package metrics

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/mcp-hangar/hangar/internal/provider"
)

// Label names.
const (
	lServer  = "mcp_server"
	lTool    = "tool"
	lOutcome = "outcome"
	lState   = "state"
	lReason  = "reason"
)

var allStates = []provider.State{provider.Cold, provider.Initializing, provider.Ready, provider.Degraded, provider.Dead}

// Metrics implements provider.Events by recording into a registry.
type Metrics struct {
	Registry *prometheus.Registry

	calls          *prometheus.CounterVec
	callDuration   *prometheus.HistogramVec
	state          *prometheus.GaugeVec
	coldStarts     *prometheus.CounterVec
	coldStartDur   *prometheus.HistogramVec
	containerExits *prometheus.CounterVec
	ooms           *prometheus.CounterVec
	healthChecks   *prometheus.CounterVec
	inflight       *inflightCollector
	discovery      *prometheus.CounterVec
	discoveryDur   prometheus.Histogram
	mcp            *mcpOps
	refusals       *prometheus.CounterVec
	pulls          *prometheus.CounterVec
	upstreamAuth   *prometheus.CounterVec
	// sessionCount is the endpoint's count of open sessions
	// (hangar_sessions_open), once CountSessions gave it.
	sessionCount atomic.Pointer[func() int]

	replicaMu sync.Mutex
	replicas  *replicas // nil until EnableReplicas

	// series caches the children CallDone records into, per server, tool
	// and outcome: WithLabelValues hashes the labels and takes the vector's
	// lock on every call. Entries are added, and removed with their
	// server, under seriesMu, so none outlives the series it points to.
	series   sync.Map // callKey → callSeries
	seriesMu sync.Mutex
}

type callKey struct{ id, tool, outcome string }

type callSeries struct {
	calls    prometheus.Counter
	duration prometheus.Observer
}

var _ provider.Events = (*Metrics)(nil)

// New registers every collector, the Go runtime's and the process's
// included, on a fresh registry.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hangar_tool_calls_total", Help: "Tool calls by MCP server, tool and outcome (success, tool_error or an error kind).",
		}, []string{lServer, lTool, lOutcome}),
		callDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hangar_tool_call_duration_seconds", Help: "Tool call latency through the gateway, including any cold start.",
			Buckets: CallBuckets,
		}, []string{lServer}),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hangar_provider_state", Help: "1 for the state each MCP server is in, 0 for the others.",
		}, []string{lServer, lState}),
		coldStarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hangar_cold_starts_total", Help: "Starts of MCP servers (container or process plus MCP handshake) by outcome.",
		}, []string{lServer, lOutcome}),
		coldStartDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hangar_cold_start_duration_seconds", Help: "Time from COLD to READY (or to the failure).",
			Buckets: []float64{.05, .1, .2, .3, .5, .75, 1, 2, 5, 10, 30},
		}, []string{lServer}),
		containerExits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hangar_backend_exits_total", Help: "Unplanned exits of running MCP server containers or processes.",
		}, []string{lServer}),
		ooms: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hangar_container_oom_kills_total", Help: "MCP server containers killed for running out of memory.",
		}, []string{lServer}),
		healthChecks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hangar_health_checks_total", Help: "Active health checks (tools/list) by outcome.",
		}, []string{lServer, lOutcome}),
		inflight: &inflightCollector{desc: prometheus.NewDesc("hangar_inflight_calls",
			"Tool calls in flight per MCP server.", []string{lServer}, nil)},
		discovery: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hangar_discovery_scans_total", Help: "Discovery scans by outcome.",
		}, []string{lOutcome}),
		discoveryDur: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "hangar_discovery_scan_duration_seconds", Help: "Duration of discovery scans.",
			Buckets: prometheus.DefBuckets,
		}),
		mcp:      newMCPOps(),
		refusals: newRefusals(),
		pulls:    newPulls(),

		upstreamAuth: newUpstreamAuthEvents(),
	}
	m.Registry.MustRegister(m.mcp.server, m.mcp.client, m.refusals, m.pulls, m.upstreamAuth)
	m.Registry.MustRegister(m.calls, m.callDuration, m.state, m.coldStarts, m.coldStartDur,
		m.containerExits, m.ooms, m.healthChecks, m.inflight, m.discovery, m.discoveryDur,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hangar_sessions_open", Help: "Streamable HTTP sessions open on this replica (2025-11-25 clients).",
		}, func() float64 {
			if f := m.sessionCount.Load(); f != nil {
				return float64((*f)())
			}
			return 0
		}))
	return m
}

// CountSessions makes hangar_sessions_open read count: the endpoint's
// session table, the one owner of the sessions.
func (m *Metrics) CountSessions(count func() int) {
	if m != nil {
		m.sessionCount.Store(&count)
	}
}

// QuarantineChanged implements provider.Events: the quarantine shows in
// hangar_details and the audit, not in a series.
func (m *Metrics) QuarantineChanged(string) {}

// StateChanged implements provider.Events.
func (m *Metrics) StateChanged(id string, _, to provider.State) {
	for _, s := range allStates {
		v := 0.0
		if s == to {
			v = 1
		}
		m.state.WithLabelValues(id, string(s)).Set(v)
	}
}

// ColdStart implements provider.Events.
func (m *Metrics) ColdStart(id string, d time.Duration, err error) {
	outcome := "success"
	if err != nil {
		outcome = "failure"
	}
	m.coldStarts.WithLabelValues(id, outcome).Inc()
	m.coldStartDur.WithLabelValues(id).Observe(d.Seconds())
}

// BackendExited implements provider.Events.
func (m *Metrics) BackendExited(id, _ string, oom bool) {
	m.containerExits.WithLabelValues(id).Inc()
	if oom {
		m.ooms.WithLabelValues(id).Inc()
	}
}

// CallDone implements provider.Events.
func (m *Metrics) CallDone(id, tool, outcome string, d time.Duration) {
	s := m.callSeries(callKey{id, tool, outcome})
	s.calls.Inc()
	s.duration.Observe(d.Seconds())
}

func (m *Metrics) callSeries(k callKey) callSeries {
	if v, ok := m.series.Load(k); ok {
		return v.(callSeries)
	}
	m.seriesMu.Lock()
	defer m.seriesMu.Unlock()
	s := callSeries{calls: m.calls.WithLabelValues(k.id, k.tool, k.outcome), duration: m.callDuration.WithLabelValues(k.id)}
	m.series.Store(k, s)
	return s
}

// HealthChecked implements provider.Events.
func (m *Metrics) HealthChecked(id string, err error) {
	outcome := "success"
	if err != nil {
		outcome = "failure"
		if errors.Is(err, context.DeadlineExceeded) {
			outcome = "timeout"
		}
	}
	m.healthChecks.WithLabelValues(id, outcome).Inc()
}

// Removed implements provider.Events: the provider's series go away.
func (m *Metrics) Removed(id string) {
	m.seriesMu.Lock()
	defer m.seriesMu.Unlock()
	m.mcp.forget(id)
	m.series.Range(func(k, _ any) bool {
		if k.(callKey).id == id {
			m.series.Delete(k)
		}
		return true
	})
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{m.calls, m.callDuration, m.state, m.coldStarts, m.coldStartDur, m.containerExits, m.ooms, m.healthChecks} {
		v.DeletePartialMatch(prometheus.Labels{lServer: id})
	}
}

// DiscoveryScan records a discovery scan.
func (m *Metrics) DiscoveryScan(d time.Duration, errs int) {
	outcome := "success"
	if errs > 0 {
		outcome = "with_errors"
	}
	m.discovery.WithLabelValues(outcome).Inc()
	m.discoveryDur.Observe(d.Seconds())
}

// SetInflight gives the collector its source: calls in flight by MCP
// server, read at scrape time so nothing is counted twice.
func (m *Metrics) SetInflight(f func() map[string]int) { m.inflight.set(f) }

type inflightCollector struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	f    func() map[string]int
}

func (c *inflightCollector) set(f func() map[string]int) {
	c.mu.Lock()
	c.f = f
	c.mu.Unlock()
}

func (c *inflightCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *inflightCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	f := c.f
	c.mu.Unlock()
	if f == nil {
		return
	}
	for id, n := range f() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), id)
	}
}
