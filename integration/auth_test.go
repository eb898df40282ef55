package integration

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
)

// TestClientTokenNotForwarded: a gateway with tokens on loopback needs
// them, and the client's token never reaches a provider; the provider gets
// only the headers configured for it.
func TestClientTokenNotForwarded(t *testing.T) {
	const clientTok = "hgr_client-token-not-for-providers"
	var mu sync.Mutex
	var seen []http.Header
	prov := server.NewMCPServer("remote", "1")
	prov.AddTool(mcp.NewTool("ping"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("pong"), nil
	})
	streamable := server.NewStreamableHTTPServer(prov)
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		streamable.ServeHTTP(w, r)
	}))
	t.Cleanup(remote.Close)

	g := startGateway(t, `
mcp_servers:
  remote:
    mode: remote
    endpoint: `+remote.URL+`/mcp
    headers: {X-Provider-Key: provider-secret}
auth:
  tokens:
    - {name: agent, token_sha256: "`+auth.HashHex(clientTok)+`", scopes: [hangar:read, hangar:call]}
`)
	// Loopback with tokens configured: a client without one is refused.
	anon, err := transport.NewStreamableHTTP(g.MCPURL)
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(anon)
	if err := c.Start(t.Context()); err == nil {
		req := mcp.InitializeRequest{}
		if _, err := c.Initialize(t.Context(), req); err == nil {
			t.Fatal("a client without a token was served")
		}
	}
	_ = c.Close()

	tr, err := transport.NewStreamableHTTP(g.MCPURL, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + clientTok}))
	if err != nil {
		t.Fatal(err)
	}
	s := startSession(t, mcpclient.NewClient(tr))
	if r := s.callOne(t, "remote", "ping", nil); r["result"] != "pong" {
		t.Fatalf("call through the gateway: %v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the provider saw no request")
	}
	for _, h := range seen {
		if h.Get("X-Provider-Key") != "provider-secret" {
			t.Errorf("configured header missing: %v", h)
		}
		for k, vs := range h {
			for _, v := range vs {
				if v == "Bearer "+clientTok || v == clientTok {
					t.Errorf("the client's token reached the provider in %s", k)
				}
			}
		}
	}
}
