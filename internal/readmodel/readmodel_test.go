package readmodel_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/metrics"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/readmodel"
	"github.com/mcp-hangar/hangar/internal/store"
)

// fakeStore is the audit trail, the stored catalogs and the installs.
type fakeStore struct {
	audit    map[string][]store.AuditEntry
	catalogs map[string]store.CachedCatalog
	installs []store.Install
}

// RecentAudit answers as the store does: server "" is every server's
// entries, newest first.
func (f *fakeStore) RecentAudit(_ context.Context, server string, limit int) ([]store.AuditEntry, error) {
	es := f.audit[server]
	if server == "" {
		es = nil
		for _, k := range slices.Sorted(maps.Keys(f.audit)) {
			es = append(es, f.audit[k]...)
		}
		sort.SliceStable(es, func(a, b int) bool { return es[a].At.After(es[b].At) })
	}
	if len(es) > limit {
		es = es[:limit]
	}
	return es, nil
}

func (f *fakeStore) Catalog(_ context.Context, server string) (store.CachedCatalog, error) {
	c, ok := f.catalogs[server]
	if !ok {
		return c, store.ErrNotFound
	}
	return c, nil
}

func (f *fakeStore) Installs(context.Context) ([]store.Install, error) { return f.installs, nil }

type fakeDiscovery struct{}

func (fakeDiscovery) Pending() []discovery.PendingEntry {
	return []discovery.PendingEntry{{Name: "cand", Source: "docker", Mode: "remote", Status: discovery.StatusPending},
		{Name: "other", Source: "docker", Status: discovery.StatusPending}}
}

func (fakeDiscovery) Quarantined() []discovery.QuarantineEntry {
	return []discovery.QuarantineEntry{{Name: "sick", Source: "docker", Reason: "health_check_failed: x"}}
}

type fakeFrontDoor struct{}

func (fakeFrontDoor) Details(server string) map[string]any { return map[string]any{"exposed": true} }
func (fakeFrontDoor) RecentBindings(server string, _ int) []readmodel.Binding {
	return []readmodel.Binding{{CallableName: server + "__add", RawToolName: "add"}}
}

// newModel is a model over a real catalog and provider manager serving
// the config servers alpha and beta (cold: never started), beta claimed
// by a second source that loses.
func newModel(t *testing.T) (*readmodel.Model, *fakeStore, *metrics.Metrics) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr := provider.NewManager(nil, provider.Options{Log: log})
	g := gateway.New(config.Default(), mgr, nil, nil, log)
	g.Catalog.Publish(t.Context(), catalog.SourceConfig, []*config.Server{
		{ID: "alpha", Mode: config.ModeRemote, Endpoint: "http://127.0.0.1:1/mcp"},
		{ID: "beta", Mode: config.ModeRemote, Endpoint: "http://127.0.0.1:2/mcp"},
	}, "test")
	g.Catalog.Publish(t.Context(), catalog.SourceInstalled, []*config.Server{
		{ID: "beta", Mode: config.ModeRemote, Endpoint: "http://127.0.0.1:3/mcp"},
	}, "test")
	now := time.Now()
	st := &fakeStore{
		audit: map[string][]store.AuditEntry{
			"":      {{ID: 1, At: now.Add(-time.Minute), Identity: "anonymous", Action: "request", Allowed: false, Reason: "no credentials"}},
			"alpha": {{ID: 3, At: now, Server: "alpha", Identity: "reader", Action: "tools/call", Tool: "hangar_approve", Allowed: false, Reason: "insufficient_scope"}, {ID: 2, At: now.Add(-time.Hour), Server: "alpha", Identity: "admin", Action: "tools/call", Tool: "add", Allowed: true}},
			"beta":  {{ID: 4, At: now.Add(-2 * time.Minute), Server: "beta", Identity: "kit", Action: "egress", Tool: "evil.example:443", Allowed: false, Reason: "not_allowed"}},
		},
		catalogs: map[string]store.CachedCatalog{"alpha": {Server: "alpha", Catalog: json.RawMessage(`{"tools":[{"name":"add","description":"adds"}]}`)}},
		installs: []store.Install{{Name: "zeta", Enabled: true}, {Name: "beta", Enabled: false}},
	}
	m := metrics.New()
	return &readmodel.Model{
		Providers: mgr, Groups: g.Groups, Catalog: g.Catalog, Audit: st, Stored: st, Installs: st,
		FrontDoor: fakeFrontDoor{}, Bindings: fakeFrontDoor{}, Discovery: fakeDiscovery{}, Metrics: m, Log: log,
		Egress: func(id string) any {
			if id == "alpha" {
				return map[string]any{"allow": []string{"api.example.com:443"}}
			}
			return nil
		},
	}, st, m
}

func TestDetails(t *testing.T) {
	t.Parallel()
	m, _, _ := newModel(t)
	d := m.Details(t.Context(), "alpha", 10)
	if !d.Served() || !d.Provider || d.Group != nil || d.Source != "config" || d.Spec.Endpoint != "http://127.0.0.1:1/mcp" {
		t.Fatalf("details %+v", d)
	}
	if len(d.Tools) != 0 || len(d.CatalogTools()) != 1 || d.CatalogTools()[0].Name != "add" {
		t.Errorf("a cold server shows its stored catalog: live %v, shown %v", d.Tools, d.CatalogTools())
	}
	if !d.AuditKnown || len(d.Audit) != 2 || d.Snapshot.State != provider.Cold {
		t.Errorf("audit %v (known %v), state %s", d.Audit, d.AuditKnown, d.Snapshot.State)
	}
	if d.FrontDoor["exposed"] != true || len(d.Bindings) != 1 || d.Bindings[0].CallableName != "alpha__add" || d.Egress == nil {
		t.Errorf("front door %v, bindings %v, egress %v", d.FrontDoor, d.Bindings, d.Egress)
	}
	if len(d.ShadowedClaim) != 0 || d.Quarantine != nil {
		t.Errorf("shadowed %v, quarantine %v", d.ShadowedClaim, d.Quarantine)
	}

	beta := m.Details(t.Context(), "beta", 10)
	if len(beta.ShadowedClaim) != 1 || beta.ShadowedClaim[0].Source != string(catalog.SourceInstalled) || beta.Egress != nil {
		t.Errorf("beta's losing claim: %+v", beta.ShadowedClaim)
	}
	if u := m.Details(t.Context(), "nope", 10); u.Served() {
		t.Errorf("an unknown ID is served: %+v", u)
	}
	// Without sources a view is empty, not a panic.
	if e := (&readmodel.Model{}).Details(t.Context(), "alpha", 10); e.Served() || e.AuditKnown {
		t.Errorf("empty model: %+v", e)
	}
}

func TestServers(t *testing.T) {
	t.Parallel()
	m, _, mt := newModel(t)
	mt.CallDone("alpha", "add", "success", 10*time.Millisecond)
	mt.CallDone("alpha", "add", "success", 30*time.Millisecond)
	mt.CallDone("alpha", "add", "error", 20*time.Millisecond)
	list := m.Servers(nil)
	if len(list) != 2 || list[0].ID != "alpha" || list[1].ID != "beta" {
		t.Fatalf("servers %+v", list)
	}
	a := list[0]
	if a.Source != "config" || a.State != "cold" || a.Calls != 3 || a.Errors != 1 || a.MeanMs < 19.9 || a.MeanMs > 20.1 || a.P50Ms <= 10 || a.P50Ms > 25 || a.Health != "" {
		t.Errorf("alpha %+v", a)
	}
	only := m.Servers(func(id string) bool { return id == "beta" })
	if len(only) != 1 || only[0].ID != "beta" {
		t.Errorf("filtered %+v", only)
	}
}

func TestCandidatesInstallsRefusals(t *testing.T) {
	t.Parallel()
	m, _, _ := newModel(t)
	c := m.Candidates(t.Context(), func(id string) bool { return id != "other" })
	if len(c) != 2 || c[0].Name != "cand" || c[0].Kind != readmodel.KindPending || c[1].Name != "sick" || c[1].Kind != readmodel.KindQuarantined {
		t.Errorf("candidates %+v", c)
	}
	in, err := m.InstalledServers(t.Context(), nil)
	// Sorted by name; beta has a provider (the config's claim won), zeta
	// none.
	if err != nil || len(in) != 2 || in[0].Name != "beta" || in[0].State != "cold" || in[1].Name != "zeta" || in[1].State != "" {
		t.Errorf("installs %+v, %v", in, err)
	}
	r, err := m.Refusals(t.Context(), nil, 10)
	if err != nil || len(r) != 3 || r[0].Identity != "reader" || r[1].Identity != "anonymous" || r[2].Action != "egress" {
		t.Errorf("refusals (each once, newest first) %+v, %v", r, err)
	}
	// A caller limited to some servers sees their refusals only: not
	// another server's (its egress refusals included), not the endpoint's,
	// which name no server and may be anyone's.
	if r, _ := m.Refusals(t.Context(), func(id string) bool { return id == "alpha" }, 10); len(r) != 1 || r[0].Server != "alpha" {
		t.Errorf("a caller limited to alpha: %+v", r)
	}
	if r, _ := m.Refusals(t.Context(), func(id string) bool { return id == "beta" }, 10); len(r) != 1 || r[0].Action != "egress" {
		t.Errorf("a caller limited to beta: %+v", r)
	}
	if r, _ := m.Refusals(t.Context(), func(string) bool { return false }, 10); len(r) != 0 {
		t.Errorf("a caller that reaches no server sees refusals: %+v", r)
	}
	if r, _ := m.Refusals(t.Context(), nil, 1); len(r) != 1 || r[0].Identity != "reader" {
		t.Errorf("limit 1: %+v", r)
	}
}

var errBroken = errors.New("broken")

type brokenAudit struct{}

func (brokenAudit) RecentAudit(context.Context, string, int) ([]store.AuditEntry, error) {
	return nil, errBroken
}

// An audit trail that cannot be read leaves the audit unknown (null in
// hangar_details), not the whole view failed.
func TestAuditUnreadable(t *testing.T) {
	t.Parallel()
	m, _, _ := newModel(t)
	m.Audit = brokenAudit{}
	d := m.Details(t.Context(), "alpha", 10)
	if !d.Served() || d.AuditKnown || d.Audit != nil {
		t.Errorf("details %+v", d)
	}
	if _, err := m.Refusals(t.Context(), nil, 10); !errors.Is(err, errBroken) {
		t.Errorf("refusals error %v", err)
	}
}

// Each candidate is offered the actions that would act on it in its
// state, and only those.
func TestCandidateActions(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name            string
		c               readmodel.Candidate
		approve, reject bool
	}{
		{"pending", readmodel.Candidate{Kind: readmodel.KindPending, Status: discovery.StatusPending}, true, true},
		{"pending, refused its name", readmodel.Candidate{Kind: readmodel.KindPending, Status: discovery.StatusRefused}, false, true},
		{"approved, refused its name since", readmodel.Candidate{Kind: readmodel.KindPending, Status: discovery.StatusRefused, Approved: true}, false, true},
		{"quarantined or rejected", readmodel.Candidate{Kind: readmodel.KindQuarantined}, true, false},
		{"changed, from discovery", readmodel.Candidate{Kind: readmodel.KindChanged, Discovered: true}, true, true},
		{"changed, from config", readmodel.Candidate{Kind: readmodel.KindChanged}, true, false},
	} {
		if got := tt.c.Approvable(); got != tt.approve {
			t.Errorf("%s: Approvable = %v, want %v", tt.name, got, tt.approve)
		}
		if got := tt.c.Rejectable(); got != tt.reject {
			t.Errorf("%s: Rejectable = %v, want %v", tt.name, got, tt.reject)
		}
	}
}

type approvedDiscovery struct{ fakeDiscovery }

func (approvedDiscovery) Pending() []discovery.PendingEntry {
	return []discovery.PendingEntry{{Name: "taken", Source: "docker", Status: discovery.StatusRefused, Reason: "config holds it", Approved: true}}
}

// A candidate approved before its name was taken is listed as approved.
func TestCandidatesApprovedAndRefused(t *testing.T) {
	t.Parallel()
	m, _, _ := newModel(t)
	m.Discovery = approvedDiscovery{}
	c := m.Candidates(t.Context(), nil)
	if len(c) < 1 || c[0].Name != "taken" || !c[0].Approved || c[0].Approvable() || !c[0].Rejectable() {
		t.Errorf("candidates %+v: want taken approved, rejectable only", c)
	}
}

// Health is filled for every running server: a READY provider answered
// its handshake and is "ok" until a check or call fails.
func TestHealthOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		state    provider.State
		failures int
		want     string
	}{
		{provider.Cold, 0, ""},
		{provider.Ready, 0, "ok"},
		{provider.Ready, 2, "failing"},
		{provider.Initializing, 0, "starting"},
		{provider.Degraded, 0, "degraded"},
		{provider.Degraded, 1, "failing"},
		{provider.Dead, 0, "down"},
	} {
		if got := readmodel.HealthOf(c.state, c.failures); got != c.want {
			t.Errorf("HealthOf(%s, %d) = %q, want %q", c.state, c.failures, got, c.want)
		}
	}
}

// The groups page: each group's members, strategy and breaker, the
// caller's groups only.
func TestGroupList(t *testing.T) {
	t.Parallel()
	m, _, _ := newModel(t)
	g := m.Catalog.(*catalog.Catalog)
	g.Publish(t.Context(), catalog.SourceConfig, []*config.Server{
		{ID: "alpha", Mode: config.ModeRemote, Endpoint: "http://127.0.0.1:1/mcp"},
		{ID: "beta", Mode: config.ModeRemote, Endpoint: "http://127.0.0.1:2/mcp"},
		{ID: "pool", Mode: config.ModeGroup, Strategy: "round_robin", Members: []*config.Server{
			{ID: "pool-a", Mode: config.ModeRemote, Endpoint: "http://127.0.0.1:4/mcp"},
			{ID: "pool-b", Mode: config.ModeRemote, Endpoint: "http://127.0.0.1:5/mcp"},
		}},
	}, "test")
	list := m.GroupList(nil)
	if len(list) != 1 || list[0].ID != "pool" || list[0].Strategy != "round_robin" || list[0].Circuit != "closed" || len(list[0].Members) != 2 {
		t.Fatalf("groups %+v", list)
	}
	if l := m.GroupList(func(id string) bool { return id != "pool" }); len(l) != 0 {
		t.Errorf("a group out of reach listed: %+v", l)
	}
	for _, s := range m.Servers(nil) {
		if s.ID == "pool" && (!s.IsGroup || s.Members != 2 || s.Health != "") {
			t.Errorf("the cold group's line %+v", s)
		}
	}
}
