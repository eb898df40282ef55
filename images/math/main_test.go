package main

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

func newClient(t *testing.T) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)

	c, err := client.NewInProcessClient(newServer())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "math-test", Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return c
}

func call(t *testing.T, c *client.Client, tool string, args map[string]any) (string, bool) {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: got %d content items, want 1", tool, len(res.Content))
	}
	text, ok := mcp.AsTextContent(res.Content[0])
	if !ok {
		t.Fatalf("%s: content is %T, want text", tool, res.Content[0])
	}
	return text.Text, res.IsError
}

func TestTools(t *testing.T) {
	c := newClient(t)

	tests := []struct {
		tool    string
		a, b    float64
		want    string
		wantErr bool
	}{
		{"add", 1, 2, "3", false},
		{"add", 0.1, 0.2, "0.30000000000000004", false},
		{"subtract", 1, 3, "-2", false},
		{"multiply", 2.5, 4, "10", false},
		{"divide", 7, 2, "3.5", false},
		{"divide", 1, 0, "division by zero", true},
	}
	for _, tt := range tests {
		got, isErr := call(t, c, tt.tool, map[string]any{"a": tt.a, "b": tt.b})
		if got != tt.want || isErr != tt.wantErr {
			t.Errorf("%s(%v, %v) = %q (error %v), want %q (error %v)",
				tt.tool, tt.a, tt.b, got, isErr, tt.want, tt.wantErr)
		}
	}
}

func TestMissingArgumentIsToolError(t *testing.T) {
	c := newClient(t)
	if _, isErr := call(t, c, "add", map[string]any{"a": 1}); !isErr {
		t.Error("add without b: want a tool error")
	}
}

func TestListTools(t *testing.T) {
	c := newClient(t)
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, tool := range res.Tools {
		got[tool.Name] = true
		if want := []string{"a", "b"}; !slices.Equal(tool.InputSchema.Required, want) {
			t.Errorf("%s: required = %v, want %v", tool.Name, tool.InputSchema.Required, want)
		}
	}
	for _, name := range []string{"add", "subtract", "multiply", "divide"} {
		if !got[name] {
			t.Errorf("tool %q not listed", name)
		}
	}
}

// TestHTTP: with --http the same tools are served over streamable HTTP at
// /mcp, and the server stops when its context ends.
func TestHTTP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- serveHTTP(ctx, ln) }()

	c, err := client.NewStreamableHttpClient("http://" + ln.Addr().String() + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "math-test", Version: "0"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	if got, isErr := call(t, c, "add", map[string]any{"a": 20, "b": 22}); got != "42" || isErr {
		t.Errorf("add over HTTP = %q (error %v), want 42", got, isErr)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serveHTTP after its context ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serveHTTP did not return after its context ended")
	}
}
