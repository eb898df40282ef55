package dashboard_test

import (
	"strings"
	"testing"
)

// The policy page lists the gateway's rules, in order, with their effect,
// condition and message, and its default; and the servers with rules of
// their own, and how those combine with the gateway's. A server's page
// shows its own rules under the names refusals give them; the refusals
// page names the rule that decided each refusal.
func TestPolicyViews(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, someServers)
	for _, c := range []struct {
		name, path, token string
		want, not         []string
	}{
		{"the gateway's rules and default", "/ui/api/policy", readerTok, []string{
			`<dt>Default</dt><dd><span class="pill effect-deny">deny</span></dd><dt>Rules</dt><dd>2</dd>`,
			`<tr data-rule="read-only"><td class="num">1</td><td class="mono strong">read-only</td><td><span class="pill effect-allow">allow</span></td><td class="cel"><code>tool.annotations.?readOnlyHint.orValue(false)</code></td><td>—</td></tr>`,
			`<tr data-rule="no-secrets"><td class="num">2</td>`,
		}, []string{"data-withheld"}},
		{"the servers' own", "/ui/api/policy", readerTok, []string{
			`<tr data-id="math"><td><a href="#server/math">math</a></td><td>are added to the gateway's</td><td><span class="muted">the gateway's</span></td><td class="mono">no-drops, oncall</td></tr>`,
			`<tr data-id="mine-a"><td><a href="#server/mine-a">mine-a</a></td><td>narrow the gateway's (installed)</td><td><span class="pill effect-deny">deny</span></td>`,
		}, nil},
		// The gateway's rules name servers, identities and groups: a
		// token limited to some servers sees its servers' own only.
		{"a token limited to some servers", "/ui/api/policy", limitedTok, []string{
			`<p class="hint" data-withheld>Shown to tokens that reach every server; yours reaches mine*.</p>`, `data-id="mine-a"`,
		}, []string{"read-only", "no-secrets", `data-id="math"`}},
		{"a server's own rules, added", "/ui/api/server/math?part=body", readerTok, []string{
			`<section class="sec policy"><h3>Policy</h3>`,
			`Its own rules, added after the gateway's for its calls. The gateway's default applies.`,
			`<tr data-rule="math/no-drops"><td class="num">1</td><td class="mono strong">math/no-drops</td><td><span class="pill effect-deny">deny</span></td>`,
			`<td>drops need a ticket &lt;script&gt;`, `<tr data-rule="math/oncall">`,
		}, []string{"<dt>Default</dt>"}},
		{"a server's own rules, narrowing", "/ui/api/server/mine-a?part=body", limitedTok, []string{
			`Its own policy, from its install: checked after the gateway's policy has allowed a call, so it can only narrow it.`,
			`<dt>Default</dt><dd><span class="pill effect-deny">deny</span></dd>`, `data-rule="mine-a/no-drops"`,
		}, nil},
		{"the rule of a refusal", "/ui/api/refusals", readerTok, []string{
			`<th>Tool / request</th><th>Rule</th><th>Reason</th>`,
			`<tr data-rule="math/no-drops"><td>—</td><td>admin</td><td>math</td><td>tools/call</td><td class="mono">drop_table</td><td class="mono">math/no-drops</td><td>policy_denied: Forbidden by policy rule &#34;math/no-drops&#34;: &lt;script&gt;`,
			`<td class="mono">POST /ui/api/approve/x</td><td class="mono">—</td><td>insufficient_scope</td>`,
		}, nil},
	} {
		resp, body := e.do(t, "GET", c.path, c.token)
		if resp.StatusCode != 200 {
			t.Errorf("%s: %s = %d %s", c.name, c.path, resp.StatusCode, body)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: %s lacks\n%s\nin\n%s", c.name, c.path, w, body)
			}
		}
		for _, w := range c.not {
			if strings.Contains(body, w) {
				t.Errorf("%s: %s holds %s:\n%s", c.name, c.path, w, body)
			}
		}
	}
}
