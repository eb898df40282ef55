package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The official go-sdk client (v1.8) against a real gateway, on both
// protocol versions.

var protocols = []string{mcp.LATEST_LEGACY_PROTOCOL_VERSION, mcp.LATEST_PROTOCOL_VERSION}

// dialSDK connects a go-sdk client speaking version.
func dialSDK(t testing.TB, url, version string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "compat", Version: "1"}, opts)
	s, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: url}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("go-sdk connect on %s: %v", version, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if got := s.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("the session speaks %q, want %q", got, version)
	}
	return s
}

// awaitSignal waits up to within for one value on c.
func awaitSignal(c <-chan struct{}, within time.Duration) bool {
	select {
	case <-c:
		return true
	case <-time.After(within):
		return false
	}
}

func drainSignals(c chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// TestCompatSDKListChangedOnHotload: hangar_load and hangar_unload reach a
// go-sdk client's tools/list_changed handler within a second, on 2026-07-28
// through its subscriptions/listen stream.
func TestCompatSDKListChangedOnHotload(t *testing.T) {
	catalog := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(catalog, []byte(hotloadCatalog), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, fmt.Sprintf(`
registry:
  url: ""
  catalog_file: %q
  verified_namespaces: ["io.github.mcp-hangar/"]
`, catalog))
	for _, version := range protocols {
		t.Run(version, func(t *testing.T) {
			changed := make(chan struct{}, 16)
			s := dialSDK(t, g.MCPURL, version, &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
				changed <- struct{}{}
			}})
			if _, err := s.ListTools(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "hangar_load", Arguments: map[string]any{"name": "testkit"}})
			if err != nil || res.IsError {
				t.Fatalf("hangar_load: %v %+v", err, res)
			}
			if !awaitSignal(changed, 2*time.Second) {
				t.Fatal("no tools/list_changed after hangar_load")
			}
			id, _ := res.StructuredContent.(map[string]any)["mcp_server"].(string)
			drainSignals(changed)
			if res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "hangar_unload", Arguments: map[string]any{"mcp_server": id}}); err != nil || res.IsError {
				t.Fatalf("hangar_unload(%s): %v %+v", id, err, res)
			}
			if !awaitSignal(changed, 2*time.Second) {
				t.Fatal("no tools/list_changed after hangar_unload")
			}
		})
	}
}
