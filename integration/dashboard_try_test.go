package integration

// The dashboard as people use it, in Chromium against the real gateway:
// the page a caller without a token gets, Try on tools (a form built from
// the schema, raw JSON, a result, an error, progress as it comes),
// resources and prompts, the traffic charts filling, a server's live log
// with its filter, the header's search, and a reader refused an
// admin-only tool. A screenshot of each page is kept as a test artefact
// (go test -artifacts -outputdir DIR keeps them; t.ArtifactDir).

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/app"
	"github.com/mcp-hangar/hangar/internal/auth"
)

const (
	tryAdminTok  = "hgr_try-admin-0123456789abcdef0"
	tryReaderTok = "hgr_try-reader-0123456789abcdef"
)

// renderSchema has a property of each kind the Try form shows: a required
// string, an enum, a bounded integer, a boolean, a nested object and an
// array (the last two as JSON).
const renderSchema = `{"type":"object","properties":{
 "caption":{"type":"string","description":"Text under the picture"},
 "shape":{"type":"string","enum":["square","circle","stripe"],"default":"square"},
 "size":{"type":"integer","minimum":1,"maximum":32,"default":8},
 "outline":{"type":"boolean"},
 "style":{"type":"object","properties":{"color":{"type":"string"},"width":{"type":"number"}}},
 "tags":{"type":"array","items":{"type":"string"}}},
 "required":["caption","shape"]}`

// showServer is an MCP server (streamable HTTP, in the test) whose tool
// answers one content item of each kind, beside a resource, a resource
// template and a prompt.
func showServer(t *testing.T) string {
	t.Helper()
	s := server.NewMCPServer("show", "1", server.WithResourceCapabilities(false, false), server.WithPromptCapabilities(false))
	s.AddTool(mcp.NewToolWithRawSchema("render", "Draw a shape and answer it with a link and its arguments", json.RawMessage(renderSchema)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args := req.GetArguments()
			size := int(req.GetFloat("size", 8))
			img := image.NewRGBA(image.Rect(0, 0, size, size))
			for y := range size {
				for x := range size {
					img.Set(x, y, color.RGBA{R: 47, G: 111, B: 237, A: 255})
				}
			}
			var b bytes.Buffer
			if err := png.Encode(&b, img); err != nil {
				return nil, err
			}
			res := &mcp.CallToolResult{Content: []mcp.Content{
				mcp.NewTextContent("drew a " + req.GetString("shape", "") + ": " + req.GetString("caption", "")),
				mcp.NewImageContent(base64.StdEncoding.EncodeToString(b.Bytes()), "image/png"),
				mcp.NewResourceLink("show://items/42", "item 42", "the item drawn", "text/plain"),
			}, StructuredContent: args}
			return res, nil
		})
	s.AddResource(mcp.NewResource("show://readme", "readme", mcp.WithMIMEType("text/plain")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: "show://readme", MIMEType: "text/plain", Text: "Hello from the show server"}}, nil
		})
	s.AddResourceTemplate(mcp.NewResourceTemplate("show://items/{id}", "item"),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "the item at " + req.Params.URI}}, nil
		})
	s.AddPrompt(mcp.NewPrompt("greet", mcp.WithPromptDescription("Greet someone"), mcp.WithArgument("name", mcp.RequiredArgument())),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("a greeting", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Say hello to "+req.Params.Arguments["name"])),
			}), nil
		})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// artefacts keeps screenshots of the pages: ArtifactDir (kept with
// -artifacts), logged.
type artefacts struct {
	t   *testing.T
	dir string
}

func newArtefacts(t *testing.T) *artefacts {
	dir := t.ArtifactDir()
	t.Logf("screenshots in %s", dir)
	return &artefacts{t: t, dir: dir}
}

// shot saves the viewport (full: the whole page) as name.png.
func (a *artefacts) shot(ctx context.Context, name string, full bool) {
	a.t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var png []byte
	var err error
	if full {
		// The whole page in a viewport as tall as it, for the sticky
		// header to stay on top.
		var size []int
		size, err = chromedp.Run(sctx, chromedp.Evaluate[[]int](`[window.innerWidth, window.innerHeight, document.documentElement.scrollHeight]`))
		if err == nil {
			err = chromedp.Do(sctx, chromedp.EmulateViewport(int64(size[0]), int64(size[2]), chromedp.EmulateScale(scale(sctx))))
		}
		if err == nil {
			png, err = chromedp.Run(sctx, chromedp.CaptureScreenshot())
			if rerr := chromedp.Do(sctx, chromedp.EmulateViewport(int64(size[0]), int64(size[1]), chromedp.EmulateScale(scale(sctx)))); err == nil {
				err = rerr
			}
		}
	} else {
		png, err = chromedp.Run(sctx, chromedp.CaptureScreenshot())
	}
	if err != nil {
		a.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(a.dir, name+".png"), png, 0o644); err != nil {
		a.t.Errorf("screenshot %s: %v", name, err)
	}
}

// scale is the page's device pixel ratio.
func scale(ctx context.Context) float64 {
	r, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`window.devicePixelRatio`))
	if err != nil || r <= 0 {
		return 1
	}
	return r
}

// text is the text of the first node sel matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// waitJS waits until the JavaScript expression is true.
func waitJS(t *testing.T, ctx context.Context, d time.Duration, what, expr string) {
	t.Helper()
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if _, err := chromedp.Run(pctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		t.Fatalf("%s (waited %v for %s): %v", what, d, expr, err)
	}
}

func TestDashboardTryInBrowser(t *testing.T) {
	exe := chromium(t)
	show := showServer(t)
	path := writeConfig(t, fmt.Sprintf(`
mcp_servers:
  kit: {mode: docker, image: mcp-hangar/testkit:dev}
  show: {mode: remote, endpoint: "%s"}
  quiet: {mode: remote, endpoint: "%s", expose: false}
  pool:
    mode: group
    strategy: round_robin
    members:
      - {id: pool-a, mode: remote, endpoint: "%s"}
      - {id: pool-b, mode: remote, endpoint: "%s"}
auth:
  allow_anonymous: true
  # The page and the test's own client share the admin's token: the
  # default 10 a second (burst 20) is not what this test is about.
  rate_limit: {rps: 1000, burst: 1000}
  tokens:
    - {name: admin, token_sha256: "%s", scopes: [hangar:read, hangar:call, hangar:admin]}
    - {name: reader, token_sha256: "%s", scopes: [hangar:read]}
front_door: {prefetch: true}
`, show, show, show, show, auth.HashHex(tryAdminTok), auth.HashHex(tryReaderTok)))
	g := startGatewayFile(t, path, app.Options{TrafficStep: time.Second})
	shots := newArtefacts(t)
	admin := browser(t, exe)
	scriptErrors(t, admin)
	if err := within(admin, 10*time.Second, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}

	// The admin's link: the servers page, the kit healthy once it runs
	// (the prefetch stopped it after reading its catalog).
	s := connectBearer(t, g.MCPURL, tryAdminTok)
	s.call(t, "kit__echo", map[string]any{"text": "start"})
	if err := within(admin, 60*time.Second,
		chromedp.Navigate(g.URL+"/ui/#token="+tryAdminTok),
		chromedp.WaitVisible(chromedp.CSS(`#servers-table tr[data-id="kit"][data-health="ok"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#live.on`)),
	); err != nil {
		t.Fatalf("servers not shown with kit running and healthy: %v", err)
	}
	if who := text(t, admin, "#who"); !strings.HasPrefix(who, "admin") {
		t.Errorf("header identity %q", who)
	}
	if err := within(admin, 30*time.Second,
		chromedp.Evaluate[chromedp.Void](`location.hash = "#server/kit"`),
		chromedp.WaitVisible(chromedp.CSS(`#tools-table tr[data-tool="echo"] button[data-try]`)),
		chromedp.WaitVisible(chromedp.CSS(`.charts[data-server="kit"] svg`)),
	); err != nil {
		t.Fatalf("the kit's page: %v", err)
	}
	calls0, _ := strconv.Atoi(eval(t, admin, `document.querySelector('.charts[data-server="kit"]').dataset.calls`))

	// Try with the form, from the keyboard: Enter on echo's Try opens it
	// with the focus in its field; Enter runs it; a result, the time it
	// took; Escape closes it.
	if err := within(admin, 20*time.Second,
		chromedp.Focus(chromedp.CSS(`#tools-table tr[data-tool="echo"] button[data-try]`)),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`#try-form[data-target="echo"]`)),
	); err != nil {
		t.Fatalf("Try echo from the keyboard: %v", err)
	}
	if lbl := text(t, admin, `#try-form label[for="try-f0"] .fname`); lbl != "text" {
		t.Errorf("echo's field is labelled %q, want its property's name", lbl)
	}
	waitJS(t, admin, 5*time.Second, "the focus in echo's field", `document.activeElement && document.activeElement.dataset.name === "text"`)
	if err := within(admin, 20*time.Second,
		chromedp.KeyEvent("hello from the dashboard"+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`#try-result.done #try-items .item.text pre`)),
	); err != nil {
		t.Fatalf("echo's result: %v", err)
	}
	if got := text(t, admin, `#try-items .item.text pre`); got != "hello from the dashboard" {
		t.Errorf("echo answered %q", got)
	}
	if ms := eval(t, admin, `document.getElementById("try-result").dataset.ms || ""`); ms == "" {
		t.Error("no time taken shown")
	}
	shots.shot(admin, "try-echo", false)
	if err := within(admin, 10*time.Second, chromedp.KeyEvent(kb.Escape), chromedp.WaitNotVisible(chromedp.CSS(`#try`))); err != nil {
		t.Fatalf("Escape does not close Try: %v", err)
	}

	// An error, in red.
	tryOpen(t, admin, `#tools-table tr[data-tool="fail"] button[data-try]`, `#try-form[data-target="fail"]`)
	if err := within(admin, 20*time.Second,
		chromedp.SetValue(chromedp.CSS(`#try-form input[data-name="message"]`), "it went wrong on purpose"),
		chromedp.Click(chromedp.CSS(`#try-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#try-result.failed #try-items .item.error pre`)),
	); err != nil {
		t.Fatalf("fail's error: %v", err)
	}
	if got := text(t, admin, `#try-items .item.error pre`); got != "it went wrong on purpose" {
		t.Errorf("fail answered %q", got)
	}
	if c := eval(t, admin, `getComputedStyle(document.querySelector("#try-items .item.error pre")).color`); c != "rgb(180, 35, 24)" {
		t.Errorf("the error is drawn in %s, want red", c)
	}
	tryClose(t, admin)

	// Raw JSON: progress as it comes, then the structured answer.
	tryOpen(t, admin, `#tools-table tr[data-tool="progress"] button[data-try]`, `#try-form[data-target="progress"]`)
	if err := within(admin, 30*time.Second,
		chromedp.Click(chromedp.CSS(`#try-form button[data-raw]`)),
		chromedp.WaitVisible(chromedp.CSS(`#try-raw`)),
		chromedp.SetValue(chromedp.CSS(`#try-raw`), `{"steps": 4, "delay_ms": 400}`),
		chromedp.Click(chromedp.CSS(`#try-run`)),
		// The first step shows while the call still runs.
		chromedp.WaitVisible(chromedp.CSS(`#try-result.running #try-progress li`)),
	); err != nil {
		t.Fatalf("progress did not show while the call ran: %v", err)
	}
	if err := within(admin, 30*time.Second, chromedp.WaitVisible(chromedp.CSS(`#try-result.done .item.structured pre`))); err != nil {
		t.Fatalf("progress's result: %v", err)
	}
	if n := eval(t, admin, `String(document.querySelectorAll("#try-progress li").length)`); n != "4" {
		t.Errorf("%s progress notifications shown, want 4", n)
	}
	if s := text(t, admin, `#try-items .item.structured pre`); !strings.Contains(s, `"steps": 4`) || !strings.Contains(s, "12345678901234567890123") {
		t.Errorf("structured content %q", s)
	}
	shots.shot(admin, "try-progress", false)
	tryClose(t, admin)

	// The form of a schema with every kind of property; what it sends is
	// what the tool echoes back, typed.
	if err := within(admin, 30*time.Second,
		chromedp.Evaluate[chromedp.Void](`location.hash = "#server/show"`),
		chromedp.WaitVisible(chromedp.CSS(`#tools-table tr[data-tool="render"] button[data-try]`)),
	); err != nil {
		t.Fatalf("the show server's page: %v", err)
	}
	tryOpen(t, admin, `#tools-table tr[data-tool="render"] button[data-try]`, `#try-form[data-target="render"]`)
	fields := eval(t, admin, `JSON.stringify(Array.from(document.querySelectorAll("#try-form .field")).map(f => {
		const i = f.querySelector("[data-type]"); const l = f.querySelector("label");
		return [l.querySelector(".fname").textContent, i.dataset.type, i.tagName, !!l.querySelector("abbr.req"), i.required]}))`)
	want := `[["caption","string","INPUT",true,true],["shape","enum","SELECT",true,true],["size","integer","INPUT",false,false],` +
		`["outline","boolean","SELECT",false,false],["style","json","TEXTAREA",false,false],["tags","json","TEXTAREA",false,false]]`
	if fields != want {
		t.Errorf("render's form\n got %s\nwant %s", fields, want)
	}
	if opts := eval(t, admin, `Array.from(document.querySelectorAll('#try-form select[data-name="shape"] option')).map(o => o.textContent + (o.selected ? "*" : "")).join(",")`); opts != "square*,circle,stripe" {
		t.Errorf("shape's options %q", opts)
	}
	if err := within(admin, 20*time.Second,
		chromedp.SendKeys(chromedp.CSS(`#try-form input[data-name="caption"]`), "a blue square"),
		chromedp.SetValue(chromedp.CSS(`#try-form select[data-name="shape"]`), `"stripe"`),
		chromedp.SetValue(chromedp.CSS(`#try-form input[data-name="size"]`), "12"),
		chromedp.SetValue(chromedp.CSS(`#try-form select[data-name="outline"]`), "true"),
		chromedp.SetValue(chromedp.CSS(`#try-form textarea[data-name="style"]`), `{"color": "blue", "width": 1.5}`),
		chromedp.SetValue(chromedp.CSS(`#try-form textarea[data-name="tags"]`), `["a", "b"]`),
		chromedp.Click(chromedp.CSS(`#try-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#try-result.done .item.structured pre`)),
		chromedp.WaitVisible(chromedp.CSS(`#try-items canvas[data-drawn="12x12"]`)),
	); err != nil {
		t.Fatalf("render's result: %v", err)
	}
	var echoed map[string]any
	if err := json.Unmarshal([]byte(text(t, admin, `#try-items .item.structured pre`)), &echoed); err != nil {
		t.Fatalf("structured content: %v", err)
	}
	if b, _ := json.Marshal(echoed); string(b) != `{"caption":"a blue square","outline":true,"shape":"stripe","size":12,"style":{"color":"blue","width":1.5},"tags":["a","b"]}` {
		t.Errorf("the form sent %s", b)
	}
	if link := text(t, admin, `#try-items .item.link .box`); !strings.Contains(link, "show://items/42") || !strings.Contains(link, "item 42") {
		t.Errorf("resource link shown as %q", link)
	}
	// Raw mode starts from what the form holds.
	if err := within(admin, 10*time.Second, chromedp.Click(chromedp.CSS(`#try-form button[data-raw]`))); err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(eval(t, admin, `document.getElementById("try-raw").value`)), &raw); err != nil || raw["size"] != 12.0 || raw["shape"] != "stripe" {
		t.Errorf("raw JSON from the form: %v %v", raw, err)
	}
	shots.shot(admin, "try-render", false)
	tryClose(t, admin)

	// A server the front door does not list: its tool through hangar_call.
	if err := within(admin, 30*time.Second,
		chromedp.Evaluate[chromedp.Void](`location.hash = "#server/quiet"`),
		chromedp.WaitVisible(chromedp.CSS(`#tools-table tr[data-tool="render"] button[data-try]`)),
	); err != nil {
		t.Fatalf("the quiet server's page: %v", err)
	}
	tryOpen(t, admin, `#tools-table tr[data-tool="render"] button[data-try]`, `#try-form[data-target="render"][data-via="hangar_call"]`)
	if err := within(admin, 20*time.Second,
		chromedp.SendKeys(chromedp.CSS(`#try-form input[data-name="caption"]`), "through hangar_call"),
		chromedp.Click(chromedp.CSS(`#try-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#try-result.done .item.structured pre`)),
	); err != nil {
		t.Fatalf("render through hangar_call: %v", err)
	}
	if got := text(t, admin, `#try-items .item.structured pre`); !strings.Contains(got, `"caption": "through hangar_call"`) {
		t.Errorf("render through hangar_call answered %q", got)
	}
	tryClose(t, admin)
	if err := within(admin, 30*time.Second,
		chromedp.Evaluate[chromedp.Void](`location.hash = "#server/show"`),
		chromedp.WaitVisible(chromedp.CSS(`#resources-table`)),
	); err != nil {
		t.Fatal(err)
	}

	// A resource read, a template filled in, a prompt got.
	tryOpen(t, admin, `#resources-table button[data-resource="show://readme"]`, `#try-form[data-kind="resource"]`)
	if err := within(admin, 20*time.Second, chromedp.WaitVisible(chromedp.CSS(`#try-result.done .item pre`))); err != nil {
		t.Fatalf("resource read: %v", err)
	}
	if got := text(t, admin, `#try-items .item pre`); got != "Hello from the show server" {
		t.Errorf("resource read %q", got)
	}
	tryClose(t, admin)
	tryOpen(t, admin, `#resources-table button[data-template="show://items/{id}"]`, `#try-form[data-kind="template"]`)
	if err := within(admin, 20*time.Second,
		chromedp.SendKeys(chromedp.CSS(`#try-form input[data-name="id"]`), "7 b"),
		chromedp.Click(chromedp.CSS(`#try-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#try-result.done .item pre`)),
	); err != nil {
		t.Fatalf("template read: %v\n%s", err, eval(t, admin, `document.getElementById("try").outerHTML`))
	}
	if got := text(t, admin, `#try-items .item pre`); got != "the item at show://items/7%20b" {
		t.Errorf("template read %q", got)
	}
	tryClose(t, admin)
	tryOpen(t, admin, `#prompts-table button[data-prompt="greet"]`, `#try-form[data-kind="prompt"]`)
	if err := within(admin, 20*time.Second,
		chromedp.SendKeys(chromedp.CSS(`#try-form input[data-name="name"]`), "Ada"),
		chromedp.Click(chromedp.CSS(`#try-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#try-result.done .item pre`)),
	); err != nil {
		t.Fatalf("prompt get: %v", err)
	}
	if got := eval(t, admin, `Array.from(document.querySelectorAll("#try-items pre")).map(p => p.textContent).join("|")`); got != "a greeting|Say hello to Ada" {
		t.Errorf("prompt got %q", got)
	}
	tryClose(t, admin)
	shots.shot(admin, "server-show", true)

	// The kit's traffic chart and live log: calls made elsewhere show up
	// on the page without a reload.
	if err := within(admin, 30*time.Second,
		chromedp.Evaluate[chromedp.Void](`location.hash = "#server/kit"`),
		chromedp.WaitVisible(chromedp.CSS(`#log[data-server="kit"]`)),
	); err != nil {
		t.Fatal(err)
	}
	eval(t, admin, `window.hangarMarker = "same page"; ""`)
	for range 5 {
		s.call(t, "kit__echo", map[string]any{"text": "traffic"})
	}
	s.call(t, "kit__stderr", map[string]any{"text": "dashboard-log-marker"})
	waitJS(t, admin, 20*time.Second, "the chart counted the calls",
		fmt.Sprintf(`Number((document.querySelector('.charts[data-server="kit"]') || {dataset: {}}).dataset.calls || 0) >= %d`, calls0+6))
	if n := eval(t, admin, `String(document.querySelectorAll('.charts[data-server="kit"] .series.calls polyline').length)`); n == "0" {
		t.Error("the calls chart draws no line")
	}
	waitJS(t, admin, 20*time.Second, "the stderr line in the live log",
		`Array.from(document.querySelectorAll("#log-lines li[data-kind=stderr]")).some(li => li.textContent.includes("dashboard-log-marker"))`)
	waitJS(t, admin, 20*time.Second, "the call's audit entry in the live log",
		`Array.from(document.querySelectorAll("#log-lines li[data-kind=audit]")).some(li => li.textContent.includes("admin") && li.textContent.includes("stderr"))`)
	if err := within(admin, 10*time.Second, chromedp.SendKeys(chromedp.CSS(`#log-filter`), "log-marker")); err != nil {
		t.Fatal(err)
	}
	if shown := eval(t, admin, `Array.from(document.querySelectorAll("#log-lines li:not([hidden])")).map(li => li.dataset.kind + ":" + li.querySelector(".x").textContent).join("|")`); shown != "stderr:dashboard-log-marker" {
		t.Errorf("filtered log shows %q", shown)
	}
	if eval(t, admin, `window.hangarMarker || ""`) != "same page" {
		t.Error("the page was reloaded")
	}
	shots.shot(admin, "server-kit", true)

	// The header's search finds a tool and opens its Try.
	if err := within(admin, 20*time.Second,
		chromedp.SendKeys(chromedp.CSS(`#search-q`), "echo"),
		chromedp.WaitVisible(chromedp.CSS(`#search-results li[data-server="kit"] button[data-try]`)),
	); err != nil {
		t.Fatalf("search: %v", err)
	}
	shots.shot(admin, "search", false)
	tryOpen(t, admin, `#search-results li[data-server="kit"] button[data-try][data-tool="echo"]`, `#try-form[data-target="echo"]`)
	tryClose(t, admin)

	// Every other page, at 1280×800 and at a phone's width.
	for _, p := range []struct{ hash, ready string }{
		{"servers", `#servers-table tr[data-id="show"]`},
		{"groups", `article.group[data-id="pool"] table.members tr[data-id="pool-b"]`},
		{"replicas", `article.replica table.containers tr[data-server="kit"]`},
		{"gateway", `#gateway-tools tr[data-tool="hangar_stop"]`},
		{"pending", `#pending-table`},
		{"installs", `#installs-table`},
		{"policy", `#server-policies`},
		{"refusals", `#refusals-table`},
	} {
		if err := within(admin, 20*time.Second,
			chromedp.Evaluate[chromedp.Void](`location.hash = "#`+p.hash+`"`),
			chromedp.WaitVisible(chromedp.CSS(p.ready)),
		); err != nil {
			t.Errorf("page %s: %v", p.hash, err)
			continue
		}
		shots.shot(admin, p.hash, false)
		if p.hash != "groups" {
			continue
		}
		if b := text(t, admin, `article.group[data-id="pool"]`); !strings.Contains(b, "round_robin") || !strings.Contains(b, "closed") {
			t.Errorf("group card %q lacks its strategy or breaker state", b)
		}
	}
	if err := within(admin, 20*time.Second,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)),
		chromedp.Evaluate[chromedp.Void](`location.hash = "#servers"`),
		chromedp.WaitVisible(chromedp.CSS(`#servers-table tr[data-id="kit"]`)),
	); err != nil {
		t.Fatal(err)
	}
	if w := eval(t, admin, `String(document.documentElement.scrollWidth)`); w != "390" {
		t.Errorf("at a phone's width the page is %s px wide, want 390 (no sideways scrolling)", w)
	}
	shots.shot(admin, "servers-phone", false)
	if err := within(admin, 20*time.Second,
		chromedp.Evaluate[chromedp.Void](`location.hash = "#server/kit"`),
		chromedp.WaitVisible(chromedp.CSS(`#tools-table`)),
	); err != nil {
		t.Fatal(err)
	}
	shots.shot(admin, "server-kit-phone", true)

	// Without a token: the servers at once, no token box (anonymous may
	// read here); an admin-only tool is refused, and audited.
	anon := browser(t, exe)
	if err := within(anon, 60*time.Second,
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(g.URL+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS(`#servers-table tr[data-id="kit"]`)),
	); err != nil {
		t.Fatalf("the anonymous page: %v", err)
	}
	if v := eval(t, anon, `String(document.getElementById("login").hidden) + " " + document.getElementById("who").textContent`); !strings.HasPrefix(v, "true anonymous") {
		t.Errorf("anonymous page: login hidden, who = %q", v)
	}
	shots.shot(anon, "servers-anonymous", false)

	// A reader's token, from the header: the gateway refuses hangar_stop.
	if err := within(anon, 20*time.Second,
		chromedp.Click(chromedp.CSS(`#signin`)),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), tryReaderTok),
		chromedp.Click(chromedp.CSS(`#login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#signout`)),
		chromedp.Evaluate[chromedp.Void](`location.hash = "#gateway"`),
		chromedp.WaitVisible(chromedp.CSS(`#gateway-tools tr[data-tool="hangar_stop"] button[data-try]`)),
	); err != nil {
		t.Fatalf("the reader's sign-in: %v", err)
	}
	tryOpen(t, anon, `#gateway-tools tr[data-tool="hangar_stop"] button[data-try]`, `#try-form[data-target="hangar_stop"]`)
	if lacks := text(t, anon, `#try-form [data-lacks]`); !strings.Contains(lacks, "hangar:admin") {
		t.Errorf("the form does not say the reader lacks hangar:admin: %q", lacks)
	}
	if err := within(anon, 20*time.Second,
		chromedp.SendKeys(chromedp.CSS(`#try-form input[data-name="mcp_server"]`), "kit"),
		chromedp.Click(chromedp.CSS(`#try-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#try-result.failed .item.error pre`)),
	); err != nil {
		t.Fatalf("the reader's hangar_stop: %v", err)
	}
	if got := text(t, anon, `#try-items .item.error pre`); got != "Token missing required scope: hangar:admin" {
		t.Errorf("the refusal reads %q", got)
	}
	if st := text(t, anon, `#try-result .status`); !strings.Contains(st, strconv.Itoa(auth.CodeInsufficientScope)) {
		t.Errorf("the refusal's status %q lacks its code", st)
	}
	shots.shot(anon, "try-refused", false)
	discWait(t, 10*time.Second, "the refusal audited under the reader's name", func() bool {
		es, err := g.App.Store.RecentAudit(context.Background(), "", 20)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.Identity == "reader" && !e.Allowed && e.Tool == "hangar_stop" && strings.Contains(e.Reason, auth.ScopeAdmin) {
				return true
			}
		}
		return false
	})
	if p, ok := g.App.Providers.Get("kit"); !ok || p.State() != "ready" {
		t.Error("the refused hangar_stop stopped kit")
	}
	// The admin's calls were audited under the admin's name.
	es, err := g.App.Store.RecentAudit(context.Background(), "kit", 50)
	if err != nil {
		t.Fatal(err)
	}
	adminCalls := 0
	for _, e := range es {
		if e.Identity == "admin" && e.Tool == "progress" && e.Allowed {
			adminCalls++
		}
	}
	if adminCalls == 0 {
		t.Errorf("no audit entry of the admin's progress call on kit: %+v", es)
	}
}

// scriptErrors fails the test on an exception the page's scripts throw,
// and logs what they write to the console.
func scriptErrors(t *testing.T, ctx context.Context) {
	_ = chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			t.Errorf("the page threw at %s:%d: %s", d.URL, d.LineNumber, msg)
		case *cdpruntime.EventConsoleAPICalled:
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			t.Logf("console.%s: %s", e.Type, strings.Join(args, " "))
		}
	})
}

// tryOpen clicks a Try button and waits for its form.
func tryOpen(t *testing.T, ctx context.Context, button, form string) {
	t.Helper()
	if err := within(ctx, 20*time.Second,
		chromedp.Click(chromedp.CSS(button)),
		chromedp.WaitVisible(chromedp.CSS(form)),
	); err != nil {
		t.Fatalf("Try %s: %v", button, err)
	}
}

func tryClose(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := within(ctx, 10*time.Second,
		chromedp.Click(chromedp.CSS(`#try button[data-close]`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#try`)),
	); err != nil {
		t.Fatalf("close Try: %v", err)
	}
}
