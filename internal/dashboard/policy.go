package dashboard

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/markup"
	"github.com/mcp-hangar/hangar/internal/policy"
	"github.com/mcp-hangar/hangar/internal/readmodel"
)

// The policy over calls (internal/policy, docs/policy.md) as the
// dashboard shows it: the gateway's rules and default on the policy page,
// beside the servers that have rules of their own; those on each server's
// page (its "policy" section); and on the refusals page the rule that
// decided each refusal (the audit's Rule).

// policyPage is the policy page's data.
type policyPage struct {
	// Gateway is the gateway's policy; nil when it is not shown (no
	// source, or a caller limited to some servers: see policy).
	Gateway *readmodel.Rules
	// Withheld: the gateway's rules exist but the caller's token is
	// limited to Servers.
	Withheld bool
	Servers  []string
	Own      []readmodel.ServerRules
}

// policy serves the policy page. The gateway's rules are conditions over
// every server, identity and group: they are shown to a caller whose
// token reaches every server, as the refusals of every server are; a
// caller limited to some servers sees their servers' own rules only.
func (d *Dashboard) policy(w http.ResponseWriter, r *http.Request) {
	id := auth.Caller(r.Context())
	p := policyPage{Own: d.views.OwnRules(keep(r.Context()))}
	if g := d.views.GatewayRules(); g != nil {
		if len(id.Servers) == 0 {
			p.Gateway = g
		} else {
			p.Withheld, p.Servers = true, id.Servers
		}
	}
	d.render(w, policyFragment(p))
}

func policyFragment(p policyPage) *frag {
	f := &frag{}
	f.M(`<p class="hint">Every call that reaches a provider (a tool by its name, the calls inside hangar_call, resources/read and resources/subscribe, prompts/get, completion/complete) is decided by these rules: a deny rule that matches refuses it, else an allow rule that matches lets it through, else the default decides. The gateway's own hangar_* tools are decided by their scopes.</p>
<section class="sec gateway-policy"><h3>The gateway's rules</h3>
`)
	switch {
	case p.Gateway != nil:
		f.M(`<dl class="facts"><dt>Default</dt><dd>`)
		f.effect(defaultOf(p.Gateway.Default))
		f.M(`</dd><dt>Rules</dt><dd>`)
		f.Val(len(p.Gateway.Rules))
		f.M(`</dd></dl>
`)
		f.rules("policy-rules", "", p.Gateway.Rules)
	case p.Withheld:
		f.M(`<p class="hint" data-withheld>Shown to tokens that reach every server; yours reaches `)
		f.Text(strings.Join(p.Servers, ", "))
		f.M(`.</p>`)
	default:
		f.M(`<p class="empty">Not known here.</p>`)
	}
	f.M(`
</section>
<section class="sec server-policies"><h3>Servers with rules of their own</h3>
<div class="table-wrap"><table class="list" id="server-policies"><thead><tr><th>Server</th><th>Its rules</th><th>Default</th><th>Rules</th></tr></thead><tbody>
`)
	for _, s := range p.Own {
		f.M(`<tr`)
		f.Attr(` data-id`, s.Server)
		f.M(`><td>`)
		f.serverLink(s.Server)
		f.M(`</td><td>`)
		if s.Policy.Narrows {
			f.M(`narrow the gateway's (installed)`)
		} else {
			f.M(`are added to the gateway's`)
		}
		f.M(`</td><td>`)
		if s.Policy.Default != "" {
			f.effect(s.Policy.Default)
		} else {
			f.M(`<span class="muted">the gateway's</span>`)
		}
		f.M(`</td><td class="mono">`)
		for i, r := range s.Policy.Rules {
			if i > 0 {
				f.M(`, `)
			}
			f.Text(r.Name)
		}
		f.M("</td></tr>\n")
	}
	if len(p.Own) == 0 {
		f.M(`<tr><td colspan="4" class="empty">None of your servers has rules of its own.</td></tr>`)
	}
	f.M(`</tbody></table></div></section>`)
	return f
}

// defaultOf is a policy's default as it acts: allow when unset.
func defaultOf(d string) string {
	if d == "" {
		return policy.Allow
	}
	return d
}

// effect writes a rule's effect or a default: allow or deny.
func (f *frag) effect(e string) {
	f.pill(`effect-`, e)
}

// rules writes a table of rules (table id tableID), each named as the
// audit names it: prefix+name ("<server>/" for a server's own).
func (f *frag) rules(tableID markup.HTML, prefix string, list []policy.Rule) {
	f.M(`<div class="table-wrap"><table class="list rules" id="`)
	f.M(tableID)
	f.M(`"><thead><tr><th class="num">#</th><th>Rule</th><th>Effect</th><th>When</th><th>Message</th></tr></thead><tbody>
`)
	for i, r := range list {
		f.M(`<tr`)
		f.Attr(` data-rule`, prefix+r.Name)
		f.M(`><td class="num">`)
		f.Text(strconv.Itoa(i + 1))
		f.M(`</td><td class="mono strong">`)
		f.Text(prefix + r.Name)
		f.M(`</td><td>`)
		f.effect(r.Effect)
		f.M(`</td><td class="cel"><code>`)
		f.Text(r.When)
		f.M(`</code></td><td>`)
		f.orDash(r.Message)
		f.M("</td></tr>\n")
	}
	if len(list) == 0 {
		f.M(`<tr><td colspan="5" class="empty">No rules: the default decides every call.</td></tr>`)
	}
	f.M(`</tbody></table></div>`)
}

// policySection is a server's own policy on its page.
func (f *frag) policySection(p *serverPage) {
	r := p.Rules
	f.M(`<section class="sec policy"><h3>Policy</h3>
<p class="hint">`)
	if r.Narrows {
		f.M(`Its own policy, from its install: checked after the gateway's policy has allowed a call, so it can only narrow it. Its default decides within its own rules.`)
	} else {
		f.M(`Its own rules, added after the gateway's for its calls. `)
		if r.Default != "" {
			f.M(`Its default replaces the gateway's.`)
		} else {
			f.M(`The gateway's default applies.`)
		}
	}
	f.M(` Refusals and the audit name its rules as below.</p>
`)
	if r.Default != "" {
		f.M(`<dl class="facts"><dt>Default</dt><dd>`)
		f.effect(r.Default)
		f.M("</dd></dl>\n")
	}
	f.rules("server-rules", p.ID+"/", r.Rules)
	f.M(`
</section>`)
}
