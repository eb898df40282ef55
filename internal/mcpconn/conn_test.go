package mcpconn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

func rawTool(name, schema string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"name":%q,"description":"tool %s","inputSchema":%s}`, name, name, schema))
}

func compact(t *testing.T, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("compact %s: %v", raw, err)
	}
	return b.String()
}

func TestConnectProtocols(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		server      rpcOptions
		protocol    string
		wantVersion string
		wantErr     string
		wantMethods []string // the first methods the server saw
	}{
		{"auto, legacy server", rpcOptions{}, mcpconn.ProtocolAuto, mcp.LATEST_LEGACY_PROTOCOL_VERSION, "", []string{"initialize", "notifications/initialized"}},
		{"empty means auto", rpcOptions{}, "", mcp.LATEST_LEGACY_PROTOCOL_VERSION, "", []string{"initialize", "notifications/initialized"}},
		{"legacy", rpcOptions{modern: true}, mcpconn.ProtocolLegacy, mcp.LATEST_LEGACY_PROTOCOL_VERSION, "", []string{"initialize", "notifications/initialized"}},
		{"auto prefers initialize on a dual server", rpcOptions{modern: true}, mcpconn.ProtocolAuto, mcp.LATEST_LEGACY_PROTOCOL_VERSION, "", []string{"initialize"}},
		{"auto falls back to discover", rpcOptions{rejectInitialize: true, modern: true}, mcpconn.ProtocolAuto, mcp.LATEST_PROTOCOL_VERSION, "", []string{"initialize", "server/discover"}},
		{"modern", rpcOptions{modern: true}, mcpconn.ProtocolModern, mcp.LATEST_PROTOCOL_VERSION, "", []string{"server/discover"}},
		{"legacy against a modern-only server", rpcOptions{rejectInitialize: true, modern: true}, mcpconn.ProtocolLegacy, "", "initialize", nil},
		{"modern against a legacy server", rpcOptions{}, mcpconn.ProtocolModern, "", "server/discover", nil},
		{"auto against a server that speaks neither", rpcOptions{rejectInitialize: true}, mcpconn.ProtocolAuto, "", "initialize rejected", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &rpcServer{rpcOptions: tt.server}
			c, err := connect(t, s, tt.protocol)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("Connect succeeded with version %s", c.ProtocolVersion())
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error = %q, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			if got := c.ProtocolVersion(); got != tt.wantVersion {
				t.Errorf("ProtocolVersion = %q, want %q", got, tt.wantVersion)
			}
			// The session works whichever way it was opened.
			res, err := c.CallTool(t.Context(), "echo", map[string]any{"k": "v"}, nil)
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			if text := res.Content[0].(mcp.TextContent).Text; text != `{"k":"v"}` {
				t.Errorf("echo = %q", text)
			}
			// The server handles messages in order, so the handshake is
			// all seen once the call has been answered.
			if got := s.seen(); len(got) < len(tt.wantMethods) || !slices.Equal(got[:len(tt.wantMethods)], tt.wantMethods) {
				t.Errorf("methods = %v, want them to start with %v", got, tt.wantMethods)
			}
		})
	}
}

func TestConnectRejectsForeignTransport(t *testing.T) {
	t.Parallel()
	tr := transport.NewInProcessTransport(server.NewMCPServer("x", "1"))
	if _, err := mcpconn.Connect(t.Context(), tr, mcpconn.ProtocolAuto); err == nil || !strings.Contains(err.Error(), "not made by this package") {
		t.Errorf("Connect with a foreign transport = %v", err)
	}
}

func TestListToolsKeepsRawSchemasAcrossPages(t *testing.T) {
	t.Parallel()
	schemas := []string{
		`{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"number"}]}}}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","oneOf":[{"required":["a"]},{"required":["b"]}]}`,
		`{"type":"object"}`,
		`{"type":"object","properties":{"x":{"type":"integer","minimum":0}},"additionalProperties":false}`,
		`{"type":"object","$defs":{"p":{"type":"string"}},"properties":{"q":{"$ref":"#/$defs/p"}}}`,
	}
	s := &rpcServer{rpcOptions: rpcOptions{pageSize: 2}}
	for i, sc := range schemas {
		s.tools = append(s.tools, rawTool(fmt.Sprintf("t%d", i), sc))
	}
	s.tools = append(s.tools, json.RawMessage(`{"name":"annotated","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"title":"Annotated"}`))
	c, err := connect(t, s, mcpconn.ProtocolLegacy)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	tools, err := c.ListTools(t.Context())
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	if len(tools) != len(schemas)+1 {
		t.Fatalf("got %d tools, want %d", len(tools), len(schemas)+1)
	}
	for i, sc := range schemas {
		if tools[i].Name != fmt.Sprintf("t%d", i) || tools[i].Description != fmt.Sprintf("tool t%d", i) {
			t.Errorf("tools[%d] = %+v", i, tools[i])
		}
		if got := compact(t, tools[i].InputSchema); got != sc {
			t.Errorf("tools[%d] schema = %s, want %s", i, got, sc)
		}
	}
	last := tools[len(tools)-1]
	if last.Title != "Annotated" || compact(t, last.Annotations) != `{"readOnlyHint":true}` {
		t.Errorf("annotated tool = %+v", last)
	}
	var lists int
	for _, m := range s.seen() {
		if m == "tools/list" {
			lists++
		}
	}
	if lists != 3 {
		t.Errorf("tools/list requests = %d, want 3 pages", lists)
	}
}

func TestListToolsStopsEndlessPagination(t *testing.T) {
	t.Parallel()
	s := &rpcServer{rpcOptions: rpcOptions{tools: []json.RawMessage{rawTool("a", `{"type":"object"}`)}, endlessPages: true}}
	c, err := connect(t, s, mcpconn.ProtocolLegacy)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	if _, err := c.ListTools(t.Context()); err == nil || !strings.Contains(err.Error(), "more than 100 pages") {
		t.Errorf("ListTools = %v, want the page bound", err)
	}
}

func TestListToolsEmpty(t *testing.T) {
	t.Parallel()
	c, err := connect(t, &rpcServer{}, mcpconn.ProtocolLegacy)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	tools, err := c.ListTools(t.Context())
	if err != nil || len(tools) != 0 {
		t.Errorf("ListTools = %v, %v", tools, err)
	}
}

func TestCallToolOutcomes(t *testing.T) {
	t.Parallel()
	c, err := connect(t, &rpcServer{}, mcpconn.ProtocolLegacy)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	// A tool error is a result.
	res, err := c.CallTool(t.Context(), "oops", nil, nil)
	if err != nil || !res.IsError || res.Content[0].(mcp.TextContent).Text != "tool broke" {
		t.Errorf("tool error: %+v, %v", res, err)
	}
	// A JSON-RPC error is an error.
	if _, err := c.CallTool(t.Context(), "missing", nil, nil); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("protocol error = %v", err)
	}
	// Concurrent calls share the session.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			res, err := c.CallTool(t.Context(), "echo", map[string]any{"i": i}, nil)
			if err != nil {
				t.Errorf("call %d: %v", i, err)
				return
			}
			if want := fmt.Sprintf(`{"i":%d}`, i); res.Content[0].(mcp.TextContent).Text != want {
				t.Errorf("call %d answered %q", i, res.Content[0].(mcp.TextContent).Text)
			}
		})
	}
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func newMCPServer() *server.MCPServer {
	s := server.NewMCPServer("http-fake", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewToolWithRawSchema("union", "a tool with a union",
		json.RawMessage(`{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(fmt.Sprint(req.GetArguments()["v"])), nil
		})
	return s
}

func TestHTTPTransport(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{mcpconn.ProtocolAuto, mcpconn.ProtocolLegacy, mcpconn.ProtocolModern} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var headers []string
			mcpHandler := server.NewStreamableHTTPServer(newMCPServer())
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				headers = append(headers, r.Header.Get("X-Hangar-Test"))
				mu.Unlock()
				mcpHandler.ServeHTTP(w, r)
			}))
			defer ts.Close()

			tr, err := mcpconn.HTTP(ts.URL+"/mcp", map[string]string{"X-Hangar-Test": "yes"}, ts.Client())
			if err != nil {
				t.Fatalf("HTTP: %v", err)
			}
			c, err := mcpconn.Connect(t.Context(), tr, protocol)
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			defer c.Close()
			wantModern := protocol == mcpconn.ProtocolModern
			if got := mcp.IsModernProtocol(c.ProtocolVersion()); got != wantModern {
				t.Errorf("ProtocolVersion = %q", c.ProtocolVersion())
			}
			tools, err := c.ListTools(t.Context())
			if err != nil {
				t.Fatalf("ListTools: %v", err)
			}
			if len(tools) != 1 || !strings.Contains(string(tools[0].InputSchema), "anyOf") {
				t.Errorf("tools = %+v", tools)
			}
			res, err := c.CallTool(t.Context(), "union", map[string]any{"v": "x"}, nil)
			if err != nil || res.Content[0].(mcp.TextContent).Text != "x" {
				t.Errorf("CallTool = %+v, %v", res, err)
			}
			mu.Lock()
			defer mu.Unlock()
			for i, h := range headers {
				if h != "yes" {
					t.Errorf("request %d carried header %q", i, h)
				}
			}
		})
	}
}

func TestSSETransport(t *testing.T) {
	t.Parallel()
	sse := server.NewSSEServer(newMCPServer())
	ts := httptest.NewServer(sse)
	defer ts.Close()
	tr, err := mcpconn.SSE(ts.URL+"/sse", map[string]string{"X-Hangar-Test": "yes"}, nil)
	if err != nil {
		t.Fatalf("SSE: %v", err)
	}
	c, err := mcpconn.Connect(t.Context(), tr, mcpconn.ProtocolLegacy)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer c.Close()
	tools, err := c.ListTools(t.Context())
	if err != nil || len(tools) != 1 || tools[0].Name != "union" {
		t.Fatalf("ListTools = %+v, %v", tools, err)
	}
	res, err := c.CallTool(t.Context(), "union", map[string]any{"v": 7}, nil)
	if err != nil || res.Content[0].(mcp.TextContent).Text != "7" {
		t.Errorf("CallTool = %+v, %v", res, err)
	}
}

func TestBadURLs(t *testing.T) {
	t.Parallel()
	if _, err := mcpconn.HTTP("://nope", nil, nil); err == nil {
		t.Error("HTTP accepted a malformed URL")
	}
	if _, err := mcpconn.SSE("://nope", nil, nil); err == nil {
		t.Error("SSE accepted a malformed URL")
	}
}

// TestSubscribeRoutesUpdates: a subscribed URI's updates reach its
// handler, other URIs' do not, nor any after Unsubscribe.
func TestSubscribeRoutesUpdates(t *testing.T) {
	t.Parallel()
	s := &rpcServer{rpcOptions: rpcOptions{subscribe: true}}
	c, err := connect(t, s, mcpconn.ProtocolLegacy)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 8)
	if err := c.Subscribe(t.Context(), "file:///a", func(p map[string]any) { got <- p["uri"].(string) }); err != nil {
		t.Fatal(err)
	}
	if uri := <-got; uri != "file:///a" {
		t.Fatalf("update for %s", uri)
	}
	if err := c.Unsubscribe(t.Context(), "file:///a"); err != nil {
		t.Fatal(err)
	}
	// The server wrote file:///other after file:///a and an update of
	// file:///a after the unsubscribe; a request after both is answered only
	// once they were read (notification handlers run on the read loop),
	// so nothing more can arrive.
	if _, err := c.ListTools(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-got:
		t.Errorf("update for %s routed", uri)
	default:
	}
}

// TestExtrasWithoutCapabilities: a provider that offers no completions
// completes with nothing, one without subscriptions refuses them, and
// neither is asked.
func TestExtrasWithoutCapabilities(t *testing.T) {
	t.Parallel()
	s := &rpcServer{}
	c, err := connect(t, s, mcpconn.ProtocolLegacy)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Complete(t.Context(), mcp.PromptReference{Type: "ref/prompt", Name: "p"}, mcp.CompleteArgument{Name: "a"}, mcp.CompleteContext{})
	if err != nil || res.Values == nil || len(res.Values) != 0 {
		t.Errorf("complete = %+v, %v; want no values", res, err)
	}
	if err := c.Subscribe(t.Context(), "file:///a", func(map[string]any) {}); !errors.Is(err, mcpconn.ErrNoSubscriptions) {
		t.Errorf("subscribe: %v", err)
	}
	for _, m := range s.seen() {
		if m == "completion/complete" || m == "resources/subscribe" {
			t.Errorf("%s sent to a server without the capability", m)
		}
	}
}

// TestCallToolRawDecodedOnce: a caller that forwards the raw result (the
// front door) gets it whole, and the client decodes only a stand-in that
// keeps isError: a result is decoded once, by the caller.
func TestCallToolRawDecodedOnce(t *testing.T) {
	t.Parallel()
	c, err := connect(t, &rpcServer{}, mcpconn.ProtocolLegacy)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	for _, tc := range []struct {
		tool    string
		want    string
		isError bool
	}{
		{"echo", `{\"i\":1}`, false},
		{"oops", "tool broke", true},
	} {
		var raw json.RawMessage
		ctx, opts := t.Context(), &mcpconn.CallOptions{Raw: &raw}
		res, err := c.CallTool(ctx, tc.tool, map[string]any{"i": 1}, opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		if !strings.Contains(string(raw), tc.want) {
			t.Errorf("%s: raw result %s lacks %s", tc.tool, raw, tc.want)
		}
		if len(res.Content) != 0 || res.IsError != tc.isError {
			t.Errorf("%s: the client decoded %+v, want the stand-in (no content, isError %v)", tc.tool, res, tc.isError)
		}
	}
	// Without a raw sink the client's result is the whole one.
	res, err := c.CallTool(t.Context(), "echo", map[string]any{"i": 2}, nil)
	if err != nil || len(res.Content) != 1 {
		t.Errorf("plain call: %+v, %v", res, err)
	}
}
