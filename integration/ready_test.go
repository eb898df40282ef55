package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// readyConfig is a gateway with many declared tools (nothing starts), a
// docker discovery source that finds nothing, and the front door in mode.
func readyConfig(mode string, servers, tools int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "front_door: {discovery: %s}\n", mode)
	b.WriteString("discovery:\n  enabled: true\n  sources: [{type: docker, filters: {labels: {io.mcp-hangar.test-ready: \"none\"}}}]\n")
	b.WriteString("mcp_servers:\n")
	for s := range servers {
		fmt.Fprintf(&b, "  p%03d:\n    mode: docker\n    image: mcp-hangar/math:dev\n    tools:\n", s)
		for n := range tools {
			fmt.Fprintf(&b, "      - {name: tool%02d, description: \"Tool %d of p%03d, which reckons the frobnication of quux %d\", inputSchema: {type: object}}\n", n, n, s, s*tools+n)
		}
	}
	return b.String()
}

// startServe runs bin/hangar serve on cfg and returns its base URL once
// /healthz answers, polled every few milliseconds: the moment an agent
// that starts with its gateway would begin.
func startServe(t *testing.T, cfg string) string {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(hangarBin, "serve", "--config", writeConfig(t, cfg), "--listen", addr, "--instance", newInstance(t), "--data-dir", t.TempDir())
	cmd.Stderr = newTestLog(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	base := "http://" + addr
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatal("the gateway exited")
		default:
		}
		if resp, err := hc.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("/healthz never answered")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func readyz(t *testing.T, base string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestReadyMeansReady: an agent that starts with its gateway and asks as
// soon as /healthz answers gets the whole tool list and a search that
// finds, with mcp-go's and the go-sdk client on both protocol versions:
// those requests wait for the catalog, the stored state and the tool index
// (/readyz says when that is done) instead of being answered from a
// half-filled list.
func TestReadyMeansReady(t *testing.T) {
	const servers, tools = 150, 10
	clients := []struct {
		name string
		// find runs hangar_find_tools and returns the names found; list
		// returns tools/list's names.
		open func(t *testing.T, url string) (find func(q string) []string, list func() []string)
	}{}
	for _, version := range protocols {
		clients = append(clients, struct {
			name string
			open func(t *testing.T, url string) (func(string) []string, func() []string)
		}{"mcp-go " + version, func(t *testing.T, url string) (func(string) []string, func() []string) {
			tr, err := transport.NewStreamableHTTP(url)
			if err != nil {
				t.Fatal(err)
			}
			s := startSession(t, mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(version)))
			find := func(q string) []string {
				m := s.mustCall(t, "hangar_find_tools", map[string]any{"query": q, "limit": 3})
				var names []string
				matches, _ := m["matches"].([]any)
				for _, x := range matches {
					names = append(names, x.(map[string]any)["name"].(string))
				}
				return names
			}
			list := func() []string {
				res, err := s.ListTools(t.Context(), mcp.ListToolsRequest{})
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, tl := range res.Tools {
					names = append(names, tl.Name)
				}
				return names
			}
			return find, list
		}}, struct {
			name string
			open func(t *testing.T, url string) (func(string) []string, func() []string)
		}{"go-sdk " + version, func(t *testing.T, url string) (func(string) []string, func() []string) {
			s := dialSDK(t, url, version, nil)
			find := func(q string) []string {
				res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "hangar_find_tools", Arguments: map[string]any{"query": q, "limit": 3}})
				if err != nil || res.IsError {
					t.Fatalf("go-sdk hangar_find_tools: %v %v", err, res)
				}
				m, _ := res.StructuredContent.(map[string]any)
				var names []string
				matches, _ := m["matches"].([]any)
				for _, x := range matches {
					names = append(names, x.(map[string]any)["name"].(string))
				}
				return names
			}
			list := func() []string {
				var names []string
				for tl, err := range s.Tools(t.Context(), nil) {
					if err != nil {
						t.Fatal(err)
					}
					names = append(names, tl.Name)
				}
				return names
			}
			return find, list
		}})
	}

	// Each mode is its own gateway; every client starts as soon as its
	// /healthz answers, all at once.
	for _, mode := range []string{"search", "list"} {
		t.Run(mode, func(t *testing.T) {
			base := startServe(t, readyConfig(mode, servers, tools))
			code, body := readyz(t, base)
			t.Logf("/readyz when /healthz first answered: %d %q", code, strings.TrimSpace(body))
			var wg sync.WaitGroup
			for _, c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					t.Run(c.name, func(t *testing.T) {
						find, list := c.open(t, base+"/mcp")
						if mode == "search" {
							got := find("frobnication of quux 1234")
							if len(got) == 0 || got[0] != "p123__tool04" {
								t.Errorf("first search found %v, want p123__tool04 first", got)
							}
							return
						}
						if got := list(); len(got) < servers*tools {
							t.Errorf("first tools/list has %d tools, want at least %d", len(got), servers*tools)
						}
					})
				}()
			}
			wg.Wait()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			for {
				code, body = readyz(t, base)
				if code == 200 || ctx.Err() != nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if code != 200 || body != "ready\n" {
				t.Errorf("/readyz = %d %q, want 200 ready", code, body)
			}
		})
	}
}
