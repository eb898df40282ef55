package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// opTimes are a gateway's own totals for the tools/call requests it
// served (mcp_server_operation_duration_seconds: from the request's
// arrival until its answer is written) and for the tools/call requests it
// sent to providers on their behalf (mcp_client_operation_duration_seconds:
// from the request written to the provider until its answer is read).
// Read before and after a round, they split a call's time into the
// gateway's own part and the provider hop, from the gateway's side.
type opTimes struct {
	Served, Sent   time.Duration
	ServedN, SentN uint64
}

func (a opTimes) sub(b opTimes) opTimes {
	return opTimes{Served: a.Served - b.Served, Sent: a.Sent - b.Sent, ServedN: a.ServedN - b.ServedN, SentN: a.SentN - b.SentN}
}

func (a opTimes) add(b opTimes) opTimes {
	return opTimes{Served: a.Served + b.Served, Sent: a.Sent + b.Sent, ServedN: a.ServedN + b.ServedN, SentN: a.SentN + b.SentN}
}

// means are the mean time per served call in the gateway and, of it, on
// the hop to a provider (a call that sends none counts as 0).
func (a opTimes) means() (served, sent time.Duration) {
	if a.ServedN == 0 {
		return 0, 0
	}
	n := time.Duration(a.ServedN)
	return a.Served / n, a.Sent / n
}

// gatewayOps returns a reader of opTimes from the /metrics of the gateway
// that serves MCP at mcpURL.
func gatewayOps(mcpURL string) (func(context.Context) (opTimes, error), error) {
	u, err := url.Parse(mcpURL)
	if err != nil {
		return nil, err
	}
	u.Path, u.RawQuery = "/metrics", ""
	metricsURL := u.String()
	return func(ctx context.Context) (opTimes, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
		if err != nil {
			return opTimes{}, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return opTimes{}, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return opTimes{}, fmt.Errorf("GET %s: %s", metricsURL, resp.Status)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(resp.Body)
		if err != nil {
			return opTimes{}, fmt.Errorf("GET %s: %w", metricsURL, err)
		}
		var t opTimes
		sum := func(name string) (time.Duration, uint64) {
			var d time.Duration
			var n uint64
			f := fams[name]
			if f == nil {
				return 0, 0
			}
			for _, m := range f.GetMetric() {
				call := false
				for _, l := range m.GetLabel() {
					call = call || (l.GetName() == "mcp_method_name" && l.GetValue() == "tools/call")
				}
				if h := m.GetHistogram(); call && h != nil {
					d += time.Duration(h.GetSampleSum() * float64(time.Second))
					n += h.GetSampleCount()
				}
			}
			return d, n
		}
		t.Served, t.ServedN = sum("mcp_server_operation_duration_seconds")
		t.Sent, t.SentN = sum("mcp_client_operation_duration_seconds")
		if t.ServedN == 0 {
			return t, fmt.Errorf("GET %s: no mcp_server_operation_duration_seconds for tools/call", metricsURL)
		}
		return t, nil
	}, nil
}
