package manage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// The /mcp wrapper routes mcp/* itself and hands everything else, body
// intact, to mcp-go.
func TestWrapMCPEnvelopes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	tests := []struct {
		name   string
		body   string
		status int
		want   string // in the body
	}{
		{"ours", `{"jsonrpc":"2.0","id":1,"method":"mcp/list"}`, 200, `"snapshot_version"`},
		{"params null", `{"jsonrpc":"2.0","id":"a","method":"mcp/list","params":null}`, 200, `"id":"a"`},
		{"bad jsonrpc version", `{"jsonrpc":"1.0","id":1,"method":"mcp/list"}`, 400, `-32600`},
		{"unknown mcp method", `{"jsonrpc":"2.0","id":1,"method":"mcp/frobnicate"}`, 200, `-32601`},
		{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"mcp/install","params":[1]}`, 200, `-32602`},
		{"notification", `{"jsonrpc":"2.0","method":"mcp/list"}`, 202, ``},
		{"mcp-go method", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`, 200, `"serverInfo"`},
		{"not json goes to mcp-go", `{"jsonrpc":`, 400, ``},
		{"batch goes to mcp-go", `[{"jsonrpc":"2.0","id":1,"method":"mcp/list"}]`, 0, ``},
		{"too large", `{"jsonrpc":"2.0","id":1,"method":"mcp/install","params":{"config_json":"` + strings.Repeat("x", 5<<20) + `"}}`, 413, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequest(http.MethodPost, h.URL+"/mcp", strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if tt.status != 0 && resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d (%s)", resp.StatusCode, tt.status, b)
			}
			if tt.name == "batch goes to mcp-go" && strings.Contains(string(b), "snapshot_version") {
				t.Errorf("a batch was served by the wrapper: %s", b)
			}
			if !strings.Contains(string(b), tt.want) {
				t.Errorf("body %s, want %s", b, tt.want)
			}
		})
	}
}

// Over stdio the management methods are answered beside mcp-go's.
func TestStdio(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"mcp/install","params":{"config_json":"{\"mcpServers\":{\"s\":{\"url\":\"http://h/mcp\"}}}"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"mcp/nope"}`,
	}, "\n") + "\n"
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, w, wait := h.Svc.Stdio(ctx, strings.NewReader(in), &syncWriter{b: &out})
	err := server.NewStdioServer(h.Gateway.MCPServer()).Listen(ctx, r, w)
	wait()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		if id, ok := m["id"].(float64); ok {
			got[fmt.Sprint(id)] = line
		}
	}
	for id, want := range map[string]string{"1": `"serverInfo"`, "2": `"status":"ok"`, "3": `"hangar_list"`, "4": `-32601`} {
		if !strings.Contains(got[id], want) {
			t.Errorf("answer %s = %s, want %s", id, got[id], want)
		}
	}
}

type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
