package metrics

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/mcp-hangar/hangar/internal/auth"
)

// Text renders the registry in the Prometheus text exposition format, the
// same bytes /metrics serves.
func (m *Metrics) Text() (string, error) { return m.TextFor(nil) }

// TextFor is Text with only the series of the servers keep accepts (every
// series without an mcp_server label stays); nil keeps all.
func (m *Metrics) TextFor(keep func(server string) bool) (string, error) {
	families, err := m.gather(keep)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return "", fmt.Errorf("encode metrics: %w", err)
		}
	}
	return buf.String(), nil
}

// Scoped serves /metrics with all's answer, but to a caller limited to
// some servers (auth.Caller: the endpoint's auth stage bound it to the
// request) only their series, as TextFor gives them. A nil m serves all's
// answer to everyone.
func (m *Metrics) Scoped(all http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller := auth.Caller(r.Context())
		if len(caller.Servers) == 0 || m == nil {
			all.ServeHTTP(w, r)
			return
		}
		text, err := m.TextFor(caller.MayReach)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = io.WriteString(w, text)
	})
}

// ServerTotals are one MCP server's call figures.
type ServerTotals struct {
	Invocations  int64
	Errors       int64
	LatencySumMs float64
	LatencyCount int64
	// LatencyP50Ms and LatencyP99Ms are the median and the 99th
	// percentile of the call durations, estimated from the histogram's
	// buckets (Quantile); 0 when no call was timed.
	LatencyP50Ms float64
	LatencyP99Ms float64
}

// ToolTotals are one tool's call figures.
type ToolTotals struct {
	Count  int64 `json:"count"`
	Errors int64 `json:"errors"`
}

// Summary is what hangar_metrics' JSON form is built from.
type Summary struct {
	Servers        map[string]*ServerTotals
	Tools          map[string]*ToolTotals // "server.tool"
	ErrorsByType   map[string]int64
	ColdStarts     int64
	ColdStartFails int64
	ColdStartSumMs float64
	HealthChecks   map[string]int64 // by outcome
	DiscoveryScans int64
	DiscoverySumMs float64
	Goroutines     float64
	ResidentBytes  float64
	HeapBytes      float64
}

// Summarize reads the registry back into per-server and per-tool totals.
func (m *Metrics) Summarize() (*Summary, error) { return m.SummarizeFor(nil) }

// SummarizeFor is Summarize over the series of the servers keep accepts
// (and those of no server); nil keeps all.
func (m *Metrics) SummarizeFor(keep func(server string) bool) (*Summary, error) {
	families, err := m.gather(keep)
	if err != nil {
		return nil, err
	}
	s := &Summary{
		Servers: map[string]*ServerTotals{}, Tools: map[string]*ToolTotals{},
		ErrorsByType: map[string]int64{}, HealthChecks: map[string]int64{},
	}
	server := func(id string) *ServerTotals {
		t, ok := s.Servers[id]
		if !ok {
			t = &ServerTotals{}
			s.Servers[id] = t
		}
		return t
	}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			l := labels(mt)
			switch f.GetName() {
			case "hangar_tool_calls_total":
				n := int64(mt.GetCounter().GetValue())
				st := server(l[lServer])
				st.Invocations += n
				key := l[lServer] + "." + l[lTool]
				tt, ok := s.Tools[key]
				if !ok {
					tt = &ToolTotals{}
					s.Tools[key] = tt
				}
				tt.Count += n
				if l[lOutcome] != "success" {
					st.Errors += n
					tt.Errors += n
					s.ErrorsByType[l[lOutcome]] += n
				}
			case "hangar_tool_call_duration_seconds":
				st := server(l[lServer])
				st.LatencySumMs += mt.GetHistogram().GetSampleSum() * 1000
				st.LatencyCount += int64(mt.GetHistogram().GetSampleCount())
				st.LatencyP50Ms = quantile(0.5, mt.GetHistogram()) * 1000
				st.LatencyP99Ms = quantile(0.99, mt.GetHistogram()) * 1000
			case "hangar_cold_starts_total":
				n := int64(mt.GetCounter().GetValue())
				s.ColdStarts += n
				if l[lOutcome] != "success" {
					s.ColdStartFails += n
				}
			case "hangar_cold_start_duration_seconds":
				s.ColdStartSumMs += mt.GetHistogram().GetSampleSum() * 1000
			case "hangar_health_checks_total":
				s.HealthChecks[l[lOutcome]] += int64(mt.GetCounter().GetValue())
			case "hangar_discovery_scans_total":
				s.DiscoveryScans += int64(mt.GetCounter().GetValue())
			case "hangar_discovery_scan_duration_seconds":
				s.DiscoverySumMs += mt.GetHistogram().GetSampleSum() * 1000
			case "go_goroutines":
				s.Goroutines = mt.GetGauge().GetValue()
			case "process_resident_memory_bytes":
				s.ResidentBytes = mt.GetGauge().GetValue()
			case "go_memstats_heap_alloc_bytes":
				s.HeapBytes = mt.GetGauge().GetValue()
			}
		}
	}
	return s, nil
}

// gather reads the registry, dropping the series of servers keep refuses:
// a caller limited to some servers reads nothing of the others, not even
// that they exist.
func (m *Metrics) gather(keep func(server string) bool) ([]*dto.MetricFamily, error) {
	families, err := m.Registry.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather metrics: %w", err)
	}
	if keep == nil {
		return families, nil
	}
	out := families[:0]
	for _, f := range families {
		ms := f.Metric[:0]
		for _, mt := range f.GetMetric() {
			if srv, ok := labels(mt)[lServer]; ok && !keep(srv) {
				continue
			}
			ms = append(ms, mt)
		}
		if len(ms) == 0 && len(f.GetMetric()) > 0 {
			continue
		}
		f.Metric = ms
		out = append(out, f)
	}
	return out, nil
}

func labels(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

// quantile estimates the q-quantile of a histogram (Quantile).
func quantile(q float64, h *dto.Histogram) float64 {
	bs := h.GetBucket()
	bounds, cum := make([]float64, len(bs)), make([]uint64, len(bs))
	for i, b := range bs {
		bounds[i], cum[i] = b.GetUpperBound(), b.GetCumulativeCount()
	}
	return Quantile(q, bounds, cum, h.GetSampleCount())
}

// Quantile estimates the q-quantile of total observations from a
// histogram's bucket upper bounds and cumulative counts, by linear
// interpolation inside the bucket that holds it (as Prometheus'
// histogram_quantile does); in the open last bucket it is that bucket's
// lower bound. 0 when nothing was observed.
func Quantile(q float64, bounds []float64, cumulative []uint64, total uint64) float64 {
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	lower, below := 0.0, 0.0
	for i, upper := range bounds {
		count := float64(cumulative[i])
		if count >= rank {
			if math.IsInf(upper, 1) || count == below {
				return lower
			}
			return lower + (upper-lower)*(rank-below)/(count-below)
		}
		lower, below = upper, count
	}
	return lower
}
