package dashboard

import (
	"github.com/mcp-hangar/hangar/internal/group"
	"github.com/mcp-hangar/hangar/internal/readmodel"
	"github.com/mcp-hangar/hangar/internal/store"
)

// The fragments of the pages (pages.go's table); app.js puts them in the
// page. Each is a function of its view alone.

// health writes a server's health: a pill, "failing (n)", or an em dash
// for a server that is not running.
func (f *frag) health(h string, failures int) {
	switch {
	case h == "failing":
		f.M(`<span class="pill bad">failing (`)
		f.Val(failures)
		f.M(`)</span>`)
	case h != "":
		f.pill(`health-`, h)
	default:
		f.M(`<span class="muted">—</span>`)
	}
}

func (f *frag) spark(s sparkline) {
	f.M(`<svg class="spark `)
	f.Text(s.Class)
	f.M(`" viewBox="0 0 120 26" role="img"`)
	f.Attr(` aria-label`, s.Label)
	f.M(`><title>`)
	f.Text(s.Label)
	f.M(`</title><line class="base" x1="2" y1="24" x2="118" y2="24"/>`)
	if s.Line != "" {
		f.M(`<polyline`)
		f.Attr(` points`, s.Line)
		f.M(`/>`)
	}
	f.M(`</svg>`)
}

func serversFragment(rows []serverRow) *frag {
	f := &frag{}
	f.M(`<div class="table-wrap"><table class="list" id="servers-table">
<thead><tr><th>Server</th><th>State</th><th>Health</th><th class="num">Calls/s</th><th>Calls · 15 min</th><th class="num">Calls</th><th class="num">Errors</th><th class="num" title="since the server was registered">p50 ms</th><th class="num" title="since the server was registered">p99 ms</th><th>p99 · 15 min</th><th class="wide">Source</th><th class="wide">Last error</th></tr></thead>
<tbody>`)
	for _, s := range rows {
		f.M(`<tr`)
		f.Attr(` data-id`, s.ID)
		f.Attr(` data-state`, s.State)
		f.Attr(` data-health`, s.Health)
		f.M(`>
<td class="c-name">`)
		f.serverLink(s.ID)
		if s.IsGroup {
			f.M(` <span class="tag">group</span>`)
		}
		if s.Group != "" {
			f.M(` <span class="tag">in `)
			f.Text(s.Group)
			f.M(`</span>`)
		}
		if s.Quarantined {
			f.M(` <span class="tag warn">quarantined</span>`)
		}
		if s.ImageDigest != "" {
			f.M(`<div class="sub mono digest"`)
			f.Attr(` title`, s.ImageDigest)
			f.M(`>`)
			f.Text(short(s.ImageDigest))
			f.M(`</div>`)
		}
		f.M(`</td>
<td class="c-state">`)
		f.pill(`state-`, s.State)
		f.M(`</td>
<td class="c-health">`)
		switch {
		case s.IsGroup && s.Health != "":
			f.M(`<span class="pill health-`)
			f.Text(s.Health)
			f.M(`">`)
			f.Val(s.Healthy)
			f.M(`/`)
			f.Val(s.Members)
			f.M(` healthy</span>`)
		case s.IsGroup:
			f.M(`<span class="muted">—</span>`)
		default:
			f.health(s.Health, s.ConsecutiveFailures)
		}
		f.M(`</td>
<td class="num c-rate">`)
		f.Text(rate(s.CallsPerSecond))
		f.M(`<span class="unit">/s</span></td><td class="c-spark">`)
		f.spark(s.CallsSpark)
		f.M(`</td>
<td class="num c-more">`)
		f.Val(s.Calls)
		f.M(`</td><td class="num c-more`)
		if s.Errors != 0 {
			f.M(` err`)
		}
		f.M(`">`)
		f.Val(s.Errors)
		f.M(`</td>
<td class="num c-more" title="mean `)
		f.Text(ms(s.MeanMs))
		f.M(` ms">`)
		f.Text(ms(s.P50Ms))
		f.M(`</td><td class="num c-more">`)
		f.Text(ms(s.P99Ms))
		f.M(`</td><td class="c-more">`)
		f.spark(s.LatencySpark)
		f.M(`</td>
<td class="wide">`)
		f.Text(s.Source)
		f.M(`</td><td class="wide err">`)
		f.Text(s.LastError)
		f.M("</td></tr>\n")
	}
	if len(rows) == 0 {
		f.M(`<tr><td colspan="12" class="empty">No servers.</td></tr>`)
	}
	f.M(`</tbody></table></div>`)
	return f
}

func unknownFragment(id string) *frag {
	f := &frag{}
	f.M(`<p class="empty">No server named <b>`)
	f.Text(id)
	f.M(`</b>.</p>`)
	return f
}

func trafficFragment(v trafficView) *frag {
	f := &frag{}
	f.M(`<div class="charts"`)
	f.Attr(` data-server`, v.ID)
	f.M(` data-points="`)
	f.Val(v.Points)
	f.M(`" data-calls="`)
	f.Val(v.Calls)
	f.M(`" data-errors="`)
	f.Val(v.Errors)
	f.M(`" data-step-ms="`)
	f.Val(v.Step.Milliseconds())
	f.M("\">\n")
	for _, c := range v.Charts {
		f.M(`<figure class="chart">
<figcaption><span class="chart-title">`)
		f.Text(c.Title)
		f.M(`</span>`)
		for _, s := range c.Series {
			f.M(` <span class="key `)
			f.Text(s.Class)
			f.M(`">`)
			f.Text(s.Name)
			f.M(` <b>`)
			f.Text(s.Last)
			f.M(`</b></span>`)
		}
		f.M(`</figcaption>
<svg viewBox="0 0 600 150" role="img"`)
		f.Attr(` aria-label`, c.Label)
		f.M(`><title>`)
		f.Text(c.Label)
		f.M(`</title>
<g class="grid"><line x1="52" y1="10" x2="592" y2="10"/><line x1="52" y1="69" x2="592" y2="69"/><line class="axis" x1="52" y1="128" x2="592" y2="128"/></g>
<g class="labels"><text x="47" y="14" text-anchor="end">`)
		f.Text(c.YMax)
		f.Text(c.YUnit)
		f.M(`</text><text x="47" y="73" text-anchor="end">`)
		f.Text(c.YMid)
		f.M(`</text><text x="47" y="132" text-anchor="end">0</text>
<text x="52" y="146">−15 min</text><text x="322" y="146" text-anchor="middle">−7.5 min</text><text x="592" y="146" text-anchor="end">now</text></g>
`)
		for _, s := range c.Series {
			f.M(`<g class="series `)
			f.Text(s.Class)
			f.M(`">`)
			for _, a := range s.Areas {
				f.M(`<polygon class="area"`)
				f.Attr(` points`, a)
				f.M(`/>`)
			}
			for _, l := range s.Lines {
				f.M(`<polyline`)
				f.Attr(` points`, l)
				f.M(`/>`)
			}
			f.M(`</g>`)
		}
		f.M("\n")
		if c.Empty != "" {
			f.M(`<text class="empty-note" x="322" y="72" text-anchor="middle">`)
			f.Text(c.Empty)
			f.M(`</text>`)
		}
		f.M(`
</svg></figure>
`)
	}
	f.M(`</div>`)
	return f
}

func groupsFragment(list []group.Status) *frag {
	f := &frag{}
	for _, g := range list {
		f.M(`<article class="card group"`)
		f.Attr(` data-id`, g.ID)
		f.M(`>
<h3>`)
		f.serverLink(g.ID)
		f.M(` `)
		f.pill(`health-`, string(g.State))
		f.M("</h3>\n")
		f.groupFacts(g)
		f.M("\n")
		f.members(g.Members)
		f.M("</article>\n")
	}
	if len(list) == 0 {
		f.M(`<p class="empty">No groups.</p>`)
	}
	return f
}

// groupFacts writes a group's description and facts (the groups page's
// cards and a group's page).
func (f *frag) groupFacts(g group.Status) {
	if g.Description != "" {
		f.M(`<p class="desc">`)
		f.Text(g.Description)
		f.M(`</p>`)
	}
	f.M(`
<dl class="facts"><dt>Strategy</dt><dd>`)
	f.Text(g.Strategy)
	f.M(`</dd><dt>Healthy</dt><dd>`)
	f.Val(g.HealthyCount)
	f.M(` of `)
	f.Val(g.TotalMembers)
	f.M(` (at least `)
	f.Val(g.MinHealthy)
	f.M(`)</dd>
<dt>Circuit breaker</dt><dd>`)
	f.pill(`breaker-`, g.Circuit)
	f.M(`</dd></dl>`)
}

func (f *frag) members(list []group.MemberStatus) {
	f.M(`<div class="table-wrap"><table class="list members"><thead><tr><th>Member</th><th>State</th><th>In rotation</th><th class="num">Weight</th><th class="num">Priority</th><th class="num">Failures</th></tr></thead><tbody>
`)
	for _, m := range list {
		f.M(`<tr`)
		f.Attr(` data-id`, m.ID)
		f.M(`><td>`)
		f.serverLink(m.ID)
		f.M(`</td><td>`)
		f.pill(`state-`, string(m.State))
		f.M(`</td><td>`)
		if m.InRotation {
			f.M(`<span class="ok">yes</span>`)
		} else {
			f.M(`<span class="warn">no</span>`)
		}
		f.M(`</td><td class="num">`)
		f.Val(m.Weight)
		f.M(`</td><td class="num">`)
		f.Val(m.Priority)
		f.M(`</td><td class="num">`)
		f.Val(m.ConsecutiveFailures)
		f.M(`</td></tr>`)
	}
	f.M(`
</tbody></table></div>`)
}

func replicasFragment(r readmodel.Replicas) *frag {
	f := &frag{}
	f.M(`<p class="hint">Instance <b>`)
	f.Text(r.Instance)
	f.M(`</b>: `)
	if r.Shared {
		f.M(`replicas share a store; each owns the containers it started.`)
	} else {
		f.M(`one gateway (no shared store); it owns every container below.`)
	}
	f.M("</p>\n")
	if r.MembersErr != "" {
		f.M(`<p class="warn">Members not read: `)
		f.Text(r.MembersErr)
		f.M(`</p>`)
	}
	if r.ContainersErr != "" {
		f.M(`<p class="warn">Containers not listed: `)
		f.Text(r.ContainersErr)
		f.M(`</p>`)
	}
	f.M("\n")
	for _, m := range r.Members {
		f.M(`<article class="card replica"`)
		f.Attr(` data-replica`, m.Name)
		f.M(`>
<h3>`)
		if m.Name != "" {
			f.Text(m.Name)
		} else {
			f.M(`this gateway`)
		}
		if m.Self {
			f.M(` <span class="tag">this gateway</span>`)
		}
		if m.Live {
			f.M(` <span class="pill health-ok">live</span>`)
		} else {
			f.M(` <span class="pill bad">gone</span>`)
		}
		f.M("</h3>\n")
		if !m.HeartbeatAt.IsZero() {
			f.M(`<dl class="facts"><dt>Advertised at</dt><dd class="mono">`)
			f.Text(m.AdvertiseURL)
			f.M(`</dd><dt>Engine</dt><dd class="mono">`)
			f.Text(short(m.Engine))
			f.M(`</dd><dt>Started</dt><dd>`)
			f.Text(when(m.StartedAt))
			f.M(`</dd><dt>Heartbeat</dt><dd>`)
			f.Text(ago(m.HeartbeatAt))
			f.M(`</dd></dl>`)
		}
		f.M(`
<div class="table-wrap"><table class="list containers"><thead><tr><th>Server</th><th>Container</th><th>Role</th><th>State</th><th>Created</th></tr></thead><tbody>
`)
		for _, c := range m.Containers {
			f.M(`<tr`)
			f.Attr(` data-server`, c.Server)
			f.M(`><td>`)
			f.serverLink(c.Server)
			f.M(`</td><td class="mono"`)
			f.Attr(` title`, c.ID)
			f.M(`>`)
			f.Text(c.Name)
			f.M(`</td><td>`)
			if c.Role != "" {
				f.Text(c.Role)
			} else {
				f.M(`provider`)
			}
			f.M(`</td><td>`)
			f.pill(`cstate-`, c.State)
			f.M(`</td><td>`)
			f.Text(ago(c.Created))
			f.M("</td></tr>\n")
		}
		if len(m.Containers) == 0 {
			f.M(`<tr><td colspan="5" class="empty">No containers.</td></tr>`)
		}
		f.M("</tbody></table></div></article>\n")
	}
	return f
}

func gatewayFragment(tools []gatewayTool) *frag {
	f := &frag{}
	f.M(`<p class="hint">Every tool the gateway serves itself. Your token's scopes decide which you may run: the gateway checks them on each call, as for any client.</p>
<div class="table-wrap"><table class="list stack" id="gateway-tools"><thead><tr><th>Tool</th><th>Needs</th><th>Description</th><th></th></tr></thead><tbody>
`)
	for _, t := range tools {
		f.M(`<tr`)
		f.Attr(` data-tool`, t.Name)
		f.M(`><td class="mono">`)
		f.Text(t.Name)
		if t.Allowed {
			f.M(`</td><td><span class="pill health-ok" title="your token holds it">`)
		} else {
			f.M(`</td><td><span class="pill muted-pill" title="your token lacks it">`)
		}
		f.Text(t.Scope)
		f.M(`</span></td><td class="desc">`)
		f.Text(t.Description)
		f.M(`</td>
<td><button type="button" class="small" data-try`)
		f.Attr(` data-tool`, t.Name)
		f.Attr(` aria-label`, "Try "+t.Name)
		f.M(`>Try</button></td></tr>`)
	}
	f.M(`</tbody></table></div>`)
	return f
}

func pendingFragment(p pendingPage) *frag {
	f := &frag{}
	f.M(`<div class="table-wrap"><table class="list" id="pending-table">
<thead><tr><th>Server</th><th>Kind</th><th>Source</th><th>Since</th><th>Reason</th><th>Tools</th><th></th></tr></thead>
<tbody>`)
	for _, c := range p.Candidates {
		f.M(`<tr`)
		f.Attr(` data-id`, c.Name)
		f.Attr(` data-kind`, c.Kind)
		f.M(`>
<td>`)
		f.Text(c.Name)
		f.M(`</td><td>`)
		f.Text(c.Kind)
		if c.Status != "" && c.Status != "pending" {
			f.M(` (`)
			f.Text(c.Status)
			f.M(`)`)
		}
		if c.Approved {
			f.M(` <span class="tag">approved</span>`)
		}
		f.M(`</td><td>`)
		f.Text(c.Source)
		f.M(`</td><td>`)
		f.Text(when(c.Since))
		f.M(`</td>
<td>`)
		f.Text(c.Reason)
		if c.Detail != "" {
			f.M(`<pre>`)
			f.Text(c.Detail)
			f.M(`</pre>`)
		}
		f.M(`</td>
<td class="tools">`)
		if c.Kind == readmodel.KindPending {
			if len(c.Tools) > 0 {
				f.M(`<details><summary>`)
				f.Val(len(c.Tools))
				f.M(` tools (approving pins them)</summary><ul>`)
				for _, t := range c.Tools {
					f.M(`<li><b class="mono">`)
					f.Text(t.Name)
					f.M(`</b>`)
					if t.Description != "" {
						f.M(`: `)
						f.Text(t.Description)
					}
					f.M(`</li>`)
				}
				f.M(`</ul></details>`)
			} else {
				f.M(`none read (approving pins none: its first start is held for review)`)
			}
		}
		f.M(`</td>
<td class="actions">`)
		if p.CanAct && c.Approvable() {
			f.M(`<button type="button" class="approve"`)
			f.Attr(` data-approve`, c.Name)
			f.M(`>Approve</button>`)
		}
		if p.CanReject && c.Rejectable() {
			f.M(` <button type="button" class="reject"`)
			f.Attr(` data-reject`, c.Name)
			if c.Approved || c.Discovered {
				f.M(` title="revokes its approval and quarantines it"`)
			}
			f.M(`>Reject</button>`)
		}
		f.M("</td></tr>\n")
	}
	if len(p.Candidates) == 0 {
		f.M(`<tr><td colspan="7" class="empty">Nothing waits for approval.</td></tr>`)
	}
	f.M(`</tbody></table></div>`)
	return f
}

func installsFragment(list []readmodel.Install) *frag {
	f := &frag{}
	f.M(`<div class="table-wrap"><table class="list" id="installs-table">
<thead><tr><th>Server</th><th>Enabled</th><th>Listed by the front door</th><th>State</th><th>Installed</th><th>Updated</th></tr></thead>
<tbody>`)
	for _, in := range list {
		f.M(`<tr`)
		f.Attr(` data-id`, in.Name)
		f.M(`><td>`)
		f.serverLink(in.Name)
		f.M(`</td><td>`)
		f.Val(in.Enabled)
		f.M(`</td><td>`)
		f.Val(in.AllowImplicit)
		f.M(`</td><td>`)
		if in.State != "" {
			f.pill(`state-`, in.State)
		} else {
			f.M(`—`)
		}
		f.M(`</td><td>`)
		f.Text(when(in.CreatedAt))
		f.M(`</td><td>`)
		f.Text(when(in.UpdatedAt))
		f.M("</td></tr>\n")
	}
	if len(list) == 0 {
		f.M(`<tr><td colspan="6" class="empty">No installed servers.</td></tr>`)
	}
	f.M(`</tbody></table></div>`)
	return f
}

func refusalsFragment(list []store.AuditEntry) *frag {
	f := &frag{}
	f.M(`<div class="table-wrap"><table class="list" id="refusals-table">
<thead><tr><th>At</th><th>Identity</th><th>Server</th><th>Action</th><th>Tool / request</th><th>Rule</th><th>Reason</th></tr></thead>
<tbody>`)
	for _, e := range list {
		f.M(`<tr`)
		if e.Rule != "" {
			f.Attr(` data-rule`, e.Rule)
		}
		f.M(`><td>`)
		f.Text(when(e.At))
		f.M(`</td><td>`)
		f.Text(e.Identity)
		f.M(`</td><td>`)
		f.orDash(e.Server)
		f.M(`</td><td>`)
		f.Text(e.Action)
		f.M(`</td><td class="mono">`)
		f.Text(e.Tool)
		f.M(`</td><td class="mono">`)
		f.orDash(e.Rule)
		f.M(`</td><td>`)
		f.Text(e.Reason)
		f.M("</td></tr>\n")
	}
	if len(list) == 0 {
		f.M(`<tr><td colspan="7" class="empty">No refusals.</td></tr>`)
	}
	f.M(`</tbody></table></div>`)
	return f
}

func actionFragment(a actionResult) *frag {
	f := &frag{}
	if a.OK {
		f.M(`<p class="ok"`)
	} else {
		f.M(`<p class="warn"`)
	}
	f.Attr(` data-server`, a.Server)
	f.M(`>`)
	f.Text(a.Server)
	f.M(`: `)
	f.Text(a.Message)
	f.M(`</p>`)
	return f
}
