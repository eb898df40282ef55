package metrics

import "github.com/prometheus/client_golang/prometheus"

// upstreamAuthEvents counts what happens to callers' upstream credentials.
// Its labels are bounded: configured server IDs ("" for a callback that
// names none), the fixed events of package upstreamauth and three
// outcomes.
func newUpstreamAuthEvents() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hangar_upstream_auth_events_total",
		Help: "Upstream credential events by MCP server, event (login_started, login, refresh, refused, disconnect, dropped, exchange, client_credentials, callback) and outcome (ok, error, denied).",
	}, []string{lServer, "event", lOutcome})
}

// UpstreamAuth counts one upstream credential event.
func (m *Metrics) UpstreamAuth(server, event, outcome string) {
	m.upstreamAuth.WithLabelValues(server, event, outcome).Inc()
}
