package integration

// The durable store through the whole gateway: decisions survive a
// restart, and a data directory that cannot be used stops start-up before
// any container is touched.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/app"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/store"
)

// echoMCP serves a one-tool MCP server over streamable HTTP on 127.0.0.1,
// so a discovered candidate is a real, healthy server without a container.
func echoMCP(t *testing.T) string {
	t.Helper()
	s := server.NewMCPServer("store-echo", "0")
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echo: " + req.GetString("text", "")), nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// names lists the "name" (or "mcp_server") of each object under key.
func names(m map[string]any, key string) []string {
	var out []string
	list, _ := m[key].([]any)
	for _, e := range list {
		o, _ := e.(map[string]any)
		if n, ok := o["name"].(string); ok {
			out = append(out, n)
		} else if n, ok := o["mcp_server"].(string); ok {
			out = append(out, n)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// An operator's approval of a discovered server survives a restart of the
// gateway on the same data directory: the second run registers it without
// asking again, and it serves calls.
func TestStoreApprovalSurvivesRestart(t *testing.T) {
	dataDir := t.TempDir()
	providers := t.TempDir()
	const name = "stored-echo"
	file := fmt.Sprintf("mode: remote\nendpoint: %s\n", echoMCP(t))
	if err := os.WriteFile(filepath.Join(providers, name+".yaml"), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := writeConfig(t, fmt.Sprintf(`
discovery:
  enabled: true
  auto_register: false
  sources: [{type: filesystem, path: %q, mode: additive}]
`, providers))
	instance := newInstance(t)

	t.Run("first run approves", func(t *testing.T) {
		g := startGatewayFile(t, cfgPath, app.Options{Instance: instance, DataDir: dataDir})
		s := connect(t, g.MCPURL)
		s.mustCall(t, "hangar_discover", nil)
		// A candidate waits for approval (or, once discovery checks
		// candidates first, may sit in quarantine): either can be approved.
		pending := names(s.mustCall(t, "hangar_discovered", nil), "pending")
		quarantined := names(s.mustCall(t, "hangar_quarantine", nil), "quarantined")
		if !contains(pending, name) && !contains(quarantined, name) {
			t.Fatalf("%s is neither pending (%v) nor quarantined (%v)", name, pending, quarantined)
		}
		if r := s.mustCall(t, "hangar_approve", map[string]any{"mcp_server": name}); r["approved"] != true {
			t.Fatalf("hangar_approve = %v", r)
		}
		if g.App.Store.LastWriteError() != nil {
			t.Errorf("store write error: %v", g.App.Store.LastWriteError())
		}
	})

	// The first gateway is closed; a second one starts on the same data dir.
	g := startGatewayFile(t, cfgPath, app.Options{Instance: instance, DataDir: dataDir})
	s := connect(t, g.MCPURL)
	s.mustCall(t, "hangar_discover", nil)
	if pending := names(s.mustCall(t, "hangar_discovered", nil), "pending"); contains(pending, name) {
		t.Fatalf("after the restart %s waits for approval again: %v", name, pending)
	}
	if listed := names(s.mustCall(t, "hangar_list", nil), "mcp_servers"); !contains(listed, name) {
		t.Fatalf("after the restart %s is not registered: %v", name, listed)
	}
	res := result(t, s.mustCall(t, "hangar_call", one(name, "echo", map[string]any{"text": "still approved"})))
	if !strings.Contains(fmt.Sprint(res), "echo: still approved") {
		t.Errorf("call through the restored server: %v", res)
	}
	// hangar_health shows the store, healthy.
	st, _ := s.mustCall(t, "hangar_health", nil)["store"].(map[string]any)
	if st["ok"] != true || st["path"] != filepath.Join(dataDir, store.FileName) || st["last_write_error"] != nil {
		t.Errorf("hangar_health store = %v", st)
	}
}

// A data directory that cannot be used stops app.New with an error naming
// the file and the fix, and no container of the instance is created.
func TestStoreStartupErrors(t *testing.T) {
	cfg, err := config.Parse([]byte(mathConfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)

	t.Run("corrupt database", func(t *testing.T) {
		dir := t.TempDir()
		db := filepath.Join(dir, store.FileName)
		if err := os.WriteFile(db, []byte(strings.Repeat("not a database ", 300)), 0o600); err != nil {
			t.Fatal(err)
		}
		instance := newInstance(t)
		a, err := app.New(cfg, app.Options{Instance: instance, DataDir: dir, Log: quiet})
		if err == nil {
			_ = a.Close(context.Background())
			t.Fatal("app.New on a corrupt database: no error")
		}
		if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), db) ||
			!strings.Contains(err.Error(), "move the file aside") {
			t.Errorf("error = %v", err)
		}
		if left := containers(t, instance, ""); len(left) > 0 {
			t.Errorf("containers created before the store was checked: %s", describe(left))
		}
	})

	t.Run("data dir in use", func(t *testing.T) {
		dir := t.TempDir()
		first := startGatewayFile(t, writeConfig(t, mathConfig), app.Options{DataDir: dir})
		_, err := app.New(cfg, app.Options{Instance: newInstance(t), DataDir: dir, Log: quiet})
		if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), filepath.Join(dir, store.LockFile)) ||
			!strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
			t.Errorf("error = %v", err)
		}
		// The refused start did not disturb the first gateway.
		s := connect(t, first.MCPURL)
		if h := s.mustCall(t, "hangar_health", nil); h["store"].(map[string]any)["ok"] != true {
			t.Errorf("first gateway's store: %v", h["store"])
		}
	})
}

// serveProcess runs `hangar serve` on the config file with a data dir and
// waits until it is healthy; the cleanup kills it if it still runs.
func serveProcess(t *testing.T, cfgPath, instance, dataDir string) (mcpURL string, cmd *exec.Cmd, exited chan struct{}) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd = exec.Command(hangarBin, "serve", "--config", cfgPath, "--listen", addr, "--instance", instance, "--data-dir", dataDir)
	cmd.Stderr = newTestLog(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	waitHealthy(t, "http://"+addr+"/healthz", 20*time.Second, exited)
	return "http://" + addr + "/mcp", cmd, exited
}

// An approval answered to the operator survives the gateway being killed
// with -9 right after, and the dead gateway's lock does not block the next
// start on the same data dir.
func TestStoreApprovalSurvivesKill9(t *testing.T) {
	dataDir := t.TempDir()
	providers := t.TempDir()
	const name = "killed-echo"
	if err := os.WriteFile(filepath.Join(providers, name+".yaml"), []byte("mode: remote\nendpoint: "+echoMCP(t)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := writeConfig(t, fmt.Sprintf(`
discovery:
  enabled: true
  sources: [{type: filesystem, path: %q, mode: additive}]
`, providers))
	instance := newInstance(t)

	url, cmd, exited := serveProcess(t, cfgPath, instance, dataDir)
	s := connect(t, url)
	s.mustCall(t, "hangar_discover", nil)
	if r := s.mustCall(t, "hangar_approve", map[string]any{"mcp_server": name}); r["approved"] != true {
		t.Fatalf("hangar_approve = %v", r)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown, no flush
		t.Fatal(err)
	}
	<-exited

	url, _, _ = serveProcess(t, cfgPath, instance, dataDir)
	s = connect(t, url)
	s.mustCall(t, "hangar_discover", nil)
	if listed := names(s.mustCall(t, "hangar_list", nil), "mcp_servers"); !contains(listed, name) {
		t.Fatalf("after kill -9 and restart %s is not registered: %v", name, listed)
	}
	if pending := names(s.mustCall(t, "hangar_discovered", nil), "pending"); contains(pending, name) {
		t.Errorf("after kill -9 and restart %s waits for approval again", name)
	}
}
