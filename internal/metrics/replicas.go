package metrics

import "github.com/prometheus/client_golang/prometheus"

// Outcomes of a request for another replica's id
// (hangar_forwarded_requests_total).
const (
	// ForwardedOK: passed to the replica holding the id.
	ForwardedOK = "forwarded"
	// ForwardedUnreachable: that replica did not answer; served here as
	// an unknown id.
	ForwardedUnreachable = "owner_unreachable"
)

// replicas are the series of a gateway that is one replica of its
// instance on a shared store (EnableReplicas): how many replicas it
// counts live, what it forwards, and whether it reaches the store.
type replicas struct {
	live      prometheus.Gauge
	forwarded *prometheus.CounterVec
}

// EnableReplicas registers the replica series; reachable tells whether
// the shared store answers now (hangar_store_reachable). Call it once,
// before serving; without it the series are absent and their setters do
// nothing.
func (m *Metrics) EnableReplicas(reachable func() bool) {
	r := &replicas{
		live: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hangar_replicas_live",
			Help: "Replicas of this gateway's instance whose heartbeat is fresh, this one included, as this replica counts them (its rate limits are shared by them).",
		}),
		forwarded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hangar_forwarded_requests_total",
			Help: "Requests for another replica's session, continuation or requestState, by outcome (forwarded, owner_unreachable).",
		}, []string{lOutcome}),
	}
	for _, o := range []string{ForwardedOK, ForwardedUnreachable} {
		r.forwarded.WithLabelValues(o)
	}
	store := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "hangar_store_reachable",
		Help: "1 while the shared store (PostgreSQL) answers, 0 while it is unreachable.",
	}, func() float64 {
		if reachable() {
			return 1
		}
		return 0
	})
	m.Registry.MustRegister(r.live, r.forwarded, store)
	m.replicaMu.Lock()
	m.replicas = r
	m.replicaMu.Unlock()
}

func (m *Metrics) replicaSeries() *replicas {
	if m == nil {
		return nil
	}
	m.replicaMu.Lock()
	defer m.replicaMu.Unlock()
	return m.replicas
}

// ReplicasLive sets hangar_replicas_live.
func (m *Metrics) ReplicasLive(n int) {
	if r := m.replicaSeries(); r != nil {
		r.live.Set(float64(n))
	}
}

// Forwarded counts a request for another replica's id by outcome.
func (m *Metrics) Forwarded(outcome string) {
	if r := m.replicaSeries(); r != nil {
		r.forwarded.WithLabelValues(outcome).Inc()
	}
}
