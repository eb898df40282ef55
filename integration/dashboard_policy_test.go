package integration

// The dashboard's views of the policy over calls (issue 34) and of the
// callers' upstream logins (issue 33), in Chromium against an in-process
// gateway whose servers are in-process too (no container): the policy
// page, a server's own rules, the refusals naming the rule that decided,
// and a caller who is connected to an OAuth upstream (authtest's) seeing
// it on the server's page and disconnecting. Screenshots are kept as test
// artefacts (go test -artifacts -outputdir DIR).

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/dashboard"
	"github.com/mcp-hangar/hangar/internal/upstreamauth/authtest"
)

const policyAdminTok = "hgr_policy-admin-0123456789abcd"

func TestDashboardPolicyAndLoginInBrowser(t *testing.T) {
	exe := chromium(t)
	as := authtest.New(authtest.Options{DCR: true})
	t.Cleanup(as.Close)
	show := showServer(t)
	g := startGateway(t, fmt.Sprintf(`
mcp_servers:
  show:
    mode: remote
    endpoint: "%s"
    policy:
      rules:
        - {name: no-stripes, effect: deny, when: 'tool.name == "render" && args.?shape.orValue("") == "stripe"', message: no stripes on this server}
  gh:
    mode: remote
    endpoint: "%s"
    upstream_auth: {type: oauth, authorization_server: "%s", resource: "%s"}
auth:
  rate_limit: {rps: 1000, burst: 1000} # the page and the test's client share the admin's token
  tokens:
    - {name: admin, token_sha256: "%s", scopes: [hangar:read, hangar:call, hangar:admin]}
policy:
  rules:
    - {name: short-captions, effect: deny, when: 'tool.name == "render" && size(args.?caption.orValue("")) > 20', message: captions up to 20 characters}
    - {name: everyone, effect: allow, when: 'true'}
`, show, as.Endpoint(), as.Issuer(), as.Resource(), auth.HashHex(policyAdminTok)))

	// The admin's MCP client: a login to gh's upstream (asked for by a
	// URL elicitation, done by authtest's browser), and two calls the
	// policy refuses, one by the gateway's rule, one by show's own.
	var asked atomic.Int32
	tr, err := transport.NewStreamableHTTP(g.MCPURL, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + policyAdminTok}))
	if err != nil {
		t.Fatal(err)
	}
	s := startSession(t, mcpclient.NewClient(tr,
		mcpclient.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &struct{}{}}}),
		mcpclient.WithElicitationHandler(loginHandler(func(ctx context.Context, link string) error {
			asked.Add(1)
			status, page, err := authtest.NewBrowser().Login(ctx, link, "ann-upstream")
			if err != nil || status != http.StatusOK {
				return fmt.Errorf("login: %d %v %s", status, err, page)
			}
			return nil
		}))))
	if got := textOfResult(s.callOne(t, "gh", "whoami", nil)); got != "user=ann-upstream" || asked.Load() != 1 {
		t.Fatalf("whoami = %q after %d logins, want ann-upstream's after one", got, asked.Load())
	}
	for _, c := range []struct{ args map[string]any }{
		{map[string]any{"caption": "a caption far longer than twenty characters", "shape": "square"}},
		{map[string]any{"caption": "short", "shape": "stripe"}},
	} {
		r, err := firstResult(s.mustCall(t, "hangar_call", one("show", "render", c.args)))
		if err != nil || r["success"] != false || r["error_type"] != "forbidden" {
			t.Fatalf("render %v: %v %v, want refused", c.args, r, err)
		}
	}

	shots := newArtefacts(t)
	admin := browser(t, exe)
	scriptErrors(t, admin)
	if err := within(admin, 60*time.Second,
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(g.URL+"/ui/#token="+policyAdminTok),
		chromedp.WaitVisible(chromedp.CSS(`#servers-table tr[data-id="gh"]`)),
		chromedp.Click(chromedp.CSS(`#nav a[data-view="policy"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#policy-rules tr[data-rule="short-captions"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#server-policies tr[data-id="show"]`)),
	); err != nil {
		t.Fatalf("the policy page: %v", err)
	}
	if got := eval(t, admin, `Array.from(document.querySelectorAll("#policy-rules tbody tr")).map(r => r.dataset.rule + ":" + r.querySelector(".pill").textContent).join(" ")`); got != "short-captions:deny everyone:allow" {
		t.Errorf("the gateway's rules, in order: %q", got)
	}
	if got := text(t, admin, `#policy-rules tr[data-rule="short-captions"]`); !strings.Contains(got, `size(args.?caption.orValue("")) > 20`) || !strings.Contains(got, "captions up to 20 characters") {
		t.Errorf("the rule's row %q lacks its condition or message", got)
	}
	if got := text(t, admin, `.gateway-policy dl.facts`); !strings.Contains(got, "allow") {
		t.Errorf("the default: %q", got)
	}
	shots.shot(admin, "policy", true)

	// The refusals, each with the rule that decided.
	if err := within(admin, 30*time.Second,
		chromedp.Click(chromedp.CSS(`#nav a[data-view="refusals"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#refusals-table tr[data-rule="short-captions"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#refusals-table tr[data-rule="show/no-stripes"]`)),
	); err != nil {
		t.Fatalf("the refusals with their rules: %v", err)
	}
	if got := text(t, admin, `#refusals-table tr[data-rule="show/no-stripes"]`); !strings.Contains(got, "admin") || !strings.Contains(got, "no stripes on this server") {
		t.Errorf("the refusal's row %q", got)
	}
	shots.shot(admin, "refusals-rules", false)

	// show's page: its own rules, under the names the refusals give them.
	if err := within(admin, 30*time.Second,
		chromedp.Evaluate[chromedp.Void](`location.hash = "#server/show"`),
		chromedp.WaitVisible(chromedp.CSS(`.details section.policy #server-rules tr[data-rule="show/no-stripes"]`)),
	); err != nil {
		t.Fatalf("show's own rules: %v", err)
	}
	if got := text(t, admin, `.details section.policy .hint`); !strings.Contains(got, "added after the gateway's") {
		t.Errorf("how show's rules combine: %q", got)
	}
	shots.shot(admin, "server-show-policy", true)

	// gh's page: the admin is connected, since and until when; Disconnect
	// drops their login, on the same page.
	connected := `.details section.upstream[data-type="oauth"][data-connected="true"]`
	if err := within(admin, 30*time.Second,
		chromedp.Evaluate[chromedp.Void](`location.hash = "#server/gh"`),
		chromedp.WaitVisible(chromedp.CSS(connected+` button[data-disconnect="gh"]`)),
	); err != nil {
		t.Fatalf("gh's page does not show the admin connected: %v", err)
	}
	for _, sel := range []string{connected + " dd.since", connected + " dd.expires"} {
		if v := text(t, admin, sel); !strings.HasPrefix(v, time.Now().UTC().Format("2006-01-")) {
			t.Errorf("%s = %q, want a time of this month", sel, v)
		}
	}
	shots.shot(admin, "server-gh-connected", false)
	eval(t, admin, `window.hangarMarker = "same page"; ""`)
	if err := within(admin, 30*time.Second,
		chromedp.Click(chromedp.CSS(`button[data-disconnect="gh"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#notice p.ok[data-server="gh"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.details section.upstream[data-connected="false"]`)),
	); err != nil {
		t.Fatalf("the disconnect is not shown: %v", err)
	}
	if n := text(t, admin, `#notice p.ok`); n != "gh: disconnected: your next call there asks you to log in again" {
		t.Errorf("notice %q", n)
	}
	if eval(t, admin, `window.hangarMarker || ""`) != "same page" {
		t.Error("the page was reloaded")
	}
	shots.shot(admin, "server-gh-disconnected", false)

	// The disconnect is audited by the credential manager, and the
	// admin's next call asks them to log in again.
	discWait(t, 10*time.Second, "the disconnect audited", func() bool {
		es, err := g.App.Store.RecentAudit(context.Background(), "gh", 20)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.Identity == "admin" && e.Action == dashboard.ActionDisconnect && e.Outcome == "ok" {
				return true
			}
		}
		return false
	})
	if got := textOfResult(s.callOne(t, "gh", "whoami", nil)); got != "user=ann-upstream" || asked.Load() != 2 {
		t.Errorf("after the disconnect whoami = %q after %d logins, want a second login", got, asked.Load())
	}
}
