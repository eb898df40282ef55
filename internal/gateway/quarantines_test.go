package gateway_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/pin"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/store"
)

// fakeDecisions is store.Decisions in memory.
type fakeDecisions struct {
	mu sync.Mutex
	m  map[string]store.Decision // key + "/" + kind
}

func newFakeDecisions() *fakeDecisions { return &fakeDecisions{m: map[string]store.Decision{}} }

func (f *fakeDecisions) Decisions(context.Context) ([]store.Decision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.Decision
	for _, d := range f.m {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (f *fakeDecisions) PutDecision(_ context.Context, d store.Decision) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[d.Key+"/"+d.Kind] = d
	return nil
}

func (f *fakeDecisions) DeleteDecision(_ context.Context, key, kind string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, key+"/"+kind)
	return nil
}

func (f *fakeDecisions) get(key string) (store.Decision, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.m[key+"/"+store.DecisionQuarantined]
	return d, ok
}

// imageGate refuses every image until approved, as backend.ImageGate does
// with a moved tag.
type imageGate struct {
	*fakeLauncher
	mu       sync.Mutex
	approved map[string]bool
}

type refused struct{ detail string }

func (r *refused) Error() string                      { return "image_changed: " + r.detail }
func (r *refused) QuarantineReason() (string, string) { return provider.ReasonImageChanged, r.detail }

var _ provider.Preparer = (*imageGate)(nil)

func (g *imageGate) Prepare(_ context.Context, s *config.Server, _ call.Progress) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.approved[s.ID] {
		return nil
	}
	return &refused{"image r/" + s.ID + ":1 now resolves to sha256:bbb, but sha256:aaa was approved"}
}

func (g *imageGate) Approve(_ context.Context, s *config.Server) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.approved[s.ID] = true
	return nil
}

// newQuarantineHarness is a gateway (discovery off) whose providers keep
// their quarantines in db, as after a restart over the same store.
func newQuarantineHarness(t *testing.T, gate *imageGate, db *fakeDecisions, servers ...*config.Server) *harness {
	t.Helper()
	qs, err := pin.LoadQuarantines(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	qs.SourceOf = func(string) string { return "installed" }
	mgr := provider.NewManager(gate, provider.Options{Log: quiet, Images: gate, Quarantines: qs})
	cfg := config.Default()
	for _, s := range servers {
		cfg.Servers[s.ID] = s
		mgr.Add(s)
	}
	g := gateway.New(cfg, mgr, nil, nil, quiet)
	c, err := client.NewInProcessClient(g.MCPServer())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		_ = mgr.StopAll(context.Background(), "test")
	})
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	return &harness{g: g, l: gate.fakeLauncher, c: c}
}

// TestImageChangedQuarantine: a moved tag quarantines the provider the
// way a tool change does (refused calls of kind quarantined, hangar_details
// and hangar_quarantine say why, without discovery), the quarantine is a
// stored decision that a restart restores, and hangar_approve records the
// new image, deletes the record and lets the provider start.
func TestImageChangedQuarantine(t *testing.T) {
	t.Parallel()
	db := newFakeDecisions()
	gate := &imageGate{fakeLauncher: newFakeLauncher(), approved: map[string]bool{}}
	h := newQuarantineHarness(t, gate, db, server("math"))

	resp := h.ok(t, "hangar_call", map[string]any{"calls": []any{callEntry("math", "add", map[string]any{"a": 1, "b": 1})}})
	r := obj(t, list(t, resp["results"])[0])
	if r["success"] != false || r["error_type"] != "quarantined" || !strings.Contains(r["error"].(string), "sha256:bbb") {
		t.Fatalf("call with a moved tag = %v", r)
	}
	if n := gate.launchCount("math"); n != 0 {
		t.Errorf("%d launches of the changed image", n)
	}
	checkShown := func(h *harness) {
		t.Helper()
		q := obj(t, h.ok(t, "hangar_details", map[string]any{"mcp_server": "math"})["quarantine"])
		if q["reason"] != "image_changed" || !strings.Contains(q["detail"].(string), "sha256:aaa") || q["approve_with"] != "hangar_approve" {
			t.Errorf("hangar_details quarantine = %v", q)
		}
		ql := list(t, h.ok(t, "hangar_quarantine", nil)["quarantined"])
		if len(ql) != 1 || obj(t, ql[0])["name"] != "math" || obj(t, ql[0])["reason"] != "image_changed" || obj(t, ql[0])["source"] != "image_gate" {
			t.Errorf("hangar_quarantine = %v", ql)
		}
	}
	checkShown(h)
	d, ok := db.get("math")
	if !ok || d.Reason != "image_changed" || d.Source != "installed" || d.Fingerprint != store.ProviderQuarantineFingerprint("example/math") || !strings.Contains(d.Detail, "sha256:bbb") {
		t.Fatalf("stored decision = %+v, %v", d, ok)
	}

	// A restart over the same store: still quarantined before any call.
	h2 := newQuarantineHarness(t, gate, db, server("math"))
	checkShown(h2)

	a := h2.ok(t, "hangar_approve", map[string]any{"mcp_server": "math"})
	if a["approved"] != true || a["reason"] != "image_changed" || a["status"] != "registered" {
		t.Fatalf("hangar_approve = %v", a)
	}
	if _, ok := db.get("math"); ok {
		t.Error("the stored quarantine outlived the approval")
	}
	if q := h2.ok(t, "hangar_details", map[string]any{"mcp_server": "math"})["quarantine"]; q != nil {
		t.Errorf("quarantine after approval = %v", q)
	}
	resp = h2.ok(t, "hangar_call", map[string]any{"calls": []any{callEntry("math", "add", map[string]any{"a": 2, "b": 2})}})
	if r := obj(t, list(t, resp["results"])[0]); r["success"] != true || r["result"] != float64(4) {
		t.Errorf("call after approval: %v", r)
	}
	// Nothing left to show: hangar_quarantine answers as before.
	if got := textOf(t, h2.call(t, "hangar_quarantine", nil)); !strings.Contains(got, "Discovery not configured") {
		t.Errorf("hangar_quarantine with nothing quarantined and discovery off = %s", got)
	}
}
