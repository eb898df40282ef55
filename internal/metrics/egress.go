package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// maxEgressHosts bounds the host label per server: a provider trying
// random names must not grow /metrics without end.
const maxEgressHosts = 64

// OtherHost is the host label of refusals beyond maxEgressHosts hosts.
const OtherHost = "_other"

// Egress counts connections egress proxies refused.
type Egress struct {
	refused *prometheus.CounterVec
	mu      sync.Mutex
	hosts   map[string]map[string]bool // server → hosts with a series
}

// NewEgress registers the egress collectors on reg.
func NewEgress(reg prometheus.Registerer) *Egress {
	e := &Egress{
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hangar_egress_refused_total",
			Help: "Connections an egress proxy refused, by MCP server, target host and reason (not_allowed, forbidden_address, bad_target).",
		}, []string{lServer, "host", lReason}),
		hosts: map[string]map[string]bool{},
	}
	reg.MustRegister(e.refused)
	return e
}

// Refused counts one refusal.
func (e *Egress) Refused(server, host, reason string) {
	e.mu.Lock()
	hs := e.hosts[server]
	if hs == nil {
		hs = map[string]bool{}
		e.hosts[server] = hs
	}
	if !hs[host] {
		if len(hs) >= maxEgressHosts {
			host = OtherHost
		} else {
			hs[host] = true
		}
	}
	e.mu.Unlock()
	e.refused.WithLabelValues(server, host, reason).Inc()
}
