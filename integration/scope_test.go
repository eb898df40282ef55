package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/app"
	"github.com/mcp-hangar/hangar/internal/auth"
)

// TestScopeEndToEnd: the whole gateway (app wiring, real containers): a
// servers-limited token lists none of another server's resources, and a
// config reload that removes the token ends its /events and GET /mcp
// streams within a second and audits its next request as refused.
func TestScopeEndToEnd(t *testing.T) {
	const adminTok, agentTok = "hgr_admin-token-for-scope-e2e", "hgr_agent-token-for-scope-e2e"
	conf := func(withAgent bool) string {
		agent := ""
		if withAgent {
			agent = `    - {name: agent, token_sha256: "` + auth.HashHex(agentTok) + `", scopes: [hangar:read, hangar:call], servers: [kit]}` + "\n"
		}
		return `
mcp_servers:
  kit:
    mode: docker
    image: mcp-hangar/testkit:dev
    start_timeout_s: 30
  everything:
    mode: docker
    image: mcp-hangar/everything:dev
    start_timeout_s: 30
auth:
  tokens:
    - {name: admin, token_sha256: "` + auth.HashHex(adminTok) + `", scopes: [hangar:read, hangar:call, hangar:admin]}
` + agent
	}
	path := writeConfig(t, conf(true))
	g := startGatewayFile(t, path, app.Options{})
	admin := newRawClientWith(t, g.MCPURL, adminTok)
	for _, id := range []string{"kit", "everything"} {
		admin.rpc(t, "tools/call", fmt.Sprintf(`{"name":"hangar_start","arguments":{"mcp_server":%q}}`, id))
	}
	uris := func(c *rawClient) []string {
		var res struct {
			Resources []struct {
				URI string `json:"uri"`
			} `json:"resources"`
		}
		if err := json.Unmarshal(c.rpc(t, "resources/list", `{}`), &res); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range res.Resources {
			out = append(out, r.URI)
		}
		return out
	}
	waitFor(t, 30*time.Second, "everything's resources listed for the admin", func() bool { return len(uris(admin)) > 0 })
	agent := newRawClientWith(t, g.MCPURL, agentTok)
	if got := uris(agent); len(got) != 0 {
		t.Errorf("the agent limited to kit lists everything's resources: %v", got)
	}

	open := func(method, path string, session string) <-chan struct{} {
		req, _ := http.NewRequestWithContext(t.Context(), method, g.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+agentTok)
		req.Header.Set("Accept", "text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
		return done
	}
	events := open(http.MethodGet, "/events", "")
	stream := open(http.MethodGet, "/mcp", agent.session)

	if err := os.WriteFile(path, []byte(conf(false)), 0o600); err != nil {
		t.Fatal(err)
	}
	admin.rpc(t, "tools/call", `{"name":"hangar_reload_config","arguments":{}}`)
	reloaded := time.Now() // the token is gone by the time the reload answers
	for name, done := range map[string]<-chan struct{}{"/events": events, "GET /mcp": stream} {
		select {
		case <-done:
			if late := time.Since(reloaded); late > time.Second {
				t.Errorf("%s ended %s after the reload, want within 1s", name, late)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s still open 10s after the token was removed", name)
		}
	}
	if a := agent.post(t, "tools/list", `{}`); a.Status != http.StatusUnauthorized {
		t.Errorf("the removed token: HTTP %d", a.Status)
	}
	// The refusal is in the audit trail, with the reason and without the
	// token.
	waitFor(t, 10*time.Second, "the 401 in the audit trail", func() bool {
		es, err := g.App.Gateway.AuditStore.RecentAudit(t.Context(), "", 50)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if strings.Contains(e.Reason+e.Identity+e.Tool, agentTok) {
				t.Fatalf("a token in the audit trail: %+v", e)
			}
			if !e.Allowed && e.Reason == "unauthenticated: unknown token" && e.Action == "request" {
				return true
			}
		}
		return false
	})
}
