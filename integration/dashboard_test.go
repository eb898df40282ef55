package integration

// The dashboard in a real browser: Debian's headless Chromium driven by
// chromedp, against an in-process gateway with Docker discovery.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/dashboard"
	"github.com/mcp-hangar/hangar/internal/discovery"
)

const (
	dashAdminTok  = "hgr_dash-admin-0123456789abcdef"
	dashViewerTok = "hgr_dash-viewer-0123456789abcde"
)

// chromium is the browser binary; without it the test fails under
// CI=true (.ci/run installs it) and is skipped elsewhere.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (CI=true: .ci/run installs Debian's chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium)")
	return ""
}

// browser opens a headless tab; on a failure of the test, the tab's
// screenshot is written to a file the log names.
func browser(t *testing.T, exe string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // as root
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1400, 1000),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		if t.Failed() {
			shot(t, ctx)
		}
		cancel()
		cancelAlloc()
	})
	// The first run starts the browser, with the context's lifetime.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

func shot(t *testing.T, ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("no screenshot: %v", err)
		return
	}
	dir, err := os.MkdirTemp("", "hangar-dashboard-")
	if err != nil {
		t.Logf("no screenshot: %v", err)
		return
	}
	path := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Logf("no screenshot: %v", err)
		return
	}
	t.Logf("screenshot of the failed page: %s", path)
}

// within runs steps with a deadline.
func within(ctx context.Context, d time.Duration, steps ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return chromedp.Do(ctx, steps...)
}

// eval is the value of a JavaScript expression in the tab.
func eval(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ectx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// An operator logs in with a link, sees the servers, approves a
// discovered candidate and sees it served without a reload (the page
// follows /events); a read-only token's approval is refused and shown;
// the operator rejects the other candidate and sees it quarantined.
func TestDashboardInBrowser(t *testing.T) {
	exe := chromium(t)
	cli := discClient(t)
	g := startGateway(t, fmt.Sprintf(`
mcp_servers:
  math: {mode: docker, image: mcp-hangar/math:dev}
auth:
  tokens:
    - {name: admin, token_sha256: "%s", scopes: [hangar:read, hangar:call, hangar:admin]}
    - {name: viewer, token_sha256: "%s", scopes: [hangar:read]}
front_door: {prefetch: true}
discovery:
  enabled: true
  auto_register: false
  sources: [{type: docker, mode: additive}]
data_dir: %s
`, auth.HashHex(dashAdminTok), auth.HashHex(dashViewerTok), t.TempDir()))

	approved, refused := discName("dash-ok"), discName("dash-refused")
	for _, name := range []string{approved, refused} {
		id := discContainer(t, cli, name, map[string]string{discovery.LabelEnabled: "true", discovery.LabelName: name},
			false, "--transport", "http", "--port", "8080")
		discStart(t, cli, id)
	}
	discWait(t, 60*time.Second, "both candidates pending", func() bool {
		n := 0
		for _, p := range g.App.Gateway.Discovery.Pending() {
			if (p.Name == approved || p.Name == refused) && p.Status == discovery.StatusPending {
				n++
			}
		}
		return n == 2
	})

	admin := browser(t, exe)
	row := func(table, id string) chromedp.CSS { return chromedp.CSS(fmt.Sprintf(`#%s tr[data-id=%q]`, table, id)) }
	// Without a token this gateway answers 401: then, and only then, the
	// token box.
	if err := within(admin, 60*time.Second,
		chromedp.Navigate(g.URL+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS(`#login #token`)),
	); err != nil {
		t.Fatalf("no token box on a gateway that needs a token: %v", err)
	}
	if why := eval(t, admin, `document.getElementById("login-why").textContent`); !strings.Contains(why, "needs a token") {
		t.Errorf("the token box says %q", why)
	}
	if err := within(admin, 30*time.Second, chromedp.Navigate(g.URL+"/ui/#token=hgr_wrong-0123456789abcdef0123")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, admin, 30*time.Second, "a wrong token said to be refused",
		`document.getElementById("login-why").textContent.startsWith("The token was refused: Invalid or missing authentication token")`)
	if err := within(admin, 60*time.Second,
		chromedp.Navigate(g.URL+"/ui/#token="+dashAdminTok),
		chromedp.WaitVisible(row("servers-table", "math")),
		chromedp.WaitVisible(row("pending-table", approved)),
		chromedp.WaitVisible(chromedp.CSS(`#live.on`)),
	); err != nil {
		t.Fatalf("servers and pending candidates not shown: %v", err)
	}
	loc, stored := eval(t, admin, `location.href`), eval(t, admin, `sessionStorage.getItem("hangar.token") || ""`)
	if strings.Contains(loc, dashAdminTok) || stored != dashAdminTok {
		t.Errorf("address %q, sessionStorage %q: the login link's token must move to sessionStorage", loc, stored)
	}

	// A marker that a reload would wipe; the approval is one click.
	events0 := eval(t, admin, `window.hangarMarker = "same page"; document.getElementById("live").dataset.events || "0"`)
	if err := within(admin, 10*time.Second, chromedp.Click(chromedp.CSS(fmt.Sprintf(`button[data-approve=%q]`, approved)))); err != nil {
		t.Fatal(err)
	}
	if err := within(admin, 90*time.Second,
		chromedp.WaitVisible(row("servers-table", approved)),
		chromedp.WaitNotPresent(row("pending-table", approved)),
	); err != nil {
		t.Fatalf("the approved candidate is not shown as served: %v", err)
	}
	marker := eval(t, admin, `window.hangarMarker || ""`)
	events1 := eval(t, admin, `document.getElementById("live").dataset.events || "0"`)
	if marker != "same page" {
		t.Error("the page was reloaded")
	}
	if events1 == events0 {
		t.Errorf("no event read from /events (%s before, %s after), yet the view changed", events0, events1)
	}
	if _, ok := g.App.Gateway.Catalog.Get(approved); !ok {
		t.Errorf("%s is not in the catalog after its approval", approved)
	}

	// A read-only token sees the list, and its approval is refused.
	viewer := browser(t, exe) // a browser of its own: its own sessionStorage
	if err := within(viewer, 60*time.Second,
		chromedp.Navigate(g.URL+"/ui/#token="+dashViewerTok),
		chromedp.WaitVisible(row("pending-table", refused)),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`button[data-approve=%q]`, refused))),
		chromedp.WaitVisible(chromedp.CSS(`#notice p.refusal`)),
	); err != nil {
		t.Fatalf("the viewer's refusal is not shown: %v", err)
	}
	nctx, cancel := context.WithTimeout(viewer, 10*time.Second)
	defer cancel()
	notice, err := chromedp.Run(nctx, chromedp.Text(chromedp.CSS(`#notice p.refusal`)))
	if err != nil {
		t.Fatalf("read the notice: %v", err)
	}
	if !strings.Contains(notice, "Token missing required scope: hangar:admin") || !strings.Contains(notice, fmt.Sprint(auth.CodeInsufficientScope)) {
		t.Errorf("refusal notice %q", notice)
	}
	stillPending := false
	for _, p := range g.App.Gateway.Discovery.Pending() {
		stillPending = stillPending || p.Name == refused
	}
	if !stillPending {
		t.Fatalf("%s is no longer pending after a refused approval", refused)
	}

	// The admin rejects it: the row moves to the quarantine list, on the
	// same page, when /events tells of the move.
	events2 := eval(t, admin, `document.getElementById("live").dataset.events || "0"`)
	quarantinedRow := chromedp.CSS(fmt.Sprintf(`#pending-table tr[data-id=%q][data-kind="quarantined"]`, refused))
	if err := within(admin, 30*time.Second,
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`button[data-reject=%q]`, refused))),
		chromedp.WaitVisible(quarantinedRow),
	); err != nil {
		t.Fatalf("the rejected candidate is not shown as quarantined: %v", err)
	}
	rctx, rcancel := context.WithTimeout(admin, 10*time.Second)
	defer rcancel()
	rowText, err := chromedp.Run(rctx, chromedp.Text(quarantinedRow))
	if err != nil {
		t.Fatalf("read the quarantined row: %v", err)
	}
	if !strings.Contains(rowText, "rejected by operator admin") {
		t.Errorf("quarantined row %q lacks the rejection's reason", rowText)
	}
	if eval(t, admin, `window.hangarMarker || ""`) != "same page" {
		t.Error("the page was reloaded")
	}
	if eval(t, admin, `document.getElementById("live").dataset.events || "0"`) == events2 {
		t.Error("no event read from /events, yet the view changed")
	}
	var q []string
	for _, e := range g.App.Gateway.Discovery.Quarantined() {
		q = append(q, e.Name+": "+e.Reason)
	}
	if !slices.Contains(q, refused+": rejected by operator admin") {
		t.Errorf("quarantine = %v, want %s rejected by admin", q, refused)
	}

	// The operator changes their mind: the rejected candidate's row
	// offers Approve (and no Reject), and approving it serves it.
	if n := eval(t, admin, fmt.Sprintf(`String(document.querySelectorAll('#pending-table tr[data-id=%q] button[data-reject]').length)`, refused)); n != "0" {
		t.Errorf("the rejected candidate still offers Reject (%s buttons)", n)
	}
	if err := within(admin, 90*time.Second,
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#pending-table tr[data-id=%q] button[data-approve=%q]`, refused, refused))),
		chromedp.WaitVisible(row("servers-table", refused)),
		chromedp.WaitNotPresent(row("pending-table", refused)),
	); err != nil {
		t.Fatalf("the rejected candidate, approved, is not shown as served: %v", err)
	}

	// An approved server can be rejected from its page: its approval is
	// revoked, it is no longer served, and it waits in quarantine.
	if err := within(admin, 90*time.Second,
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = "#server/%s"`, approved)),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`.details[data-id=%q] button[data-reject=%q]`, approved, approved))),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#notice p.ok[data-server=%q]`, approved))),
		chromedp.Evaluate[chromedp.Void](`location.hash = "#servers"`),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#pending-table tr[data-id=%q][data-kind="quarantined"]`, approved))),
		chromedp.WaitNotPresent(row("servers-table", approved)),
	); err != nil {
		t.Fatalf("the approved server, rejected, is not shown quarantined: %v", err)
	}
	if eval(t, admin, `window.hangarMarker || ""`) != "same page" {
		t.Error("the page was reloaded")
	}
	if _, ok := g.App.Gateway.Catalog.Get(approved); ok {
		t.Errorf("%s is still in the catalog after its rejection", approved)
	}
	// The rejection is in the audit trail under the admin's name (written
	// by the audit writer's queue, a moment later).
	var actions []string
	discWait(t, 10*time.Second, "the rejection audited", func() bool {
		audit, err := g.App.Store.RecentAudit(context.Background(), approved, 20)
		if err != nil {
			t.Fatal(err)
		}
		actions = actions[:0]
		for _, e := range audit {
			if e.Identity == "admin" {
				actions = append(actions, e.Action+"/"+e.Outcome)
			}
		}
		return slices.Contains(actions, dashboard.ActionReject+"/ok")
	})
}
