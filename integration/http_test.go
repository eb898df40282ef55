package integration

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// The gateway's own tools.
var hangarTools = []string{
	"hangar_call", "hangar_delete_continuation", "hangar_details", "hangar_fetch_continuation",
	"hangar_health", "hangar_list", "hangar_start", "hangar_status", "hangar_stop", "hangar_tools", "hangar_warm",
}

// Clients of both protocol eras can use the gateway's /mcp endpoint.
func TestLegacyAndModernClients(t *testing.T) {
	t.Parallel()
	g := startGateway(t, mathConfig)

	for _, tc := range []struct {
		name string
		opts []mcpclient.ClientOption
		want string // negotiated protocol version, "" for any
	}{
		{name: "legacy", opts: []mcpclient.ClientOption{mcpclient.WithProtocolVersion("2025-11-25")}, want: "2025-11-25"},
		{name: "default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := connect(t, g.MCPURL, tc.opts...)
			t.Logf("negotiated protocol %s (initialize answer %s)", s.ProtocolVersion(), s.init.ProtocolVersion)
			if tc.want != "" && s.ProtocolVersion() != tc.want {
				t.Errorf("negotiated protocol %q, want %q", s.ProtocolVersion(), tc.want)
			}

			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			res, err := s.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			for _, want := range hangarTools {
				if !slices.Contains(names, want) {
					t.Errorf("tools/list = %v, lacks %s", names, want)
				}
			}

			l := s.mustCall(t, "hangar_list", nil)
			servers, _ := l["mcp_servers"].([]any)
			if len(servers) != 1 {
				t.Fatalf("hangar_list = %v, want the one math server", l)
			}
			m, _ := servers[0].(map[string]any)
			if str(m, "mcp_server") != "math" || str(m, "state") != "cold" {
				t.Errorf("hangar_list server = %v, want math, cold", m)
			}
		})
	}
	if n := countContainers(t, g.Instance, ""); n != 0 {
		t.Errorf("%d containers after listing only, want 0", n)
	}
}

// /healthz answers, and browser requests from foreign origins are refused.
func TestHealthzAndOrigin(t *testing.T) {
	t.Parallel()
	g := startGateway(t, mathConfig)
	hc := &http.Client{Timeout: 10 * time.Second}

	resp, err := hc.Get(g.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz = %d, want 200", resp.StatusCode)
	}

	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"origin-test","version":"0"}}}`
	post := func(origin string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, g.MCPURL, strings.NewReader(initialize))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Origin", origin)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("POST /mcp with Origin %s: %v", origin, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, string(body)
	}

	if code, body := post("https://evil.example"); code != http.StatusForbidden {
		t.Errorf("POST /mcp with Origin https://evil.example = %d (%s), want 403", code, body)
	}
	code, body := post("http://localhost:3000")
	if code == http.StatusForbidden {
		t.Errorf("POST /mcp with Origin http://localhost:3000 = 403 (%s), want it allowed", body)
	} else if code != http.StatusOK {
		t.Errorf("POST /mcp with Origin http://localhost:3000 = %d (%s), want 200", code, body)
	}
}
