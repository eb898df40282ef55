package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/app"
	"github.com/mcp-hangar/hangar/internal/manage"
)

// manageConfig runs bunx entries in the math image: it ignores its
// arguments, so it stands in for a Node.js runtime image here.
const manageConfig = `
runtimes:
  bunx: {image: mcp-hangar/math:dev}
mcp_servers: {}
`

const remoteSecret = "remote-SECRET-4b9e0c"

// remoteServer is a streamable HTTP MCP server that wants remoteSecret as
// its bearer token.
func remoteServer(t *testing.T) string {
	t.Helper()
	s := server.NewMCPServer("remote", "1")
	s.AddTool(mcp.NewTool("hello"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("hello from remote"), nil
	})
	h := server.NewStreamableHTTPServer(s)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+remoteSecret {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// syncBuffer is a log sink the test can search for leaked secrets.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mgmt calls a management method; the answer's raw body comes back too.
func mgmt(t *testing.T, url, method string, params any) (map[string]any, *manage.RPCError, string) {
	t.Helper()
	return mgmtAs(t, url, "", method, params)
}

// mgmtAs is mgmt with a bearer token ("" sends none).
func mgmtAs(t *testing.T, url, token, method string, params any) (map[string]any, *manage.RPCError, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var env struct {
		Result map[string]any   `json:"result"`
		Error  *manage.RPCError `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("%s: %d %q", method, resp.StatusCode, raw)
	}
	return env.Result, env.Error, string(raw)
}

func mustMgmt(t *testing.T, url, method string, params any) (map[string]any, string) {
	t.Helper()
	res, rerr, raw := mgmt(t, url, method, params)
	if rerr != nil {
		t.Fatalf("%s: %d %s", method, rerr.Code, rerr.Message)
	}
	return res, raw
}

// listener is an MCP session that records the management notifications.
type listener struct {
	mu  sync.Mutex
	got []mcp.JSONRPCNotification
}

func listen(t *testing.T, url string) *listener {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{}
	c := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion("2025-11-25"))
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if strings.HasPrefix(n.Method, "mcp/") {
			l.mu.Lock()
			l.got = append(l.got, n)
			l.mu.Unlock()
		}
	})
	// The GET stream lives as long as the context given to Start, so it
	// is not startSession's (which ends when it returns).
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("mcp client start: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ictx, icancel := context.WithTimeout(ctx, callTimeout)
	defer icancel()
	if _, err := c.Initialize(ictx, mcp.InitializeRequest{}); err != nil {
		t.Fatalf("mcp initialize: %v", err)
	}
	return l
}

func (l *listener) snapshot() []mcp.JSONRPCNotification {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]mcp.JSONRPCNotification(nil), l.got...)
}

// eventually polls cond for up to callTimeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(callTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The management protocol end to end: a client config with a docker-run
// entry, a URL entry with a secret header, a bunx entry (a runner with a
// runtime image of the config) and an invalid one
// installs partially; the servers serve calls; disable refuses calls and
// removes the container; restart; uninstall removes the container; a
// second session gets every notification in order; the secret shows up
// nowhere but at the remote server.
func TestManageInstallLifecycle(t *testing.T) {
	t.Parallel()
	remoteURL := remoteServer(t)
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(newTestLog(t), logs), &slog.HandlerOptions{Level: slog.LevelDebug}))
	g := startGatewayFile(t, writeConfig(t, manageConfig), app.Options{Log: log})
	watcher := listen(t, g.MCPURL)
	eventually(t, "the watcher's session", func() bool { return g.App.Manage.Notifier.Sessions() > 0 })
	s := connect(t, g.MCPURL)

	cfgJSON := `{"mcpServers": {
	  "math": {"command": "docker", "args": ["run", "-i", "--rm", "mcp-hangar/math:dev"]},
	  "remote": {"url": "` + remoteURL + `", "headers": {"Authorization": "Bearer ` + remoteSecret + `"}},
	  "bunxmath": {"command": "bunx", "args": ["-y", "@acme/math"]},
	  "evil": {"command": "docker", "args": ["run", "-i", "--privileged", "-v", "/var/run/docker.sock:/var/run/docker.sock", "mcp-hangar/math:dev"]}
	}}`
	res, raw := mustMgmt(t, g.MCPURL, manage.MethodInstall, map[string]any{"config_json": cfgJSON})
	if res["status"] != "partial" {
		t.Fatalf("install: %s", raw)
	}
	var answers []string
	answers = append(answers, raw)
	for _, x := range res["servers"].([]any) {
		o := x.(map[string]any)
		want := "installed"
		if o["name"] == "evil" {
			want = "validation_error"
			var codes []string
			for _, d := range o["diagnostics"].([]any) {
				codes = append(codes, d.(map[string]any)["code"].(string))
			}
			if strings.Join(codes, ",") != "widens_hardening,widens_hardening" {
				t.Errorf("evil diagnostics = %v", o["diagnostics"])
			}
		}
		if o["status"] != want {
			t.Errorf("%s: %v, want %s (%v)", o["name"], o["status"], want, o["diagnostics"])
		}
	}

	// Every installed server serves calls, listed as source installed.
	if r := s.callOne(t, "math", "add", map[string]any{"a": 1, "b": 2}); str(r, "result") != "3" && !strings.Contains(jsonOf(r), "3") {
		t.Errorf("math add = %v", r)
	}
	if r := s.callOne(t, "bunxmath", "add", map[string]any{"a": 2, "b": 2}); !strings.Contains(jsonOf(r), "4") {
		t.Errorf("bunxmath add = %v", r)
	}
	if r := s.callOne(t, "remote", "hello", nil); !strings.Contains(jsonOf(r), "hello from remote") {
		t.Errorf("remote hello = %v", r)
	}
	l := s.mustCall(t, "hangar_list", nil)
	for _, x := range l["mcp_servers"].([]any) {
		if m := x.(map[string]any); m["source"] != "installed" {
			t.Errorf("hangar_list: %v has source %v", m["mcp_server"], m["source"])
		}
	}
	if n := countContainers(t, g.Instance, "math"); n != 1 {
		t.Fatalf("math containers = %d", n)
	}

	list, raw := mustMgmt(t, g.MCPURL, manage.MethodList, nil)
	answers = append(answers, raw)
	if len(list["servers"].([]any)) != 3 {
		t.Errorf("mcp/list = %s", raw)
	}
	_, raw = mustMgmt(t, g.MCPURL, manage.MethodDetails, map[string]any{"server_id": "remote"})
	answers = append(answers, raw)

	// Disable: the container goes, calls are refused naming the policy.
	_, raw = mustMgmt(t, g.MCPURL, manage.MethodPolicySet, map[string]any{"name": "math", "enabled": false})
	answers = append(answers, raw)
	eventually(t, "math's container to go", func() bool { return countContainers(t, g.Instance, "math") == 0 })
	_, isErr, text := s.call(t, "hangar_call", one("math", "add", map[string]any{"a": 1, "b": 1}))
	if !strings.Contains(text, manage.KindDisabled) || !strings.Contains(text, "policy") {
		t.Errorf("call to a disabled server: isErr %v, %s", isErr, text)
	}
	mustMgmt(t, g.MCPURL, manage.MethodPolicySet, map[string]any{"name": "math", "enabled": true})
	if r := s.callOne(t, "math", "add", map[string]any{"a": 1, "b": 2}); !strings.Contains(jsonOf(r), "3") {
		t.Errorf("math add after enable = %v", r)
	}

	// Restart: a new container serves.
	before := containers(t, g.Instance, "bunxmath")
	if len(before) != 1 {
		t.Fatalf("bunxmath containers = %d", len(before))
	}
	res, _ = mustMgmt(t, g.MCPURL, manage.MethodRestart, map[string]any{"name": "bunxmath"})
	if res["accepted"] != true {
		t.Fatalf("restart = %v", res)
	}
	eventually(t, "a new bunxmath container", func() bool {
		now := containers(t, g.Instance, "bunxmath")
		return len(now) == 1 && now[0].ID != before[0].ID
	})

	// Uninstall: its container goes.
	res, _ = mustMgmt(t, g.MCPURL, manage.MethodUninstall, map[string]any{"name": "bunxmath"})
	if res["removed"] != true {
		t.Fatalf("uninstall = %v", res)
	}
	eventually(t, "bunxmath's container to go", func() bool { return countContainers(t, g.Instance, "bunxmath") == 0 })

	// The watcher saw it all, in snapshot order: the install's change
	// first and the uninstall's last.
	var notes []mcp.JSONRPCNotification
	defer func() {
		if t.Failed() {
			t.Logf("watcher got %d notifications: %s", len(notes), jsonOf(notes))
		}
	}()
	eventually(t, "the uninstall notification", func() bool {
		notes = watcher.snapshot()
		if len(notes) == 0 {
			return false
		}
		last := notes[len(notes)-1]
		return last.Method == manage.MethodChanged && strings.Contains(jsonOf(last.Params.AdditionalFields), "uninstalled")
	})
	var prev float64
	methods := map[string]int{}
	for i, n := range notes {
		v, _ := n.Params.AdditionalFields["snapshot_version"].(float64)
		if v <= prev {
			t.Errorf("notification %d (%s) has snapshot_version %v after %v", i, n.Method, v, prev)
		}
		prev = v
		methods[n.Method]++
		answers = append(answers, jsonOf(n))
	}
	if notes[0].Method != manage.MethodChanged || methods[manage.MethodStatusChanged] < 6 || methods[manage.MethodCatalogChanged] < 3 {
		t.Errorf("notifications: %v (first %s)", methods, notes[0].Method)
	}

	for _, a := range answers {
		if strings.Contains(a, remoteSecret) {
			t.Errorf("the secret leaked into an answer or notification: %s", a)
		}
	}
	if strings.Contains(logs.String(), remoteSecret) {
		t.Error("the secret leaked into the logs")
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Installs, policies and the snapshot version survive a restart: a second
// gateway on the same data dir (the SQL store) serves what the first
// installed.
func TestManageInstallsSurviveRestart(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	instance := newInstance(t)
	path := writeConfig(t, manageConfig)
	var l1 map[string]any
	t.Run("first run installs", func(t *testing.T) {
		g1 := startGatewayFile(t, path, app.Options{Instance: instance, DataDir: dataDir})
		mustMgmt(t, g1.MCPURL, manage.MethodInstall, map[string]any{
			"config_json": `{"mcpServers": {"kept": {"command": "docker", "args": ["run", "-i", "mcp-hangar/math:dev"]},
			  "off": {"command": "bunx", "args": ["x"]}}}`,
		})
		mustMgmt(t, g1.MCPURL, manage.MethodPolicySet, map[string]any{"name": "off", "enabled": false})
		l1, _ = mustMgmt(t, g1.MCPURL, manage.MethodList, nil)
	})

	// The first gateway is closed; a second one starts on the same data dir.
	g2 := startGatewayFile(t, path, app.Options{Instance: instance, DataDir: dataDir})
	l2, raw := mustMgmt(t, g2.MCPURL, manage.MethodList, nil)
	if l2["snapshot_version"].(float64) < l1["snapshot_version"].(float64) {
		t.Errorf("snapshot_version went back: %v < %v", l2["snapshot_version"], l1["snapshot_version"])
	}
	states := map[string]string{}
	for _, x := range l2["servers"].([]any) {
		m := x.(map[string]any)
		states[m["name"].(string)] = m["runtime"].(map[string]any)["state"].(string)
	}
	if states["kept"] != "not_started" || states["off"] != "disabled" {
		t.Fatalf("after restart: %s", raw)
	}
	s := connect(t, g2.MCPURL)
	if r := s.callOne(t, "kept", "add", map[string]any{"a": 5, "b": 5}); !strings.Contains(jsonOf(r), "10") {
		t.Errorf("kept add = %v", r)
	}
}

// hangar import and hangar servers drive a running gateway.
func TestManageCLI(t *testing.T) {
	t.Parallel()
	g := startGatewayFile(t, writeConfig(t, manageConfig), app.Options{})
	// docs/management.md's example file: a docker server with a secret, and a uvx
	// one, which needs no runtimes: entry but cannot be installed here:
	// its default runtime image cannot be pulled (no internet).
	file := filepath.Join(repoRoot, "testdata", "import", "claude_desktop_config.json")
	run := func(args ...string) (string, error) {
		cmd := exec.Command(hangarBin, args...)
		cmd.Env = append(os.Environ(), "HANGAR_URL="+g.MCPURL, "HANGAR_TOKEN=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("import", file)
	if err == nil {
		t.Errorf("import of a partial config exited 0:\n%s", out)
	}
	for _, want := range []string{"calc", "installed", "secret_stored", "mcpServers.calc.env.TOKEN", "fetch", "package_unavailable",
		"pypi package mcp-server-fetch@latest", "ghcr.io/astral-sh/uv:python3.12-bookworm-slim", "status: partial"} {
		if !strings.Contains(out, want) {
			t.Errorf("import output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "cli-SECRET-1234") {
		t.Errorf("import printed the secret:\n%s", out)
	}
	out, err = run("servers", "policy", "calc", "--enabled=false")
	if err != nil || !strings.Contains(out, "enabled=false") || !strings.Contains(out, "state=disabled") {
		t.Errorf("policy: %v\n%s", err, out)
	}
	out, err = run("servers", "list")
	if err != nil || !strings.Contains(out, "calc") || !strings.Contains(out, "disabled") {
		t.Errorf("list: %v\n%s", err, out)
	}
	out, err = run("servers", "policy", "calc", "--enabled=true")
	if err != nil {
		t.Fatalf("policy: %v\n%s", err, out)
	}
	s := connect(t, g.MCPURL)
	if r := s.callOne(t, "calc", "add", map[string]any{"a": 20, "b": 22}); !strings.Contains(jsonOf(r), "42") {
		t.Errorf("calc add = %v", r)
	}
	out, err = run("servers", "details", "calc")
	if err != nil || !strings.Contains(out, `"catalog_version"`) || strings.Contains(out, "cli-SECRET-1234") {
		t.Errorf("details: %v\n%s", err, out)
	}
	if out, err = run("servers", "restart", "calc"); err != nil || !strings.Contains(out, `"accepted": true`) {
		t.Errorf("restart: %v\n%s", err, out)
	}
	if out, err = run("servers", "uninstall", "calc"); err != nil || !strings.Contains(out, `"removed": true`) {
		t.Errorf("uninstall: %v\n%s", err, out)
	}
	eventually(t, "calc's containers to go", func() bool { return countContainers(t, g.Instance, "calc") == 0 })
	if out, err = run("servers", "details", "calc"); err == nil || !strings.Contains(out, "calc") {
		t.Errorf("details after uninstall: %v\n%s", err, out)
	}
}
