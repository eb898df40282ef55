package dashboard

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/readmodel"
)

// A server's page: its sections, each written from the server's
// readmodel.Details (serverPage).

// serverPage is the server page's data.
type serverPage struct {
	*readmodel.Details
	Tools        []toolRow
	ResourceRows []resourceRow
	TemplateRows []resourceRow
	PromptRows   []promptRow
	CanApprove   bool
	CanReject    bool
	CanCall      bool // the caller holds hangar:call
	Part         string
	// Upstream is the caller's upstream credential; nil for a server
	// without upstream_auth.
	Upstream *upstreamView
}

type toolRow struct {
	Name, Callable, Title, Description string
	// Params names the tool's properties, for the table.
	Params string
}

type resourceRow struct {
	URI, Name, MIMEType, Description string
}

type promptRow struct {
	Name, Callable, Description, Args string
}

func (d *Dashboard) server(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !keep(r.Context())(id) {
		// Out of the caller's servers: as if it did not exist.
		d.render(w, unknownFragment(id))
		return
	}
	det := d.views.Details(r.Context(), id, History)
	if !det.Served() {
		d.render(w, unknownFragment(id))
		return
	}
	part := r.URL.Query().Get("part")
	if part != "body" {
		part = "head"
	}
	p := newServerPage(det, part)
	p.CanApprove, p.CanReject = d.tools != nil && det.Approvable(), d.canReject() && det.Rejectable()
	caller := auth.Caller(r.Context())
	p.CanCall = caller.Has(auth.ScopeCall)
	if part == "head" {
		if st := d.views.UpstreamAuth(r.Context(), id, caller); st != nil {
			p.Upstream = &upstreamView{Status: st, Caller: caller.Name, Anonymous: caller.Kind == auth.KindAnonymous, CanDisconnect: d.canDisconnect()}
		}
	}
	d.render(w, serverFragment(p))
}

// newServerPage is the part (head or body) of det's page, with its
// rows; the caller's actions are set by the handler.
func newServerPage(det *readmodel.Details, part string) *serverPage {
	p := &serverPage{Details: det, Part: part}
	callable := map[string]string{}
	for _, b := range det.Bindings {
		callable[b.RawToolName] = b.CallableName
	}
	for k, v := range det.ToolNames {
		callable[k] = v
	}
	for _, t := range det.CatalogTools() {
		fields, _ := schemaFields(t.InputSchema)
		var params []string
		for _, f := range fields {
			n := f.Name
			if f.Required {
				n += "*"
			}
			params = append(params, n)
		}
		p.Tools = append(p.Tools, toolRow{Name: t.Name, Callable: callable[t.Name], Title: t.Title, Description: t.Description, Params: strings.Join(params, ", ")})
	}
	for _, raw := range det.Resources {
		var x resourceRow
		if json.Unmarshal(raw, &x) == nil && x.URI != "" {
			p.ResourceRows = append(p.ResourceRows, x)
		}
	}
	for _, raw := range det.ResourceTemplates {
		var x struct {
			resourceRow
			URITemplate string `json:"uriTemplate"`
		}
		if json.Unmarshal(raw, &x) == nil && x.URITemplate != "" {
			x.URI = x.URITemplate
			p.TemplateRows = append(p.TemplateRows, x.resourceRow)
		}
	}
	for _, raw := range det.Prompts {
		var x struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			Arguments   []struct {
				Name     string `json:"name"`
				Required bool   `json:"required"`
			} `json:"arguments"`
		}
		if json.Unmarshal(raw, &x) != nil || x.Name == "" {
			continue
		}
		var args []string
		for _, a := range x.Arguments {
			n := a.Name
			if a.Required {
				n += "*"
			}
			args = append(args, n)
		}
		p.PromptRows = append(p.PromptRows, promptRow{Name: x.Name, Callable: det.PromptNames[x.Name], Description: x.Description, Args: strings.Join(args, ", ")})
	}
	return p
}

// Sections of a server's page, in order, in the page's two parts (head
// above its traffic, body below). Show says whether the server has the
// section, write writes it. Adding one is a row here and a writer, fed
// from what readmodel.Details holds.
type section struct {
	Name, Part string
	Show       func(*serverPage) bool
	write      func(*frag, *serverPage)
}

var serverSections = []section{
	{"summary", "head", func(*serverPage) bool { return true }, (*frag).summarySection},
	{"group", "head", func(p *serverPage) bool { return p.Group != nil }, (*frag).groupSection},
	{"upstream", "head", func(p *serverPage) bool { return p.Upstream != nil }, (*frag).upstreamSection},
	{"tools", "body", func(p *serverPage) bool { return p.Group == nil }, (*frag).toolsSection},
	{"resources", "body", func(p *serverPage) bool { return len(p.Resources)+len(p.ResourceTemplates) > 0 }, (*frag).resourcesSection},
	{"prompts", "body", func(p *serverPage) bool { return len(p.Prompts) > 0 }, (*frag).promptsSection},
	{"policy", "body", func(p *serverPage) bool { return p.Rules != nil }, (*frag).policySection},
	{"bindings", "body", func(p *serverPage) bool { return len(p.Bindings) > 0 }, (*frag).bindingsSection},
	{"egress", "body", func(p *serverPage) bool { return p.Egress != nil }, (*frag).egressSection},
	{"claims", "body", func(p *serverPage) bool { return len(p.ShadowedClaim) > 0 }, (*frag).claimsSection},
}

// serverFragment is one part of a server's page: its sections of
// p.Part.
func serverFragment(p *serverPage) *frag {
	f := &frag{}
	f.M(`<div class="details part-`)
	f.Text(p.Part)
	f.M(`"`)
	f.Attr(` data-id`, p.ID)
	f.M(`>`)
	for _, s := range serverSections {
		if s.Part == p.Part && s.Show(p) {
			s.write(f, p)
		}
	}
	f.M(`</div>`)
	return f
}

func (f *frag) summarySection(p *serverPage) {
	f.M(`<section class="sec summary">
<div class="title-row"><h2>`)
	f.Text(p.ID)
	f.M(`</h2>`)
	if p.Group != nil {
		f.M(`<span class="tag">group</span>`)
	}
	f.M("\n")
	if p.Group != nil {
		f.pill(`health-`, string(p.Group.State))
	} else {
		f.M(`<span class="pill state-`)
		f.Val(p.Snapshot.State)
		f.M(`" title="state">`)
		f.Val(p.Snapshot.State)
		f.M(`</span>`)
		if h := p.Health(); h != "" {
			f.M(`<span class="pill health-`)
			f.Text(h)
			f.M(`" title="health">`)
			f.Text(h)
			f.M(`</span>`)
		}
	}
	f.M("\n")
	if p.CanApprove || p.CanReject {
		f.M(`<span class="actions">`)
		if p.CanApprove {
			f.M(`<button type="button" class="approve"`)
			f.Attr(` data-approve`, p.ID)
			f.M(` title="accepts its changed tools or image">Approve</button>`)
		}
		if p.CanReject {
			f.M(` <button type="button" class="reject"`)
			f.Attr(` data-reject`, p.ID)
			f.M(` title="revokes its approval and quarantines it">Reject</button>`)
		}
		f.M(`</span>`)
	}
	f.M("</div>\n")
	if p.Group == nil {
		sn := p.Snapshot
		f.M(`<dl class="facts">
<dt>Source</dt><dd>`)
		f.Text(p.Source)
		f.M(`</dd>
<dt>Mode</dt><dd>`)
		f.Text(sn.Mode)
		f.M("</dd>\n")
		if p.Spec != nil && p.Spec.Image != "" {
			f.M(`<dt>Image</dt><dd class="mono">`)
			f.Text(p.Spec.Image)
			if p.Image.Digest != "" {
				f.M(` <span class="muted"`)
				f.Attr(` title`, p.Image.Digest)
				f.M(`>@ `)
				f.Text(short(p.Image.Digest))
				f.M(`</span>`)
			}
			f.M(`</dd>`)
		}
		f.M(`
<dt>Started</dt><dd>`)
		f.Text(when(sn.StartedAt))
		f.M(`</dd>
<dt>Health record</dt><dd>calls `)
		f.Val(sn.Health.TotalInvocations)
		f.M(`, failed `)
		f.Val(sn.Health.TotalFailures)
		f.M(`, consecutive failures `)
		f.Val(sn.Health.ConsecutiveFailures)
		f.M(`; last check `)
		f.Text(when(sn.Health.LastCheck))
		f.M(`</dd>
<dt>Tool policy</dt><dd>`)
		f.Text(p.Policy.Type)
		f.M(`, `)
		f.Val(p.Policy.FilteredCount)
		f.M(" filtered</dd>\n")
		if sn.LastError != "" {
			f.M(`<dt>Last error</dt><dd class="err">`)
			f.Text(sn.LastError)
			f.M(`</dd>`)
		}
		f.M(`
</dl>
`)
		if q := p.Quarantine; q != nil {
			f.M(`<div class="notice warn"><b>Quarantined:</b> `)
			f.Text(q.Reason)
			f.M(`<pre>`)
			f.Text(q.Detail)
			f.M(`</pre></div>`)
		}
	}
	f.M(`
</section>`)
}

func (f *frag) groupSection(p *serverPage) {
	f.M(`<section class="sec group"`)
	f.Attr(` data-id`, p.ID)
	f.M(">\n")
	f.groupFacts(*p.Group)
	f.M(`
<h3>Members</h3>`)
	f.members(p.Group.Members)
	f.M(`
</section>`)
}

func (f *frag) toolsSection(p *serverPage) {
	f.M(`<section class="sec tools"><h3>Tools</h3>
`)
	if !p.CanCall {
		f.M(`<p class="hint">Your token lacks hangar:call: the gateway will refuse what you try here.</p>`)
	}
	f.M(`
<div class="table-wrap"><table class="list stack" id="tools-table"><thead><tr><th>Tool</th><th>Arguments</th><th>Description</th><th></th></tr></thead><tbody>
`)
	for _, t := range p.Tools {
		f.M(`<tr`)
		f.Attr(` data-tool`, t.Name)
		f.M(`><td class="name"><span class="mono strong">`)
		f.Text(t.Name)
		f.M(`</span><div class="sub mono">`)
		if t.Callable != "" {
			f.Text(t.Callable)
		} else {
			f.M(`<span title="not listed by the front door: called through hangar_call">through hangar_call</span>`)
		}
		f.M(`</div></td><td class="mono args">`)
		f.Text(t.Params)
		f.M(`</td><td class="desc">`)
		f.Text(t.Description)
		f.M(`</td>
<td><button type="button" class="small" data-try`)
		f.Attr(` data-server`, p.ID)
		f.Attr(` data-tool`, t.Name)
		f.Attr(` aria-label`, "Try "+t.Name)
		f.M(">Try</button></td></tr>\n")
	}
	if len(p.Tools) == 0 {
		f.M(`<tr><td colspan="4" class="empty">No tools known.</td></tr>`)
	}
	f.M(`</tbody></table></div>
</section>`)
}

func (f *frag) resourcesSection(p *serverPage) {
	f.M(`<section class="sec resources"><h3>Resources</h3>
<div class="table-wrap"><table class="list stack" id="resources-table"><thead><tr><th>URI</th><th>Name</th><th>Type</th><th></th></tr></thead><tbody>
`)
	row := func(r resourceRow, template bool) {
		f.M(`<tr><td class="mono">`)
		f.Text(r.URI)
		f.M(`</td><td>`)
		f.Text(r.Name)
		if template {
			f.M(` <span class="tag">template</span>`)
		}
		if r.Description != "" {
			f.M(`<div class="sub">`)
			f.Text(r.Description)
			f.M(`</div>`)
		}
		f.M(`</td><td class="mono">`)
		f.Text(r.MIMEType)
		f.M(`</td>
<td><button type="button" class="small" data-try`)
		f.Attr(` data-server`, p.ID)
		if template {
			f.Attr(` data-template`, r.URI)
			f.Attr(` aria-label`, "Read "+r.URI)
			f.M(`>Read…</button></td></tr>`)
		} else {
			f.Attr(` data-resource`, r.URI)
			f.M(` data-autorun`)
			f.Attr(` aria-label`, "Read "+r.URI)
			f.M(`>Read</button></td></tr>`)
		}
	}
	for _, r := range p.ResourceRows {
		row(r, false)
	}
	f.M("\n")
	for _, r := range p.TemplateRows {
		row(r, true)
	}
	f.M(`
</tbody></table></div></section>`)
}

func (f *frag) promptsSection(p *serverPage) {
	f.M(`<section class="sec prompts"><h3>Prompts</h3>
<div class="table-wrap"><table class="list stack" id="prompts-table"><thead><tr><th>Prompt</th><th>Arguments</th><th>Description</th><th></th></tr></thead><tbody>
`)
	for _, r := range p.PromptRows {
		f.M(`<tr><td class="name"><span class="mono strong">`)
		f.Text(r.Name)
		f.M(`</span>`)
		if r.Callable != "" {
			f.M(`<div class="sub mono">`)
			f.Text(r.Callable)
			f.M(`</div>`)
		}
		f.M(`</td><td class="mono args">`)
		f.Text(r.Args)
		f.M(`</td><td class="desc">`)
		f.Text(r.Description)
		f.M(`</td>
<td>`)
		if r.Callable != "" {
			f.M(`<button type="button" class="small" data-try`)
			f.Attr(` data-server`, p.ID)
			f.Attr(` data-prompt`, r.Name)
			f.Attr(` aria-label`, "Get "+r.Name)
			f.M(`>Get</button>`)
		}
		f.M(`</td></tr>`)
	}
	f.M(`
</tbody></table></div></section>`)
}

func (f *frag) bindingsSection(p *serverPage) {
	f.M(`<section class="sec bindings"><details><summary><h3>Recent bindings</h3></summary>
<div class="table-wrap"><table class="list"><thead><tr><th>Callable name</th><th>Tool</th><th>Catalog version</th><th>Bound</th></tr></thead><tbody>
`)
	for _, b := range p.Bindings {
		f.M(`<tr><td class="mono">`)
		f.Text(b.CallableName)
		f.M(`</td><td class="mono">`)
		f.Text(b.RawToolName)
		f.M(`</td><td class="mono">`)
		f.Text(short(b.CatalogVersion))
		f.M(`</td><td>`)
		f.Text(when(b.BoundAt))
		f.M(`</td></tr>`)
	}
	f.M(`</tbody></table></div>
</details></section>`)
}

func (f *frag) egressSection(p *serverPage) {
	f.M(`<section class="sec egress"><h3>Egress</h3><pre class="egress">`)
	f.Text(indented(p.Egress))
	f.M(`</pre></section>`)
}

func (f *frag) claimsSection(p *serverPage) {
	f.M(`<section class="sec claims"><h3>Claims not served</h3><ul>`)
	for _, c := range p.ShadowedClaim {
		f.M(`<li>`)
		f.Text(c.Source)
		f.M(`: `)
		f.Text(c.Reason)
		f.M(`</li>`)
	}
	f.M(`</ul></section>`)
}
