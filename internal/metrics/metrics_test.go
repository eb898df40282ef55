package metrics

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// series returns name's samples by their label values joined with "/".
func series(t *testing.T, m *Metrics, name string) map[string]*dto.Metric {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.Metric{}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, mt := range f.GetMetric() {
			key := ""
			for _, l := range mt.GetLabel() {
				key += "/" + l.GetValue()
			}
			out[key] = mt
		}
	}
	return out
}

func TestCallDoneCountsPerServerToolAndOutcome(t *testing.T) {
	t.Parallel()
	m := New()
	m.CallDone("math", "add", "success", time.Millisecond)
	m.CallDone("math", "add", "success", time.Millisecond)
	m.CallDone("math", "add", "tool_error", time.Millisecond)
	m.CallDone("other", "add", "success", time.Millisecond)
	calls := series(t, m, "hangar_tool_calls_total")
	// Labels come sorted by name: mcp_server, outcome, tool.
	for key, want := range map[string]float64{"/math/success/add": 2, "/math/tool_error/add": 1, "/other/success/add": 1} {
		if got := calls[key].GetCounter().GetValue(); got != want {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	dur := series(t, m, "hangar_tool_call_duration_seconds")
	if len(dur) != 2 || dur["/math"].GetHistogram().GetSampleCount() != 3 {
		t.Errorf("durations = %v, want math (3 samples) and other", dur)
	}
}

// A server removed and added again is counted from zero: the series cached
// in its first life are not reused (they are no longer exported).
func TestCallDoneAfterRemovedRecordsAgain(t *testing.T) {
	t.Parallel()
	m := New()
	m.CallDone("math", "add", "success", time.Millisecond)
	m.Removed("math")
	if got := series(t, m, "hangar_tool_calls_total"); len(got) != 0 {
		t.Fatalf("series after Removed = %v, want none", got)
	}
	m.CallDone("math", "add", "success", time.Millisecond)
	if got := series(t, m, "hangar_tool_calls_total")["/math/success/add"].GetCounter().GetValue(); got != 1 {
		t.Errorf("calls after re-adding = %v, want 1", got)
	}
	if got := series(t, m, "hangar_tool_call_duration_seconds")["/math"].GetHistogram().GetSampleCount(); got != 1 {
		t.Errorf("duration samples after re-adding = %v, want 1", got)
	}
}

// BenchmarkCallDone is the metrics work of every provider call.
func BenchmarkCallDone(b *testing.B) {
	m := New()
	b.ReportAllocs()
	for b.Loop() {
		m.CallDone("math", "add", "success", time.Millisecond)
	}
}
