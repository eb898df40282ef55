package metrics

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// refusedSeries reads hangar_egress_refused_total from reg as
// "server/host/reason" → value.
func refusedSeries(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "hangar_egress_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			out[l[lServer]+"/"+l["host"]+"/"+l[lReason]] = m.GetCounter().GetValue()
		}
	}
	return out
}

func TestEgressRefused(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := NewEgress(reg)
	e.Refused("gh", "evil.com", "not_allowed")
	e.Refused("gh", "evil.com", "not_allowed")
	e.Refused("gh", "localhost", "forbidden_address")
	for i := range maxEgressHosts + 10 {
		e.Refused("spam", fmt.Sprintf("h%d.example", i), "not_allowed")
	}
	got := refusedSeries(t, reg)
	if v := got["gh/evil.com/not_allowed"]; v != 2 {
		t.Errorf("evil.com refusals = %v, want 2", v)
	}
	if v := got["gh/localhost/forbidden_address"]; v != 1 {
		t.Errorf("localhost refusals = %v, want 1", v)
	}
	if v := got["spam/"+OtherHost+"/not_allowed"]; v != 10 {
		t.Errorf("hosts beyond the cap counted as %v under %s, want 10", v, OtherHost)
	}
	if n := len(got); n != 2+maxEgressHosts+1 {
		t.Errorf("%d series, want %d", n, 2+maxEgressHosts+1)
	}
}
