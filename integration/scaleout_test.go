package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/forward"
	"github.com/mcp-hangar/hangar/internal/manage"
	"github.com/mcp-hangar/hangar/internal/store/pgtest"
)

// TestScaleOutEnvironment: replicas configured as docs/scale-out.md says,
// by the environment alone: $HANGAR_STORE_URL, $HANGAR_KEYSTORE_KEY,
// $HANGAR_INSTANCE, $HANGAR_REPLICA, $HANGAR_ADVERTISE_URL. A secret
// installed through one replica is opened by the other with the same
// $HANGAR_KEYSTORE_KEY; a 2025-11-25 session of one is served through the
// other (forwarded to the advertise URL); a replica with another key, and
// one that would advertise its wildcard listen address, refuse to start
// with the errors the page quotes.
func TestScaleOutEnvironment(t *testing.T) {
	c, err := pgtest.Start(false)
	c = pgtest.Need(t, c, err)
	t.Cleanup(c.Remove)
	u, err := c.Schema(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The remote server answers only with the installed secret.
	const secret = "Bearer scale-out-s3cret"
	s := server.NewMCPServer("remote", "1")
	s.AddTool(mcp.NewTool("hello"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("hello with the secret"), nil
	})
	mcpHandler := server.NewStreamableHTTPServer(s)
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != secret {
			http.Error(w, "no secret", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(remote.Close)

	cfg := writeConfig(t, fmt.Sprintf("store: {password_file: %q}\nmcp_servers: {}\n", c.PasswordFile))
	instance := newInstance(t)
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32))
	env := func(name, listen, advertise, key string) []string {
		e := []string{"HANGAR_STORE_URL=" + u, "HANGAR_KEYSTORE_KEY=" + key, "HANGAR_INSTANCE=" + instance,
			"HANGAR_REPLICA=" + name, "HANGAR_LISTEN=" + listen, "HANGAR_DATA_DIR=" + t.TempDir()}
		if advertise != "" {
			e = append(e, "HANGAR_ADVERTISE_URL="+advertise)
		}
		return e
	}
	urls := map[string]string{}
	for _, name := range []string{"r1", "r2"} {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		urls[name] = "http://" + addr
		envServe(t, cfg, urls[name], env(name, addr, urls[name], key)...)
	}

	res, _ := mustMgmt(t, urls["r1"]+"/mcp", manage.MethodInstall, map[string]any{
		"config_json": `{"mcpServers": {"remote": {"url": "` + remote.URL + `/mcp", "headers": {"Authorization": "` + secret + `"}}}}`})
	if !strings.Contains(jsonOf(res), "secret_stored") {
		t.Fatalf("mcp/install through r1: %s", jsonOf(res))
	}
	r2 := connect(t, urls["r2"]+"/mcp")
	waitFor(t, 10*time.Second, "the server installed through r1 called through r2", func() bool {
		_, isErr, text := r2.call(t, "hangar_call", one("remote", "hello", nil))
		return !isErr && strings.Contains(text, "hello with the secret")
	})

	// A 2025-11-25 session of r1 is served through r2.
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}`
	resp := post(t, urls["r1"]+"/mcp", "", init)
	sid := resp.Header.Get("Mcp-Session-Id")
	resp.Body.Close()
	if forward.Owner(sid) != "r1" {
		t.Fatalf("a session of r1 is named %q", sid)
	}
	for _, body := range []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":2,"method":"ping"}`} {
		resp := post(t, urls["r2"]+"/mcp", sid, body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Errorf("r1's session through r2: %d %s", resp.StatusCode, b)
		}
	}

	// Refused at start, as the page says.
	refused := func(what string, env []string, want ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, hangarBin, "serve", "--config", cfg)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err == nil || ctx.Err() != nil {
			t.Errorf("%s: the replica did not refuse to start (%v)\n%s", what, err, out)
			return
		}
		for _, w := range want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s: the error does not say %q:\n%s", what, w, out)
			}
		}
	}
	other := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{4}, 32))
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	refused("another keystore key", env("r3", addr, "http://"+addr, other),
		"were sealed with another key than the one in $HANGAR_KEYSTORE_KEY")
	port := freePort(t)
	refused("a wildcard advertise URL", env("r4", fmt.Sprintf("0.0.0.0:%d", port), "", key),
		fmt.Sprintf(`replica r4: advertise URL "http://[::]:%d" names no address the other replicas can reach ("::" is a wildcard)`, port),
		"set --advertise-url (or $HANGAR_ADVERTISE_URL) to this replica's own name or address, e.g. http://{{.Task.Name}}:8080 in a Swarm stack")
}

// post sends body to url in session sid (none when "").
func post(t *testing.T, url, sid, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
