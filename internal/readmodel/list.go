package readmodel

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/group"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/store"
)

// Summary is one line of the server list.
type Summary struct {
	ID     string
	Source string
	// Group names the group a member belongs to; IsGroup marks a group.
	Group   string
	IsGroup bool
	State   string
	// Health is how a running server is doing (HealthOf): "ok",
	// "failing" (consecutive failed checks or calls), "starting",
	// "degraded", "down"; for a group its own state; "" for a server or
	// group that is not running (cold).
	Health              string
	ConsecutiveFailures int
	// Healthy and Members count a group's healthy members and all of them.
	Healthy, Members int
	Calls            int64
	Errors           int64
	// CallsPerSecond is the rate since the previous list (0 on the first).
	CallsPerSecond float64
	// MeanMs is the mean call duration, P50Ms and P99Ms the median and
	// the 99th percentile estimated from the duration histogram's
	// buckets, since the server was registered; 0 when no call was timed.
	MeanMs      float64
	P50Ms       float64
	P99Ms       float64
	LastError   string
	ImageDigest string
	Quarantined bool
}

// Servers lists every served ID that keep accepts (nil keeps all), in
// the catalog's order.
func (m *Model) Servers(keep func(id string) bool) []Summary {
	if m.Catalog == nil {
		return nil
	}
	totals := m.totals()
	now := time.Now()
	entries := m.Catalog.List()
	out := make([]Summary, 0, len(entries))
	for _, e := range entries {
		if keep != nil && !keep(e.ID) {
			continue
		}
		s := Summary{ID: e.ID, Source: string(e.Source), Group: e.Group, IsGroup: e.IsGroup()}
		if g, ok := m.group(e.ID); ok {
			st := g.Status()
			s.State, s.Health = string(st.State), string(st.State)
			s.Healthy, s.Members = st.HealthyCount, st.TotalMembers
			if st.State == group.Cold {
				s.Health = ""
			}
		} else if p, ok := m.provider(e.ID); ok {
			snap := p.Snapshot()
			s.State, s.LastError = string(snap.State), snap.LastError
			s.ConsecutiveFailures = snap.Health.ConsecutiveFailures
			s.Health = HealthOf(snap.State, snap.Health.ConsecutiveFailures)
			_, s.Quarantined = p.Quarantined()
			if m.Images != nil && p.Spec().Image != "" {
				s.ImageDigest = m.Images.Status(e.ID).Digest
			}
		}
		if t, ok := totals[e.ID]; ok {
			s.Calls, s.Errors = t.calls, t.errors
			if t.count > 0 {
				s.MeanMs, s.P50Ms, s.P99Ms = t.sumMs/float64(t.count), t.p50Ms, t.p99Ms
			}
			s.CallsPerSecond = m.rates.rate(e.ID, t.calls, now)
		}
		out = append(out, s)
	}
	return out
}

// HealthOf is how a provider in state with failures consecutive failed
// checks or calls is doing. A READY provider answered its handshake, and
// every call and check since that failed is counted: it is "ok" until
// one fails, without waiting for the first periodic check.
func HealthOf(state provider.State, failures int) string {
	switch {
	case state == provider.Cold:
		return ""
	case failures > 0:
		return "failing"
	case state == provider.Ready:
		return "ok"
	case state == provider.Initializing:
		return "starting"
	case state == provider.Degraded:
		return "degraded"
	}
	return "down"
}

type totals struct {
	calls, errors, count int64
	sumMs, p50Ms, p99Ms  float64
}

func (m *Model) totals() map[string]totals {
	if m.Metrics == nil {
		return nil
	}
	sum, err := m.Metrics.Summarize()
	if err != nil {
		m.log().Debug("metrics not read", "error", err)
		return nil
	}
	out := make(map[string]totals, len(sum.Servers))
	for id, t := range sum.Servers {
		out[id] = totals{calls: t.Invocations, errors: t.Errors, count: t.LatencyCount, sumMs: t.LatencySumMs, p50Ms: t.LatencyP50Ms, p99Ms: t.LatencyP99Ms}
	}
	return out
}

// rateMeter turns call totals into rates between two reads.
type rateMeter struct {
	mu   sync.Mutex
	last map[string]sample
}

type sample struct {
	at    time.Time
	calls int64
}

// minRateWindow keeps two lists a moment apart from showing a rate of
// one call over a millisecond.
const minRateWindow = time.Second

func (r *rateMeter) rate(id string, calls int64, now time.Time) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[string]sample{}
	}
	prev, ok := r.last[id]
	if !ok || calls < prev.calls {
		r.last[id] = sample{at: now, calls: calls}
		return 0
	}
	el := now.Sub(prev.at)
	if el < minRateWindow {
		if el <= 0 {
			return 0
		}
		// Too soon for a new sample: the rate since the kept one.
		return float64(calls-prev.calls) / minRateWindow.Seconds()
	}
	r.last[id] = sample{at: now, calls: calls}
	return float64(calls-prev.calls) / el.Seconds()
}

// Candidate is a server waiting for an operator: a discovered container
// not yet approved, one quarantined by discovery's health check, or a
// provider whose tools or image changed since they were approved.
type Candidate struct {
	Name   string
	Kind   string // KindPending, KindQuarantined or KindChanged
	Source string
	Mode   string
	// Status is discovery's (pending, refused) for a pending candidate.
	Status string
	Reason string
	Detail string
	Since  time.Time
	// Approved: a pending candidate discovery approved already, listed
	// because its name is refused meanwhile.
	Approved bool
	// Discovered: a changed provider served from discovery, whose
	// approval there can be revoked.
	Discovered bool
	// Tools are what is known of a pending candidate's catalog
	// (ShownCatalog): what approving it pins; none when nothing was read.
	Tools []mcpconn.Tool
}

// Approvable reports whether an approval (hangar_approve) would act on c
// now: a pending candidate the catalog would serve, a quarantined one
// (the approval releases it, a rejection included), a provider whose
// tools or image changed (the approval accepts them). A candidate refused
// its name cannot be served whatever the operator says, and an approved
// one is approved already.
func (c Candidate) Approvable() bool {
	switch c.Kind {
	case KindPending:
		return c.Status != discovery.StatusRefused
	case KindQuarantined, KindChanged:
		return true
	}
	return false
}

// Rejectable reports whether a rejection (discovery's Reject) would act on
// c now: a pending candidate, refused its name or not; an approved one,
// whose approval it revokes; a discovered provider whose tools or image
// changed since its approval. A quarantined candidate is rejected already,
// and a changed server from config or an install has no approval to
// revoke (its source decides whether it is served).
func (c Candidate) Rejectable() bool {
	switch c.Kind {
	case KindPending:
		return true
	case KindChanged:
		return c.Discovered
	}
	return false
}

// Kinds of Candidate.
const (
	KindPending     = "pending"
	KindQuarantined = "quarantined"
	KindChanged     = "changed"
)

// Candidates lists the servers waiting for an approval that keep accepts.
func (m *Model) Candidates(ctx context.Context, keep func(id string) bool) []Candidate {
	var out []Candidate
	ok := func(id string) bool { return keep == nil || keep(id) }
	if m.Discovery != nil {
		for _, p := range m.Discovery.Pending() {
			if ok(p.Name) {
				out = append(out, Candidate{Name: p.Name, Kind: KindPending, Source: p.Source, Mode: p.Mode, Status: p.Status, Reason: p.Reason, Since: p.DiscoveredAt, Approved: p.Approved,
					Tools: m.ShownCatalog(ctx, p.Name)})
			}
		}
		for _, q := range m.Discovery.Quarantined() {
			if ok(q.Name) {
				out = append(out, Candidate{Name: q.Name, Kind: KindQuarantined, Source: q.Source, Reason: q.Reason, Since: q.QuarantineTime})
			}
		}
	}
	if m.Providers == nil {
		return out
	}
	for _, p := range m.Providers.List() {
		q, quarantined := p.Quarantined()
		if quarantined && ok(p.ID()) {
			out = append(out, Candidate{Name: p.ID(), Kind: KindChanged, Reason: q.Reason, Detail: q.Detail, Since: q.Since, Discovered: m.discovered(p.ID())})
		}
	}
	return out
}

// Install is one installed server as the installs page shows it; its
// configuration (which names keystore refs) stays out.
type Install struct {
	Name          string
	Enabled       bool
	AllowImplicit bool
	State         string // the provider's, "" when not served
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// InstalledServers lists the installed servers that keep accepts.
func (m *Model) InstalledServers(ctx context.Context, keep func(id string) bool) ([]Install, error) {
	if m.Installs == nil {
		return nil, nil
	}
	list, err := m.Installs.Installs(ctx)
	if err != nil {
		return nil, err
	}
	var out []Install
	for _, in := range list {
		if keep != nil && !keep(in.Name) {
			continue
		}
		i := Install{Name: in.Name, Enabled: in.Enabled, AllowImplicit: in.AllowImplicit, CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt}
		if p, ok := m.provider(in.Name); ok {
			i.State = string(p.State())
		}
		out = append(out, i)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}

// Refusals are the newest refused requests and calls, newest first, that
// keep accepts (nil keeps all): those on each server keep accepts (egress
// refusals included) and, only for a caller that keep lets see every
// server (keep("") is true), the endpoint's own, which name no server (a
// token refused, a scope missing) and may be about anyone. limit bounds
// the answer.
func (m *Model) Refusals(ctx context.Context, keep func(id string) bool, limit int) ([]store.AuditEntry, error) {
	if m.Audit == nil {
		return nil, nil
	}
	mine := func(server string) bool { return keep == nil || keep(server) }
	// The audit reads "" as every server: only a caller who may see them
	// all asks for it.
	var ids []string
	if mine("") {
		ids = append(ids, "")
	}
	if m.Catalog != nil {
		for _, e := range m.Catalog.List() {
			if e.ID != "" && mine(e.ID) {
				ids = append(ids, e.ID)
			}
		}
	}
	var out []store.AuditEntry
	seen := map[int64]bool{}
	for _, id := range ids {
		es, err := m.Audit.RecentAudit(ctx, id, limit)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			// Checked again per entry: whatever the audit answered, an
			// entry of a server the caller does not reach is not theirs.
			if e.Allowed || !mine(e.Server) || (e.ID != 0 && seen[e.ID]) {
				continue
			}
			seen[e.ID] = true // "" and each server's query overlap
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].At.After(out[b].At) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// discovered reports whether the catalog serves id from discovery.
func (m *Model) discovered(id string) bool {
	if m.Catalog == nil {
		return false
	}
	e, ok := m.Catalog.Get(id)
	return ok && e.Source == catalog.SourceDiscovery
}

// GroupList lists the status of every group keep accepts (nil keeps all),
// in the catalog's order: members, strategy, breaker.
func (m *Model) GroupList(keep func(id string) bool) []group.Status {
	if m.Catalog == nil {
		return nil
	}
	var out []group.Status
	for _, e := range m.Catalog.List() {
		if !e.IsGroup() || (keep != nil && !keep(e.ID)) {
			continue
		}
		if g, ok := m.group(e.ID); ok {
			out = append(out, g.Status())
		}
	}
	return out
}

// GatewayTools are the gateway's own tools (hangar_*), as every caller
// may read of them in seed 001; a caller's scopes decide which it may
// call.
func (m *Model) GatewayTools() []mcpconn.Tool {
	if m.OwnTools == nil {
		return nil
	}
	return m.OwnTools()
}
