package gateway

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/call"
	hangarcatalog "github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/group"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/registry"
)

// hotFake is a HotLoader that records its calls and answers canned results.
type hotFake struct {
	mu      sync.Mutex
	loads   []hotLoadCall
	unloads []string
	load    LoadResult
	unload  UnloadResult
	runtime []RuntimeServer
}

type hotLoadCall struct {
	name        string
	force       bool
	allow, deny []string
}

func (f *hotFake) Load(_ context.Context, _ call.Progress, name string, force bool, allow, deny []string) LoadResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loads = append(f.loads, hotLoadCall{name, force, allow, deny})
	return f.load
}

func (f *hotFake) Unload(_ context.Context, id string) UnloadResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unloads = append(f.unloads, id)
	return f.unload
}

func (f *hotFake) Runtime() []RuntimeServer { return f.runtime }

// hotClient serves only the hot-loading tools over loader, in process, the
// way MCPServer serves them.
func hotClient(t *testing.T, loader func() HotLoader) *client.Client {
	t.Helper()
	s := server.NewMCPServer("hangar-test", "0", server.WithToolCapabilities(false))
	for _, tool := range hotloadTools(loader) {
		s.AddTool(preencoded(tool.Tool), tool.Handler)
	}
	c, err := client.NewInProcessClient(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "t", Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// hotCall calls a tool; the map is its JSON answer, text its raw text.
func hotCall(t *testing.T, c *client.Client, name string, a map[string]any) (m map[string]any, isErr bool, text string) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = a
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	text = textOf(res)
	_ = json.Unmarshal([]byte(text), &m)
	return m, res.IsError, text
}

func TestHotloadOff(t *testing.T) {
	t.Parallel()
	c := hotClient(t, func() HotLoader { return nil })
	for _, tt := range []struct {
		tool string
		a    map[string]any
		want map[string]any
	}{
		{"hangar_load", map[string]any{"name": "filesystem"}, map[string]any{"status": "failed", "message": errHotLoadOff}},
		{"hangar_load", nil, map[string]any{"status": "failed", "message": errHotLoadOff}},
		{"hangar_unload", map[string]any{"mcp_server": "fs"}, map[string]any{"status": "failed", "mcp_server": "fs", "message": errHotLoadOff}},
	} {
		m, isErr, text := hotCall(t, c, tt.tool, tt.a)
		if isErr || !reflect.DeepEqual(m, tt.want) {
			t.Errorf("%s(%v) = %s (error %v), want %v", tt.tool, tt.a, text, isErr, tt.want)
		}
	}
	if errHotLoadOff != "hot-loading is not configured (set registry.url or registry.catalog_file)" {
		t.Errorf("message changed: %q", errHotLoadOff)
	}
}

func TestHotloadTools(t *testing.T) {
	t.Parallel()
	f := &hotFake{
		load:   LoadResult{Status: registry.StatusLoaded, MCPServer: "filesystem", Tools: []string{"read_file", "read_directory"}, Message: "m"},
		unload: UnloadResult{Status: registry.StatusUnloaded, MCPServer: "filesystem", Message: "MCP Server unloaded", LifetimeSeconds: 3600.5},
	}
	c := hotClient(t, func() HotLoader { return f })

	m, isErr, text := hotCall(t, c, "hangar_load", map[string]any{"name": "filesystem", "allow_tools": []any{"read_*"}})
	want := map[string]any{"status": "loaded", "mcp_server": "filesystem", "tools": []any{"read_file", "read_directory"}, "message": "m"}
	if isErr || !reflect.DeepEqual(m, want) {
		t.Errorf("hangar_load = %s, want %v", text, want)
	}
	hotCall(t, c, "hangar_load", map[string]any{"name": "x", "force_unverified": true, "deny_tools": []any{"rm*", "dd"}, "allow_tools": nil})
	hotCall(t, c, "hangar_load", map[string]any{"name": "y", "force_unverified": "true"})
	wantCalls := []hotLoadCall{
		{name: "filesystem", allow: []string{"read_*"}},
		{name: "x", force: true, deny: []string{"rm*", "dd"}},
		{name: "y", force: true},
	}
	if !reflect.DeepEqual(f.loads, wantCalls) {
		t.Errorf("Load calls = %+v, want %+v", f.loads, wantCalls)
	}

	m, isErr, text = hotCall(t, c, "hangar_unload", map[string]any{"mcp_server": "filesystem"})
	want = map[string]any{"status": "unloaded", "mcp_server": "filesystem", "message": "MCP Server unloaded", "lifetime_seconds": 3600.5}
	if isErr || !reflect.DeepEqual(m, want) || !slices.Equal(f.unloads, []string{"filesystem"}) {
		t.Errorf("hangar_unload = %s (calls %v), want %v", text, f.unloads, want)
	}

	// Bad arguments are tool errors and never reach the loader.
	for _, tt := range []struct {
		tool string
		a    map[string]any
		want string
	}{
		{"hangar_load", map[string]any{}, "name"},
		{"hangar_load", map[string]any{"name": 3}, "name"},
		{"hangar_load", map[string]any{"name": "x", "allow_tools": "read_*"}, "allow_tools must be a list of strings"},
		{"hangar_load", map[string]any{"name": "x", "deny_tools": []any{"a", 1}}, "deny_tools[1] must be a string"},
		{"hangar_load", map[string]any{"name": "x", "force_unverified": "sure"}, "force_unverified"},
		{"hangar_unload", map[string]any{}, "mcp_server"},
	} {
		_, isErr, text := hotCall(t, c, tt.tool, tt.a)
		if !isErr || !strings.Contains(text, tt.want) {
			t.Errorf("%s(%v) = %q (error %v), want a tool error about %s", tt.tool, tt.a, text, isErr, tt.want)
		}
	}
	if len(f.loads) != 3 || len(f.unloads) != 1 {
		t.Errorf("bad arguments reached the loader: %d loads, %d unloads", len(f.loads), len(f.unloads))
	}
}

func TestHotloadToolSchemas(t *testing.T) {
	t.Parallel()
	tools := hotloadTools(func() HotLoader { return nil })
	if len(tools) != 2 || tools[0].Tool.Name != "hangar_load" || tools[1].Tool.Name != "hangar_unload" {
		t.Fatalf("tools = %+v", tools)
	}
	load := tools[0].Tool.InputSchema
	if !slices.Equal(load.Required, []string{"name"}) {
		t.Errorf("hangar_load required = %v", load.Required)
	}
	for _, p := range []string{"name", "force_unverified", "allow_tools", "deny_tools"} {
		if _, ok := load.Properties[p]; !ok {
			t.Errorf("hangar_load has no parameter %s", p)
		}
	}
	if d := load.Properties["force_unverified"].(map[string]any)["default"]; d != false {
		t.Errorf("force_unverified default = %v", d)
	}
	if items := load.Properties["allow_tools"].(map[string]any)["items"]; !reflect.DeepEqual(items, map[string]any{"type": "string"}) {
		t.Errorf("allow_tools items = %v", items)
	}
	if un := tools[1].Tool.InputSchema; !slices.Equal(un.Required, []string{"mcp_server"}) || len(un.Properties) != 1 {
		t.Errorf("hangar_unload schema = %+v", un)
	}
}

func TestRuntimeEntries(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600))
	f := &hotFake{runtime: []RuntimeServer{
		{ID: "fs", Name: "io.github.x/fs", State: "ready", Source: "registry:io.github.x/fs", Verified: true, Ephemeral: true, LoadedAt: at, LifetimeSeconds: 12.5},
		{ID: "tk", Name: "io.github.y/tk", State: "cold", Source: "catalog:io.github.y/tk", Ephemeral: true, LoadedAt: at, LifetimeSeconds: 3},
	}}
	got := runtimeList(f, "")
	want := []map[string]any{
		{"mcp_server": "fs", "state": "ready", "source": "registry:io.github.x/fs", "verified": true, "ephemeral": true,
			"loaded_at": "2026-01-02T02:04:05.0000006Z", "lifetime_seconds": 12.5},
		{"mcp_server": "tk", "state": "cold", "source": "catalog:io.github.y/tk", "verified": false, "ephemeral": true,
			"loaded_at": "2026-01-02T02:04:05.0000006Z", "lifetime_seconds": 3.0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("runtimeList = %v\n want %v", got, want)
	}
	if got := runtimeList(f, "cold"); len(got) != 1 || got[0]["mcp_server"] != "tk" {
		t.Errorf("runtimeList(cold) = %v", got)
	}
	if got := runtimeList(nil, ""); got == nil || len(got) != 0 {
		t.Errorf("runtimeList(nil) = %#v, want an empty list", got)
	}

	list, healthy, lines := runtimeStatus(f)
	wantStatus := []map[string]any{
		{"id": "fs", "indicator": "[READY]", "state": "ready", "source": "registry:io.github.x/fs", "verified": true},
		{"id": "tk", "indicator": "[COLD]", "state": "cold", "source": "catalog:io.github.y/tk", "verified": false},
	}
	if !reflect.DeepEqual(list, wantStatus) || healthy != 1 {
		t.Errorf("runtimeStatus = %v, %d", list, healthy)
	}
	if want := []string{"[READY] fs (hot-loaded, registry:io.github.x/fs, verified)", "[COLD] tk (hot-loaded, catalog:io.github.y/tk, unverified)"}; !slices.Equal(lines, want) {
		t.Errorf("lines = %q, want %q", lines, want)
	}
	if list, healthy, lines := runtimeStatus(nil); list == nil || len(list) != 0 || healthy != 0 || lines != nil {
		t.Errorf("runtimeStatus(nil) = %v %d %v", list, healthy, lines)
	}
}

// hotBackend and hotLauncher run providers in memory.
type hotBackend struct {
	done chan struct{}
	once sync.Once
}

func (b *hotBackend) ListTools(context.Context) ([]mcpconn.Tool, error) {
	return []mcpconn.Tool{{Name: "echo"}, {Name: "env"}}, nil
}
func (b *hotBackend) CallTool(context.Context, string, any, *mcpconn.CallOptions) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText("ok"), nil
}
func (b *hotBackend) Done() <-chan struct{}      { return b.done }
func (b *hotBackend) Exit() string               { return "exit 0" }
func (b *hotBackend) Stderr() string             { return "" }
func (b *hotBackend) ContainerID() string        { return "" }
func (b *hotBackend) Stop(context.Context) error { b.once.Do(func() { close(b.done) }); return nil }

type hotLauncher struct{}

func (hotLauncher) Launch(context.Context, *config.Server) (provider.Backend, error) {
	return &hotBackend{done: make(chan struct{})}, nil
}

// The tools over the real loader, a catalog file and the provider manager.
func TestHotloadEndToEnd(t *testing.T) {
	t.Parallel()
	catalog := filepath.Join(t.TempDir(), "catalog.json")
	doc := `[{"name": "io.github.acme/testkit", "description": "test kit",
	  "packages": [{"registryType": "oci", "identifier": "mcp-hangar/testkit", "version": "dev", "transport": {"type": "stdio"}}]}]`
	if err := os.WriteFile(catalog, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Registry{CatalogFile: catalog, VerifiedNamespaces: []string{"io.github.acme/"}, MaxHotLoaded: 2, IdleTTL: time.Minute}
	m := provider.NewManager(hotLauncher{}, provider.Options{})
	cat := hangarcatalog.New(hangarcatalog.Apply{Providers: m, Groups: group.NewRegistry(m, group.Options{})}, nil)
	loader := registry.NewLoader(cfg, registry.NewClient(cfg, nil), registry.Providers{M: m, Catalog: cat}, nil)
	c := hotClient(t, func() HotLoader { return loader })

	ans, isErr, text := hotCall(t, c, "hangar_load", map[string]any{"name": "testkit", "deny_tools": []any{"env"}})
	if isErr || ans["status"] != "loaded" || ans["mcp_server"] != "testkit" || !reflect.DeepEqual(ans["tools"], []any{"echo"}) {
		t.Fatalf("hangar_load = %s", text)
	}
	p, found := m.Get("testkit")
	if !found || p.State() != provider.Ready || p.Spec().IdleTTL != time.Minute {
		t.Fatalf("provider = %v", p)
	}
	rl := runtimeList(loader, "")
	if len(rl) != 1 || rl[0]["mcp_server"] != "testkit" || rl[0]["ephemeral"] != true || rl[0]["verified"] != true ||
		rl[0]["source"] != "catalog:io.github.acme/testkit" || rl[0]["state"] != "ready" {
		t.Errorf("runtime = %v", rl)
	}
	ans, _, text = hotCall(t, c, "hangar_load", map[string]any{"name": "nothing"})
	if ans["status"] != "not_found" || !strings.Contains(hotStr(ans, "message"), catalog) {
		t.Errorf("hangar_load(nothing) = %s", text)
	}
	ans, _, text = hotCall(t, c, "hangar_unload", map[string]any{"mcp_server": "testkit"})
	if ans["status"] != "unloaded" || ans["lifetime_seconds"] == nil {
		t.Errorf("hangar_unload = %s", text)
	}
	if _, found := m.Get("testkit"); found {
		t.Error("unloaded provider still registered")
	}
	ans, _, text = hotCall(t, c, "hangar_unload", map[string]any{"mcp_server": "testkit"})
	if ans["status"] != "not_hot_loaded" {
		t.Errorf("second hangar_unload = %s", text)
	}
}

func hotStr(m map[string]any, k string) string { s, _ := m[k].(string); return s }
