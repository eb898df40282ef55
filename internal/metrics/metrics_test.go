package metrics

import (
	"errors"
	"strings"
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

func TestRefusalsAndPulls(t *testing.T) {
	t.Parallel()
	m := New()
	m.Refused("forbidden: Token missing required scope: server:x")
	m.Refused("tool_not_allowed: blocked by the tool access policy")
	m.Refused("Something Else entirely")
	m.ImagePulled(nil)
	m.ImagePulled(errors.New("no"))
	m.ImagePulled(errors.New("no"))
	var nilM *Metrics
	nilM.Refused("forbidden") // a gateway without metrics counts nothing
	text, err := m.Text()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`hangar_refusals_total{reason="forbidden"} 1`,
		`hangar_refusals_total{reason="tool_not_allowed"} 1`,
		`hangar_refusals_total{reason="other"} 1`,
		`hangar_refusals_total{reason="rate_limited"} 0`,
		`hangar_image_pulls_total{outcome="success"} 1`,
		`hangar_image_pulls_total{outcome="failure"} 2`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %s", want)
		}
	}
}

func TestMCPOperations(t *testing.T) {
	t.Parallel()
	m := New()
	m.ServerOperation("tools/call", "", 0.003, "4bf92f3577b34da6a3ce929d0e0e4736")
	m.ServerOperation("tools/call", "-32003", 0.001, "")
	m.ClientOperation("math", "tools/call", "tool_error", 0.002, "4bf92f3577b34da6a3ce929d0e0e4736")
	m.Removed("math")
	text, err := m.Text()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`mcp_server_operation_duration_seconds_count{error_type="",mcp_method_name="tools/call"} 1`,
		`mcp_server_operation_duration_seconds_count{error_type="-32003",mcp_method_name="tools/call"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %s", want)
		}
	}
	if strings.Contains(text, `mcp_client_operation_duration_seconds_count{`) {
		t.Error("a removed server's client series remain")
	}
}

// TestMCPExemplars: a sampled observation leaves its trace id on its
// bucket; within a second, another in the same bucket counts but keeps
// the exemplar, and one in another bucket takes its own.
func TestMCPExemplars(t *testing.T) {
	t.Parallel()
	m := New()
	const first, second, slow = "4bf92f3577b34da6a3ce929d0e0e4736", "0af7651916cd43dd8448eb211c80319c", "11111111111111111111111111111111"
	m.ServerOperation("tools/call", "", 0.003, first)
	m.ServerOperation("tools/call", "", 0.004, second)
	m.ServerOperation("tools/call", "", 3, slow)
	h := series(t, m, "mcp_server_operation_duration_seconds")["//tools/call"].GetHistogram()
	if h.GetSampleCount() != 3 {
		t.Fatalf("count %d, want 3", h.GetSampleCount())
	}
	got := map[float64]string{}
	for _, b := range h.GetBucket() {
		if e := b.GetExemplar(); e != nil {
			got[b.GetUpperBound()] = e.GetLabel()[0].GetValue()
		}
	}
	if got[0.01] != first || got[5] != slow || len(got) != 2 {
		t.Errorf("exemplars by bucket %v, want %s at 0.01 and %s at 5", got, first, slow)
	}
}

// TestSessionsOpen: hangar_sessions_open reads the session table's count
// at each scrape (0 before the endpoint gave it).
func TestSessionsOpen(t *testing.T) {
	t.Parallel()
	m := New()
	gauge := func() float64 {
		s := series(t, m, "hangar_sessions_open")[""]
		if s == nil {
			t.Fatal("hangar_sessions_open not exported")
		}
		return s.GetGauge().GetValue()
	}
	if got := gauge(); got != 0 {
		t.Errorf("before CountSessions: %v, want 0", got)
	}
	n := 3
	m.CountSessions(func() int { return n })
	if got := gauge(); got != 3 {
		t.Errorf("with 3 sessions: %v", got)
	}
	n = 0
	if got := gauge(); got != 0 {
		t.Errorf("after they ended: %v", got)
	}
}
