package integration

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestHostHeaderRebinding: a gateway listening on loopback answers a
// request only under a loopback name or one server.allowed_hosts lists,
// on every path but /healthz: a DNS-rebinding page (Host: its own name)
// gets 421 and an audit entry, on /mcp, the dashboard and its data,
// /metrics, /events and the OAuth metadata. mcp-go's and the go-sdk
// client work under localhost, on both protocol versions.
func TestHostHeaderRebinding(t *testing.T) {
	g := startGateway(t, "server: {allowed_hosts: [hangar.test]}\nmcp_servers: {}\n")
	port := g.URL[strings.LastIndex(g.URL, ":")+1:]
	do := func(t *testing.T, method, path, host string) int {
		t.Helper()
		var body *strings.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		} else {
			body = strings.NewReader("")
		}
		ctx, cancel := context.WithTimeout(t.Context(), dockerTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, g.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	paths := []struct{ method, path string }{
		{http.MethodPost, "/mcp"}, {http.MethodGet, "/ui/"}, {http.MethodGet, "/ui/api/servers"},
		{http.MethodGet, "/ui/api/refusals"}, {http.MethodGet, "/metrics"},
		{http.MethodGet, "/.well-known/oauth-protected-resource"},
	}
	refused := 0
	for _, host := range []string{"rebind.attacker.example", "rebind.attacker.example:" + port, "192.0.2.2:" + port} {
		for _, p := range paths {
			if code := do(t, p.method, p.path, host); code != http.StatusMisdirectedRequest {
				t.Errorf("%s %s with Host %s = %d, want 421", p.method, p.path, host, code)
			}
			refused++
		}
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "hangar.test:" + port, "HANGAR.test"} {
		for _, p := range paths {
			if code := do(t, p.method, p.path, host); code == http.StatusMisdirectedRequest || code >= 500 {
				t.Errorf("%s %s with Host %s = %d", p.method, p.path, host, code)
			}
		}
	}
	if code := do(t, http.MethodGet, "/healthz", "rebind.attacker.example"); code != http.StatusOK {
		t.Errorf("/healthz under another name = %d, want 200", code)
	}

	t.Run("refusals are audited", func(t *testing.T) {
		// The audit writer batches its writes.
		n := 0
		waitFor(t, 10*time.Second, "the refusals in the audit trail", func() bool {
			es, err := g.App.Store.RecentAudit(t.Context(), "", 200)
			if err != nil {
				t.Fatal(err)
			}
			n = 0
			for _, e := range es {
				if e.Reason == "host_not_allowed" && !e.Allowed && strings.Contains(e.Tool, "/") {
					n++
				}
			}
			return n >= refused
		})
		if n != refused {
			t.Errorf("%d audit entries host_not_allowed, want %d", n, refused)
		}
	})

	local := "http://localhost:" + port + "/mcp"
	t.Run("mcp-go client under localhost", func(t *testing.T) {
		s := connect(t, local)
		if _, err := s.ListTools(t.Context(), mcp.ListToolsRequest{}); err != nil {
			t.Fatal(err)
		}
	})
	for _, version := range protocols {
		t.Run("go-sdk client under localhost "+version, func(t *testing.T) {
			s := dialSDK(t, local, version, nil)
			if _, err := s.ListTools(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("clients under another name are refused", func(t *testing.T) {
		u, _ := url.Parse(g.MCPURL)
		u.Host = "rebind.attacker.example:" + port
		tr := &http.Transport{DialContext: (&hostDialer{to: strings.TrimPrefix(g.URL, "http://")}).dial}
		hc := &http.Client{Transport: tr}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, u.String(), strings.NewReader(`{}`))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("a client resolving rebind.attacker.example to the gateway got %d, want 421", resp.StatusCode)
		}
	})
}

// hostDialer connects every dial to one address, as a name rebound to the
// gateway's address would.
type hostDialer struct{ to string }

func (d *hostDialer) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	var nd net.Dialer
	return nd.DialContext(ctx, network, d.to)
}
