package manage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/clientconfig"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/frontdoor"
	"github.com/mcp-hangar/hangar/internal/manage"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
)

const (
	headerSecret = "hdr-SECRET-8c1f"
	envSecret    = "env-SECRET-77aa"
)

// mixedConfig has a docker-run entry, a URL entry with a secret header, an
// npx entry with a secret env value and an invalid (privileged) one.
var mixedConfig = `{"mcpServers": {
  "math": {"command": "docker", "args": ["run", "-i", "--rm", "mcp-hangar/math:dev"]},
  "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ` + headerSecret + `"}},
  "npxsrv": {"command": "npx", "args": ["-y", "@acme/server"], "env": {"API_KEY": "` + envSecret + `"}},
  "bad": {"command": "docker", "args": ["run", "--privileged", "img"]}
}}`

func TestInstallPartialWithDiagnostics(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	ev := h.subscribe("reader")
	r := h.install(mixedConfig, nil)
	if r.Result["status"] != "partial" {
		t.Fatalf("status = %v, want partial: %s", r.Result["status"], r.Raw)
	}
	want := map[string]string{"math": "installed", "remote": "installed", "npxsrv": "installed", "bad": "validation_error"}
	servers := r.Result["servers"].([]any)
	if len(servers) != 4 {
		t.Fatalf("servers = %v", servers)
	}
	order := []string{"math", "remote", "npxsrv", "bad"} // the file's order
	for i, s := range servers {
		m := s.(map[string]any)
		if m["name"] != order[i] || m["status"] != want[order[i]] {
			t.Errorf("servers[%d] = %v %v, want %s %s", i, m["name"], m["status"], order[i], want[order[i]])
		}
		diags := m["diagnostics"].([]any)
		switch m["name"] {
		case "bad":
			d := diags[0].(map[string]any)
			if d["code"] != clientconfig.CodeWidensHardening || d["level"] != "error" || d["field_path"] != "mcpServers.bad.args[1]" ||
				!strings.Contains(d["message"].(string), "--privileged") {
				t.Errorf("bad diagnostic = %v", d)
			}
			if m["server"] != nil {
				t.Errorf("a refused server has an item: %v", m["server"])
			}
		case "remote", "npxsrv":
			d := diags[len(diags)-1].(map[string]any)
			if d["code"] != clientconfig.CodeSecretStored || d["level"] != "info" {
				t.Errorf("%s: last diagnostic = %v, want secret_stored", m["name"], d)
			}
			fallthrough
		default:
			it := m["server"].(map[string]any)
			if it["source_kind"] != "installed" || it["id"] != m["name"] {
				t.Errorf("item = %v", it)
			}
		}
	}
	mustNotContain(t, "install answer", r.Raw, headerSecret)
	mustNotContain(t, "install answer", r.Raw, envSecret)

	// The secrets are in the keystore, and only there.
	if v := secretsUnder(h.Store, "installs/remote/"); len(v) != 1 || v[0] != "Bearer "+headerSecret {
		t.Errorf("keystore installs/remote/ = %q", v)
	}
	recs, _ := h.Store.Installs(context.Background())
	for _, rec := range recs {
		mustNotContain(t, "stored install "+rec.Name, string(rec.Config), headerSecret)
		mustNotContain(t, "stored install "+rec.Name, string(rec.Config), envSecret)
	}

	// The list shows each with its transport, header and env names only.
	list := h.rpc(manage.MethodList, nil)
	mustNotContain(t, "mcp/list", list.Raw, headerSecret)
	mustNotContain(t, "mcp/list", list.Raw, envSecret)
	remote := item(t, list, "remote")
	tr := remote["transport"].(map[string]any)
	if tr["kind"] != "streamable_http" || tr["url"] != "https://mcp.example.com/mcp" || tr["header_names"].([]any)[0] != "Authorization" {
		t.Errorf("remote transport = %v", tr)
	}
	npx := item(t, list, "npxsrv")
	if tr := npx["transport"].(map[string]any); tr["package"].(map[string]any)["name"] != "@acme/server" || tr["runtime"] != "container" {
		t.Errorf("npx transport = %v", tr)
	}
	if item(t, list, "bad") != nil {
		t.Errorf("a refused server is listed")
	}

	// A start gets the secret: only the provider's spec holds it.
	if _, err := h.Gateway.Batch().Invoke(context.Background(), nil, "npxsrv", "add", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	l := h.Launcher.launches("npxsrv")
	if len(l) != 1 || l[0].Env["API_KEY"] != envSecret || l[0].Package == nil || l[0].Package.Name != "@acme/server" {
		t.Fatalf("launched %+v", l)
	}

	// One mcp/changed for the whole install, then the status changes;
	// none carries a secret.
	n := ev.next(t, manage.MethodChanged)
	p := n["params"].(map[string]any)
	if len(p["changed"].([]any)) != 3 {
		t.Errorf("changed = %v", p["changed"])
	}
	b, _ := json.Marshal(n)
	mustNotContain(t, "notification", string(b), envSecret)
	mustNotContain(t, "logs", h.Log.String(), headerSecret)
	mustNotContain(t, "logs", h.Log.String(), envSecret)
}

func TestInstallErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{servers: []*config.Server{fromConfig("cfgsrv")}})
	tests := []struct {
		name   string
		who    string
		method string
		params any
		code   int
		msg    string
	}{
		{"malformed json", "", manage.MethodInstall, map[string]any{"config_json": `{"mcpServers": {`}, -32602, "not a JSON object"},
		{"no server object", "", manage.MethodInstall, map[string]any{"config_json": `{"other": 1}`}, -32602, "mcpServers"},
		{"config_json missing", "", manage.MethodInstall, map[string]any{}, -32602, "config_json is required"},
		{"config_json not a string", "", manage.MethodInstall, map[string]any{"config_json": map[string]any{}}, -32602, "invalid params"},
		{"other workspace", "", manage.MethodList, map[string]any{"workspace_id": "other"}, -32602, `serves workspace "ws1"`},
		{"user scope", "", manage.MethodList, map[string]any{"scope_kind": "user"}, -32602, `scope_kind "user" is not supported`},
		{"reader cannot install", "reader", manage.MethodInstall, map[string]any{"config_json": `{"mcpServers":{}}`}, auth.CodeInsufficientScope, "hangar:admin"},
		{"nobody cannot list", "nobody", manage.MethodList, nil, auth.CodeInsufficientScope, "hangar:read"},
		{"reader cannot restart", "reader", manage.MethodRestart, map[string]any{"name": "cfgsrv"}, auth.CodeInsufficientScope, "hangar:admin"},
		{"filtered identity, other server", "filtered", manage.MethodDetails, map[string]any{"server_id": "cfgsrv"}, auth.CodeInsufficientScope, "server:cfgsrv"},
		{"unknown method", "", "mcp/nope", nil, -32601, "mcp/nope"},
		{"unknown server", "", manage.MethodDetails, map[string]any{"server_id": "ghost"}, -32602, `"ghost"`},
		{"policy needs a field", "", manage.MethodPolicySet, map[string]any{"name": "cfgsrv"}, -32602, "enabled or allow_implicit_invocation"},
		{"policy of a config server", "", manage.MethodPolicySet, map[string]any{"name": "cfgsrv", "enabled": false}, -32602, "comes from config"},
		{"uninstall a config server", "", manage.MethodUninstall, map[string]any{"name": "cfgsrv"}, -32602, "cannot be uninstalled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.rpcAs(tt.who, tt.method, tt.params)
			if r.Error == nil || r.Error.Code != tt.code || !strings.Contains(r.Error.Message, tt.msg) {
				t.Fatalf("got %s, want code %d with %q", r.Raw, tt.code, tt.msg)
			}
		})
	}

	// A name taken by another source, and an invalid name, are per-server
	// validation errors.
	r := h.install(`{"mcpServers": {"cfgsrv": {"url": "http://h/mcp"}, "bad name!": {"url": "http://h/mcp"}}}`, nil)
	if r.Result["status"] != "validation_error" {
		t.Fatalf("%s", r.Raw)
	}
	codes := []string{}
	for _, s := range r.Result["servers"].([]any) {
		codes = append(codes, s.(map[string]any)["diagnostics"].([]any)[0].(map[string]any)["code"].(string))
	}
	if strings.Join(codes, ",") != "name_taken,invalid_name" {
		t.Errorf("codes = %v", codes)
	}
}

func fromConfig(id string) *config.Server {
	s := config.NewServer(id, config.ModeDocker, config.Execution{})
	s.Image = "img"
	return s
}

func TestReinstallUpdatesAndKeepsPolicy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.install(`{"servers": {"svc": {"type": "http", "url": "http://a/mcp"}}}`, map[string]any{"allow_implicit_invocation": true})
	h.rpc(manage.MethodPolicySet, map[string]any{"name": "svc", "enabled": false})
	r := h.install(`{"mcpServers": {"svc": {"url": "http://b/mcp"}}}`, nil)
	o := r.Result["servers"].([]any)[0].(map[string]any)
	if r.Result["status"] != "ok" || o["status"] != "updated" {
		t.Fatalf("%s", r.Raw)
	}
	it := o["server"].(map[string]any)
	pol := it["policy"].(map[string]any)
	if pol["enabled"] != false || pol["allow_implicit_invocation"] != true {
		t.Errorf("policy after re-install = %v, want kept", pol)
	}
	if tr := it["transport"].(map[string]any); tr["url"] != "http://b/mcp" {
		t.Errorf("transport not updated: %v", tr)
	}
}

func TestDisableStopsAndRefusesCalls(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.install(`{"mcpServers": {"svc": {"command": "npx", "args": ["pkg"]}}}`, nil)
	ctx := context.Background()
	if _, err := h.Gateway.Batch().Invoke(ctx, nil, "svc", "add", nil); err != nil {
		t.Fatal(err)
	}
	if !h.Launcher.running("svc") {
		t.Fatal("not running after a call")
	}
	r := h.rpc(manage.MethodPolicySet, map[string]any{"name": "svc", "enabled": false})
	if r.Result["policy"].(map[string]any)["enabled"] != false {
		t.Fatalf("%s", r.Raw)
	}
	if st := r.Result["server"].(map[string]any)["runtime"].(map[string]any)["state"]; st != "disabled" {
		t.Errorf("state = %v, want disabled", st)
	}
	if h.Launcher.running("svc") {
		t.Error("a disabled server still runs")
	}
	if it := item(t, h.rpc(manage.MethodList, nil), "svc"); it == nil || it["status"] != "disabled" {
		t.Errorf("disabled server not listed as disabled: %v", it)
	}
	_, err := h.Gateway.Batch().Invoke(ctx, nil, "svc", "add", nil)
	if err == nil || !strings.Contains(err.Error(), manage.KindDisabled) || !strings.Contains(err.Error(), "policy") {
		t.Fatalf("call to a disabled server: %v", err)
	}
	if n := len(h.Launcher.launches("svc")); n != 1 {
		t.Errorf("launches = %d: the call started a disabled server", n)
	}
	h.rpc(manage.MethodPolicySet, map[string]any{"name": "svc", "enabled": true})
	if _, err := h.Gateway.Batch().Invoke(ctx, nil, "svc", "add", nil); err != nil {
		t.Fatalf("enabled again: %v", err)
	}
}

func TestRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	ev := h.subscribe("")
	h.install(`{"mcpServers": {"svc": {"command": "npx", "args": ["pkg"]}}}`, nil)
	if _, err := h.Gateway.Batch().Invoke(context.Background(), nil, "svc", "add", nil); err != nil {
		t.Fatal(err)
	}
	// The first start's notifications come asynchronously: read up to
	// its ready before restarting.
	for {
		n := ev.next(t, manage.MethodStatusChanged)
		if n["params"].(map[string]any)["server"].(map[string]any)["runtime"].(map[string]any)["state"] == "ready" {
			break
		}
	}
	r := h.rpc(manage.MethodRestart, map[string]any{"name": "svc"})
	if r.Result["accepted"] != true || r.Result["server"].(map[string]any)["name"] != "svc" {
		t.Fatalf("%s", r.Raw)
	}
	waitFor(t, "second launch", func() bool { return len(h.Launcher.launches("svc")) == 2 && h.Launcher.running("svc") })
	// The transitions: stopped (restarting), starting (restarting), ready.
	var states []string
	for len(states) == 0 || states[len(states)-1] != "ready" {
		n := ev.next(t, manage.MethodStatusChanged)
		srv := n["params"].(map[string]any)["server"].(map[string]any)
		states = append(states, srv["runtime"].(map[string]any)["state"].(string))
	}
	if strings.Join(states, ",") != "restarting,restarting,ready" {
		t.Errorf("states = %v", states)
	}
	r = h.rpcAs("", manage.MethodRestart, map[string]any{"name": "ghost"})
	if r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("restart of an unknown server: %s", r.Raw)
	}
}

func TestUninstall(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.install(`{"mcpServers": {"svc": {"command": "npx", "args": ["svc-pkg"], "env": {"K": "v-secret"}}}}`, nil)
	if _, err := h.Gateway.Batch().Invoke(context.Background(), nil, "svc", "add", nil); err != nil {
		t.Fatal(err)
	}
	r := h.rpc(manage.MethodUninstall, map[string]any{"name": "svc"})
	if r.Result["removed"] != true || r.Result["server_id"] != "svc" || r.Result["name"] != "svc" {
		t.Fatalf("%s", r.Raw)
	}
	if h.Launcher.running("svc") {
		t.Error("the backend of an uninstalled server still runs")
	}
	if item(t, h.rpc(manage.MethodList, nil), "svc") != nil {
		t.Error("uninstalled server still listed")
	}
	if v := secretsUnder(h.Store, "installs/svc/"); len(v) != 0 {
		t.Error("the secrets of an uninstalled server are still in the keystore")
	}
	if _, ok := h.Gateway.Providers.Get("svc"); ok {
		t.Error("provider still registered")
	}
	if r := h.rpcAs("", manage.MethodUninstall, map[string]any{"name": "svc"}); r.Error == nil {
		t.Errorf("second uninstall: %s", r.Raw)
	}
}

// TestUninstallAuditedWhenTheCallerLeaves: an uninstall made is audited
// even when its caller went away during it (the request's context
// cancelled after the install was deleted); the soak counted such an
// uninstall as a lost install, and its audit entry was missing too.
func TestUninstallAuditedWhenTheCallerLeaves(t *testing.T) {
	t.Parallel()
	st := manage.NewMemStore()
	h := newHarness(t, harnessOpts{store: st})
	h.install(`{"mcpServers": {"svc": {"url": "http://h/mcp"}}}`, nil)
	ctx, cancel := context.WithCancel(auth.WithIdentity(context.Background(),
		auth.Identity{Name: "admin", Scopes: []string{auth.ScopeAdmin}}))
	defer cancel()
	st.AfterDelete = cancel
	if _, err := h.Svc.Uninstall(ctx, manage.NameParams{Name: "svc"}); err != nil {
		t.Fatal(err)
	}
	entries, err := st.RecentAudit(context.Background(), "svc", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 || entries[0].Action != "mcp/uninstall" || entries[0].Outcome != "removed" {
		t.Fatalf("audit of svc, newest first: %+v; want the uninstall first", entries)
	}
}

func TestListEverySourceFilteredByIdentity(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{servers: []*config.Server{fromConfig("cfgsrv"), fromConfig("mine-cfg")}})
	h.install(`{"mcpServers": {"mine-installed": {"url": "http://h/mcp"}, "other": {"url": "http://h/mcp"}}}`, nil)
	all := h.rpc(manage.MethodList, nil)
	var names []string
	for _, s := range all.Result["servers"].([]any) {
		m := s.(map[string]any)
		names = append(names, m["name"].(string)+":"+m["source_kind"].(string)+":"+m["runtime"].(map[string]any)["state"].(string))
	}
	if got := strings.Join(names, ","); got != "cfgsrv:config:not_started,mine-cfg:config:not_started,mine-installed:installed:not_started,other:installed:not_started" {
		t.Errorf("list = %s", got)
	}
	if all.Result["generated_at"] == "" || all.Result["snapshot_version"].(float64) < 1 {
		t.Errorf("list header = %v", all.Result)
	}
	mine := h.rpcAs("filtered", manage.MethodList, nil)
	names = nil
	for _, s := range mine.Result["servers"].([]any) {
		names = append(names, s.(map[string]any)["name"].(string))
	}
	if got := strings.Join(names, ","); got != "mine-cfg,mine-installed" {
		t.Errorf("filtered list = %s", got)
	}
	// A filtered admin cannot install outside its filter.
	r := h.rpcAs("filtered", manage.MethodInstall, map[string]any{"config_json": `{"mcpServers": {"theirs": {"url": "http://h/mcp"}}}`})
	if r.Error != nil || r.Result["status"] != "validation_error" {
		t.Errorf("install outside the filter: %s", r.Raw)
	}
}

func TestDetails(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.install(`{"mcpServers": {"svc": {"command": "npx", "args": ["svc-pkg"]}}}`, nil)
	if _, err := h.Gateway.Batch().Invoke(context.Background(), nil, "svc", "add", nil); err != nil {
		t.Fatal(err)
	}
	r := h.rpcAs("reader", manage.MethodDetails, map[string]any{"server_id": "svc"})
	if r.Error != nil {
		t.Fatal(r.Raw)
	}
	cat := r.Result["catalog"].(map[string]any)
	tools := cat["tools"].([]any)
	if len(tools) != 1 || cat["catalog_version"] == "" {
		t.Fatalf("catalog = %v", cat)
	}
	tool := tools[0].(map[string]any)
	sum := tool["input_schema_summary"].(map[string]any)
	if tool["name"] != "add" || sum["properties"].(map[string]any)["a"] != "number" || len(sum["required"].([]any)) != 2 ||
		tool["annotations"].(map[string]any)["readOnlyHint"] != true {
		t.Errorf("tool = %v", tool)
	}
	health := r.Result["health"].(map[string]any)
	if health["state"] != "ready" || health["catalog_version"] != cat["catalog_version"] {
		t.Errorf("health = %v", health)
	}
	// Seed 003's facts are all present; the unknown ones are null.
	for k, want := range map[string]any{"next_retry_at": nil, "status_reason": nil, "last_error": nil, "retry_attempt": 0.0} {
		if v, ok := health[k]; !ok || v != want {
			t.Errorf("health.%s = %v (present %v), want %v while running", k, v, ok, want)
		}
	}
	if _, ok := health["stderr_tail"]; !ok {
		t.Error("health.stderr_tail missing")
	}
	audit := r.Result["audit"].([]any)
	if len(audit) == 0 || audit[0].(map[string]any)["action"] != "mcp/install" {
		t.Errorf("audit = %v", audit)
	}
	if b, ok := r.Result["recent_bindings"].([]any); !ok || len(b) != 0 {
		t.Errorf("recent_bindings = %v", r.Result["recent_bindings"])
	}
	for _, k := range []string{"resources", "resource_templates", "prompts"} {
		if _, ok := cat[k].([]any); !ok {
			t.Errorf("catalog.%s = %v, want a list", k, cat[k])
		}
	}
}

func TestNotificationsInOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	ev := h.subscribe("reader")
	filtered := h.subscribe("filtered")

	// An MCP session with a GET stream gets them too.
	tr, err := transport.NewStreamableHTTP(h.URL+"/mcp", transport.WithContinuousListening(),
		transport.WithHTTPHeaders(map[string]string{"X-Test-Identity": "reader"}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion("2025-11-25"))
	got := make(chan mcp.JSONRPCNotification, 100)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if strings.HasPrefix(n.Method, "mcp/") {
			got <- n
		}
	})
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-06-18"
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	// The GET stream opens in the background: wait until the session is
	// registered before changing anything.
	waitFor(t, "session registered", func() bool { return h.Svc.Notifier.Sessions() > 0 })

	var seq []string
	var last uint64
	read := func(methods ...string) map[string]any {
		n := ev.next(t, methods...)
		v := version(t, n)
		if v <= last {
			t.Errorf("snapshot_version %d after %d: not increasing", v, last)
		}
		last = v
		seq = append(seq, n["method"].(string))
		return n
	}
	all := []string{manage.MethodChanged, manage.MethodStatusChanged, manage.MethodCatalogChanged}

	// Each step waits for its notifications: status changes are sent
	// from the provider's events, after the call that caused them.
	h.install(`{"mcpServers": {"svc": {"command": "npx", "args": ["svc-pkg"]}}}`, nil)
	read(all...)
	if _, err := h.Gateway.Batch().Invoke(ctx, nil, "svc", "add", nil); err != nil {
		t.Fatal(err)
	}
	read(all...)
	read(all...)
	read(all...)
	h.rpc(manage.MethodPolicySet, map[string]any{"name": "svc", "allow_implicit_invocation": true})
	read(all...)
	h.rpc(manage.MethodUninstall, map[string]any{"name": "svc"})
	n := read(all...)
	if c := n["params"].(map[string]any)["changed"].([]any)[0].(map[string]any); c["name"] != "svc" || c["action"] != "uninstalled" {
		t.Errorf("last change = %v", c)
	}
	wantSeq := []string{manage.MethodChanged, manage.MethodStatusChanged, manage.MethodStatusChanged,
		manage.MethodCatalogChanged, manage.MethodChanged, manage.MethodChanged}
	if strings.Join(seq, " ") != strings.Join(wantSeq, " ") {
		t.Errorf("sequence:\n got %v\nwant %v", seq, wantSeq)
	}
	var sessionSeq []string
	for range wantSeq {
		select {
		case n := <-got:
			sessionSeq = append(sessionSeq, n.Method)
		case <-ctxTimeout(t):
			t.Fatalf("session got only %v", sessionSeq)
		}
	}
	if strings.Join(sessionSeq, " ") != strings.Join(wantSeq, " ") {
		t.Errorf("session sequence:\n got %v\nwant %v", sessionSeq, wantSeq)
	}

	// The filtered identity may not read svc: it got nothing about it.
	select {
	case n := <-filtered.ch:
		t.Errorf("filtered subscriber got %v", n)
	default:
	}
}

func TestCatalogChangedOnlyWhenTheCatalogChanges(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	ev := h.subscribe("")
	ctx := context.Background()
	h.install(`{"mcpServers": {"svc": {"command": "npx", "args": ["svc-pkg"]}}}`, nil)
	if _, err := h.Gateway.Batch().Invoke(ctx, nil, "svc", "add", nil); err != nil {
		t.Fatal(err)
	}
	ev.next(t, manage.MethodCatalogChanged)
	untilReady := func() []string {
		var seen []string
		for {
			n := ev.next(t, manage.MethodStatusChanged, manage.MethodCatalogChanged)
			seen = append(seen, n["method"].(string))
			if n["method"] == manage.MethodStatusChanged &&
				n["params"].(map[string]any)["server"].(map[string]any)["runtime"].(map[string]any)["state"] == "ready" {
				return seen
			}
		}
	}
	h.rpc(manage.MethodRestart, map[string]any{"name": "svc"})
	for _, m := range untilReady() {
		if m == manage.MethodCatalogChanged {
			t.Error("catalog_changed on a restart with the same tools")
		}
	}
	h.Launcher.setTools([]mcpconn.Tool{{Name: "sub"}})
	h.rpc(manage.MethodRestart, map[string]any{"name": "svc"})
	untilReady()
	n := ev.next(t, manage.MethodCatalogChanged)
	if p := n["params"].(map[string]any); p["server_id"] != "svc" || p["tools_count"].(float64) != 1 {
		t.Errorf("catalog_changed = %v", p)
	}
}

func ctxTimeout(t *testing.T) <-chan struct{} {
	ctx, cancel := context.WithTimeout(context.Background(), 10e9)
	t.Cleanup(cancel)
	return ctx.Done()
}

func TestRestoreAfterRestart(t *testing.T) {
	t.Parallel()
	st := manage.NewMemStore()
	h := newHarness(t, harnessOpts{store: st})
	h.install(`{"mcpServers": {"on": {"command": "npx", "args": ["svc-pkg"], "env": {"K": "restored-secret"}}, "off": {"url": "http://h/mcp"}}}`, nil)
	h.rpc(manage.MethodPolicySet, map[string]any{"name": "off", "enabled": false})
	v1 := h.rpc(manage.MethodList, nil).Result["snapshot_version"].(float64)

	// A second gateway on the same store: what a restart sees.
	h2 := newHarness(t, harnessOpts{store: st})
	list := h2.rpc(manage.MethodList, nil)
	if v := list.Result["snapshot_version"].(float64); v < v1 {
		t.Errorf("snapshot_version went back: %v < %v", v, v1)
	}
	if it := item(t, list, "on"); it == nil || it["source_kind"] != "installed" || it["runtime"].(map[string]any)["state"] != "not_started" {
		t.Errorf("on = %v", it)
	}
	if it := item(t, list, "off"); it == nil || it["runtime"].(map[string]any)["state"] != "disabled" {
		t.Errorf("off = %v", it)
	}
	if _, err := h2.Gateway.Batch().Invoke(context.Background(), nil, "on", "add", nil); err != nil {
		t.Fatal(err)
	}
	if l := h2.Launcher.launches("on"); len(l) != 1 || l[0].Env["K"] != "restored-secret" {
		t.Errorf("restored spec = %+v", l)
	}
}

// Specs hold refs only; a re-install with a new value replaces the running
// server, which then gets the new value.
func TestReinstallRotatesSecret(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	ctx := context.Background()
	h.install(`{"mcpServers": {"svc": {"command": "npx", "args": ["svc-pkg"], "env": {"K": "first-value"}}}}`, nil)
	if _, err := h.Gateway.Batch().Invoke(ctx, nil, "svc", "add", nil); err != nil {
		t.Fatal(err)
	}
	p, _ := h.Gateway.Providers.Get("svc")
	if v := p.Spec().Env["K"]; !strings.HasPrefix(v, "${keystore:installs/svc/") {
		t.Errorf("the provider's spec holds %q, want a keystore ref", v)
	}
	h.install(`{"mcpServers": {"svc": {"command": "npx", "args": ["svc-pkg"], "env": {"K": "second-value"}}}}`, nil)
	if _, err := h.Gateway.Batch().Invoke(ctx, nil, "svc", "add", nil); err != nil {
		t.Fatal(err)
	}
	l := h.Launcher.launches("svc")
	if len(l) != 2 || l[0].Env["K"] != "first-value" || l[1].Env["K"] != "second-value" {
		t.Fatalf("launches = %d, env %v", len(l), l)
	}
	if v := secretsUnder(h.Store, "installs/svc/"); len(v) != 1 || v[0] != "second-value" {
		t.Errorf("keystore = %v, want only the new value", v)
	}
}

// A health check that finds new tools changes the catalog without a
// restart.
func TestCatalogChangedOnHealthCheck(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	ev := h.subscribe("")
	ctx := context.Background()
	h.install(`{"mcpServers": {"svc": {"command": "npx", "args": ["svc-pkg"]}}}`, nil)
	if _, err := h.Gateway.Batch().Invoke(ctx, nil, "svc", "add", nil); err != nil {
		t.Fatal(err)
	}
	first := ev.next(t, manage.MethodCatalogChanged)
	h.Launcher.setTools([]mcpconn.Tool{{Name: "a"}, {Name: "b"}})
	h.Launcher.mu.Lock()
	h.Launcher.alive["svc"].tools = h.Launcher.tools
	h.Launcher.mu.Unlock()
	if err := h.Gateway.Providers.Probe(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	n := ev.next(t, manage.MethodCatalogChanged)
	p, p0 := n["params"].(map[string]any), first["params"].(map[string]any)
	if p["tools_count"].(float64) != 2 || p["catalog_version"] == p0["catalog_version"] {
		t.Errorf("catalog_changed after the check = %v (before %v)", p, p0)
	}
}

// What a backend reports about itself never shows the secrets it got.
func TestSecretLauncherScrubs(t *testing.T) {
	t.Parallel()
	st := manage.NewMemStore()
	ctx := context.Background()
	_ = st.PutSecret(ctx, "installs/svc/a1.1", []byte("tok-SECRET-99"))
	next := &leakyLauncher{}
	l := &manage.SecretLauncher{Next: next, Secrets: st}
	spec := &config.Server{ID: "svc", Origin: config.OriginInstalled, Mode: config.ModeRemote,
		Endpoint: "https://h/mcp?api_key=${keystore:installs/svc/a1.1}"}
	b, err := l.Launch(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if next.got.Endpoint != "https://h/mcp?api_key=tok-SECRET-99" || spec.Endpoint == next.got.Endpoint {
		t.Fatalf("launched %q, shared spec %q", next.got.Endpoint, spec.Endpoint)
	}
	_, cerr := b.CallTool(ctx, "x", nil, nil)
	_, lerr := b.ListTools(ctx)
	for _, text := range []string{b.Stderr(), b.Exit(), cerr.Error(), lerr.Error()} {
		mustNotContain(t, "backend report", text, "tok-SECRET-99")
		if !strings.Contains(text, "[redacted]") {
			t.Errorf("%q: not scrubbed", text)
		}
	}
	if !errors.Is(cerr, errLeak) {
		t.Error("scrubbing lost the error's identity")
	}
	// A missing secret fails the launch, naming the field only.
	_, err = l.Launch(ctx, &config.Server{ID: "svc", Origin: config.OriginInstalled, Env: map[string]string{"K": "${keystore:installs/svc/a1.2}"}})
	if err == nil || !strings.Contains(err.Error(), "env.K") {
		t.Errorf("missing secret: %v", err)
	}
}

var errLeak = errors.New("leak")

type leakyLauncher struct{ got *config.Server }

func (l *leakyLauncher) Launch(_ context.Context, s *config.Server) (provider.Backend, error) {
	l.got = s
	return &leakyBackend{url: s.Endpoint}, nil
}

type leakyBackend struct {
	fakeBackend
	url string
}

func (b *leakyBackend) Stderr() string { return "connecting to " + b.url }
func (b *leakyBackend) Exit() string   { return "exit 1: " + b.url }
func (b *leakyBackend) CallTool(context.Context, string, any, *mcpconn.CallOptions) (*mcp.CallToolResult, error) {
	return nil, fmt.Errorf("post %s: %w", b.url, errLeak)
}
func (b *leakyBackend) ListTools(context.Context) ([]mcpconn.Tool, error) {
	return nil, fmt.Errorf("get %s: refused", b.url)
}

// Resources, templates and prompts the front door knows of a server are
// counted in mcp/list and listed in mcp/server/details.
func TestListAndDetailsCountExtras(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{servers: []*config.Server{fromConfig("cfgsrv")}})
	h.Svc.Extras = func(id string) (r, tp, p []json.RawMessage) {
		if id != "cfgsrv" {
			return nil, nil, nil
		}
		return []json.RawMessage{json.RawMessage(`{"uri":"file:///a"}`), json.RawMessage(`{"uri":"file:///b"}`)},
			[]json.RawMessage{json.RawMessage(`{"uriTemplate":"file:///{x}"}`)},
			[]json.RawMessage{json.RawMessage(`{"name":"greet"}`)}
	}
	list := h.rpc(manage.MethodList, nil)
	item := list.Result["servers"].([]any)[0].(map[string]any)
	if item["resources_count"] != float64(2) || item["resource_templates_count"] != float64(1) || item["prompts_count"] != float64(1) {
		t.Errorf("counts in %s", list.Raw)
	}
	d := h.rpc(manage.MethodDetails, map[string]any{"server_id": "cfgsrv"})
	cat := d.Result["catalog"].(map[string]any)
	if len(cat["resources"].([]any)) != 2 || len(cat["resource_templates"].([]any)) != 1 ||
		cat["prompts"].([]any)[0].(map[string]any)["name"] != "greet" {
		t.Errorf("catalog in %s", d.Raw)
	}
}

// The front door alone keeps a server's stored catalog (with the image it
// came from); this service shows the same catalog_version and writes no
// row of its own. A restart lists the tools from that row without starting
// the server.
func TestStoredCatalogHasOneOwner(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := manage.NewMemStore()
	h := newHarness(t, harnessOpts{store: st})
	h.Gateway.FrontDoor.Catalogs = st
	ev := h.subscribe("")
	h.install(`{"mcpServers": {"svc": {"command": "npx", "args": ["svc-pkg"]}}}`, nil)
	if _, err := h.Gateway.Batch().Invoke(ctx, nil, "svc", "add", nil); err != nil {
		t.Fatal(err)
	}
	changed := ev.next(t, manage.MethodCatalogChanged)["params"].(map[string]any)
	h.Gateway.FrontDoor.Refresh(ctx)
	listed := h.Gateway.FrontDoor.Details("svc")["catalog_version"]
	row, err := st.Catalog(ctx, "svc")
	if err != nil {
		t.Fatal(err)
	}
	if row.ImageDigest == "" || row.Version != listed || changed["catalog_version"] != listed {
		t.Errorf("stored row (version %q, image %q), catalog_changed %v, front door %v: want one version and the image",
			row.Version, row.ImageDigest, changed["catalog_version"], listed)
	}
	details := h.rpc(manage.MethodDetails, map[string]any{"server_id": "svc"}).Result
	if v := details["catalog"].(map[string]any)["catalog_version"]; v != listed {
		t.Errorf("details catalog_version %v, front door %v", v, listed)
	}

	h2 := newHarness(t, harnessOpts{store: st})
	h2.Gateway.FrontDoor.Catalogs = st
	h2.Gateway.FrontDoor.Refresh(ctx)
	if b := h2.Gateway.FrontDoor.Bindings("svc", 0); len(b) != 1 || b[0].Callable != "svc__add" || b[0].CatalogVersion != listed {
		t.Errorf("after a restart the front door binds %+v, want svc__add from the stored catalog %v", b, listed)
	}
	if n := len(h2.Launcher.launches("svc")); n != 0 {
		t.Errorf("the restart started svc %d times to list it", n)
	}
}

// Without a front door (egress mode) this service keeps the stored catalog
// through the gateway's writer: the same version and the image.
func TestStoredCatalogWithoutFrontDoor(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := manage.NewMemStore()
	var h *harness
	o := manage.Options{Install: clientconfig.Options{Runtimes: map[string]config.Runtime{"npx": {Image: "node:22", Network: "bridge"}}, Execution: config.Default().Execution},
		SaveCatalog: func(ctx context.Context, id string, tools []mcpconn.Tool) error {
			return frontdoor.CatalogSaver(st, h.Gateway.Providers)(ctx, id, tools)
		}}
	h = newHarness(t, harnessOpts{store: st, opts: &o})
	ev := h.subscribe("")
	h.install(`{"mcpServers": {"svc": {"command": "npx", "args": ["svc-pkg"]}}}`, nil)
	if _, err := h.Gateway.Batch().Invoke(ctx, nil, "svc", "add", nil); err != nil {
		t.Fatal(err)
	}
	changed := ev.next(t, manage.MethodCatalogChanged)["params"].(map[string]any)
	row, err := st.Catalog(ctx, "svc")
	if err != nil {
		t.Fatal(err)
	}
	if row.ImageDigest != "npm:svc-pkg@latest" || row.Version != changed["catalog_version"] {
		t.Errorf("stored row (version %q, image %q), catalog_changed %v", row.Version, row.ImageDigest, changed["catalog_version"])
	}
}
