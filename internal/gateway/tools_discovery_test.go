package gateway

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/provider"
)

type fakeDiscovery struct {
	approved []string
}

var when = time.Date(2026, 1, 15, 10, 30, 0, 0, time.FixedZone("CET", 3600))

func (f *fakeDiscovery) Scan(context.Context) discovery.ScanResult {
	return discovery.ScanResult{DiscoveredCount: 5, RegisteredCount: 3, UpdatedCount: 1, QuarantinedCount: 1,
		Duration: 1250 * time.Millisecond, SourceResults: map[string]int{"docker": 3, "filesystem": 2}}
}

func (f *fakeDiscovery) Pending() []discovery.PendingEntry {
	return []discovery.PendingEntry{
		{Name: "new-api", Source: "docker", Mode: "remote", DiscoveredAt: when, Fingerprint: "abc123", Status: discovery.StatusPending},
		{Name: "pool-1", Source: "docker", Mode: "remote", DiscoveredAt: when, Fingerprint: "def456", Status: discovery.StatusRefused,
			Reason: "mcp server id pool-1 is reserved: it is a member of group pool"},
	}
}

func (f *fakeDiscovery) Quarantined() []discovery.QuarantineEntry {
	return []discovery.QuarantineEntry{{Name: "broken-api", Source: "docker", Reason: "health_check_failed: refused", QuarantineTime: when}}
}

func (f *fakeDiscovery) Approve(_ context.Context, name string) discovery.ApproveResult {
	if name != "new-api" {
		return discovery.ApproveResult{Server: name, Error: "not found in pending or quarantine: " + name}
	}
	f.approved = append(f.approved, name)
	return discovery.ApproveResult{Approved: true, Server: name, Status: "registered"}
}

func (f *fakeDiscovery) Sources() []discovery.SourceStatus {
	return []discovery.SourceStatus{
		{SourceType: "docker", Mode: "additive", IsHealthy: true, IsEnabled: true, LastDiscovery: when, ServersCount: 3},
		{SourceType: "filesystem", Mode: "authoritative", IsEnabled: true, ErrorMessage: "read directory: no such file"},
	}
}

func testGateway(d DiscoveryService) *Gateway {
	return &Gateway{Discovery: d, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// callTool runs a discovery tool the way the MCP server would.
func callTool(t *testing.T, g *Gateway, name string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	for _, st := range g.discoveryTools() {
		if st.Tool.Name != name {
			continue
		}
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		res, err := st.Handler(t.Context(), req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			return map[string]any{"text": textOf(res)}, true
		}
		var out map[string]any
		raw, _ := res.StructuredContent.(encoded)
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, raw, err)
		}
		var fromText map[string]any
		if err := json.Unmarshal([]byte(textOf(res)), &fromText); err != nil {
			t.Fatalf("%s: text content is not the same JSON: %v", name, err)
		}
		return out, false
	}
	t.Fatalf("no tool %s", name)
	return nil, false
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestDiscoveryToolsDeclared(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g := New(config.Default(), provider.NewManager(nil, provider.Options{Log: log}), nil, nil, log)
	var names []string
	for _, st := range g.tools() {
		names = append(names, st.Tool.Name)
	}
	for _, want := range []string{"hangar_discover", "hangar_discovered", "hangar_quarantine", "hangar_approve", "hangar_sources"} {
		if !slices.Contains(names, want) {
			t.Errorf("tool %s not declared", want)
		}
	}
	for _, st := range g.discoveryTools() {
		props := st.Tool.InputSchema.Properties
		switch st.Tool.Name {
		case "hangar_approve":
			if _, ok := props["mcp_server"]; !ok || !slices.Equal(st.Tool.InputSchema.Required, []string{"mcp_server"}) {
				t.Errorf("hangar_approve schema %+v", st.Tool.InputSchema)
			}
		default:
			if len(props) != 0 {
				t.Errorf("%s takes no parameters, has %v", st.Tool.Name, props)
			}
		}
	}
}

func TestDiscoveryToolsWhenOff(t *testing.T) {
	t.Parallel()
	g := testGateway(nil)
	for _, name := range []string{"hangar_discover", "hangar_discovered", "hangar_quarantine", "hangar_approve", "hangar_sources"} {
		out, isErr := callTool(t, g, name, map[string]any{"mcp_server": "x"})
		if isErr || jsonOf(out) != `{"error":"Discovery not configured. Enable discovery in config.yaml"}` {
			t.Errorf("%s: %v (tool error %v)", name, out, isErr)
		}
	}
}

func TestDiscoveryToolsAnswers(t *testing.T) {
	t.Parallel()
	f := &fakeDiscovery{}
	g := testGateway(f)

	out, _ := callTool(t, g, "hangar_discover", nil)
	if got := jsonOf(out); got != `{"deregistered_count":0,"discovered_count":5,"duration_ms":1250,"error_count":0,`+
		`"quarantined_count":1,"registered_count":3,"source_results":{"docker":3,"filesystem":2},"updated_count":1}` {
		t.Errorf("hangar_discover = %s", got)
	}

	out, _ = callTool(t, g, "hangar_discovered", nil)
	if got := jsonOf(out); got != `{"pending":[{"discovered_at":"2026-01-15T09:30:00Z","fingerprint":"abc123","mode":"remote","name":"new-api","source":"docker","status":"pending","tools":[]},`+
		`{"discovered_at":"2026-01-15T09:30:00Z","fingerprint":"def456","mode":"remote","name":"pool-1","reason":"mcp server id pool-1 is reserved: it is a member of group pool","source":"docker","status":"refused","tools":[]}]}` {
		t.Errorf("hangar_discovered = %s", got)
	}

	out, _ = callTool(t, g, "hangar_quarantine", nil)
	if got := jsonOf(out); got != `{"quarantined":[{"name":"broken-api","quarantine_time":"2026-01-15T09:30:00Z","reason":"health_check_failed: refused","source":"docker"}]}` {
		t.Errorf("hangar_quarantine = %s", got)
	}

	out, _ = callTool(t, g, "hangar_approve", map[string]any{"mcp_server": "new-api"})
	if got := jsonOf(out); got != `{"approved":true,"mcp_server":"new-api","status":"registered"}` {
		t.Errorf("hangar_approve = %s", got)
	}
	out, _ = callTool(t, g, "hangar_approve", map[string]any{"mcp_server": "ghost"})
	if got := jsonOf(out); got != `{"approved":false,"error":"not found in pending or quarantine: ghost","mcp_server":"ghost"}` {
		t.Errorf("hangar_approve unknown = %s", got)
	}
	if out, isErr := callTool(t, g, "hangar_approve", map[string]any{}); !isErr {
		t.Errorf("hangar_approve without mcp_server = %v", out)
	}
	if !slices.Equal(f.approved, []string{"new-api"}) {
		t.Errorf("approved %v", f.approved)
	}

	out, _ = callTool(t, g, "hangar_sources", nil)
	if got := jsonOf(out); got != `{"sources":[`+
		`{"error_message":null,"is_enabled":true,"is_healthy":true,"last_discovery":"2026-01-15T09:30:00Z","mcp_servers_count":3,"mode":"additive","source_type":"docker"},`+
		`{"error_message":"read directory: no such file","is_enabled":true,"is_healthy":false,"last_discovery":null,"mcp_servers_count":0,"mode":"authoritative","source_type":"filesystem"}]}` {
		t.Errorf("hangar_sources = %s", got)
	}
}

func TestDiscoveryToolsEmptyLists(t *testing.T) {
	t.Parallel()
	s := discovery.New(config.Default().Discovery, nil, nil, nil, nil)
	g := testGateway(s)
	for name, want := range map[string]string{
		"hangar_discovered": `{"pending":[]}`,
		"hangar_quarantine": `{"quarantined":[]}`,
		"hangar_sources":    `{"sources":[]}`,
	} {
		if out, _ := callTool(t, g, name, nil); jsonOf(out) != want {
			t.Errorf("%s = %s, want %s", name, jsonOf(out), want)
		}
	}
	out, _ := callTool(t, g, "hangar_discover", nil)
	if jsonOf(out["source_results"]) != `{}` || out["discovered_count"] != float64(0) {
		t.Errorf("hangar_discover with no sources = %v", out)
	}
}
