package mcpconn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

// answers is a calling client's relay: it answers whatever it is asked.
type answers struct{}

func (answers) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("sampled")}, Model: "m"}, nil
}

func (answers) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"v": "elicited"}}}, nil
}

func (answers) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///r", Name: "rooted"}}}, nil
}

// askingServer is an mcp-go streamable HTTP server whose tools ask their
// client for sampling, elicitation and roots in the middle of the call:
// on 2025-11-25 as requests (mcp-go sends them on the client's GET stream),
// on 2026-07-28 as input requests answered by a second round trip.
func askingServer() *server.MCPServer {
	s := server.NewMCPServer("asking", "1", server.WithToolCapabilities(false), server.WithElicitation(), server.WithRoots())
	s.EnableSampling()
	ask := func(key string, legacy func(ctx context.Context, s *server.MCPServer) (string, error),
		add func(b *server.InputRequestBuilder), answer func(mcp.InputResponses) (string, bool)) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if got, ok := answer(req.Params.InputResponses); ok {
				return mcp.NewToolResultText(got), nil
			}
			got, err := legacy(ctx, server.ServerFromContext(ctx))
			if errors.Is(err, server.ErrServerInitiatedRequestUnsupported) {
				b := server.NewInputRequestBuilder("")
				add(b)
				return b.ToolResult(), nil
			}
			if err != nil {
				return nil, err
			}
			return mcp.NewToolResultText(got), nil
		}
	}
	sampling := mcp.CreateMessageParams{Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("hi")}}, MaxTokens: 5}
	elicit := mcp.ElicitationParams{Message: "v?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"v": map[string]any{"type": "string"}}}}
	s.AddTool(mcp.NewTool("sample"), ask("s", func(ctx context.Context, s *server.MCPServer) (string, error) {
		res, err := s.RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: sampling})
		if err != nil {
			return "", err
		}
		return res.Content.(mcp.TextContent).Text, nil
	}, func(b *server.InputRequestBuilder) { b.Sample("s", sampling) }, func(r mcp.InputResponses) (string, bool) {
		res := server.SamplingResponse(r, "s")
		if res == nil {
			return "", false
		}
		// Decoded from JSON, the content may be a map.
		if m, ok := res.Content.(map[string]any); ok {
			return fmt.Sprint(m["text"]), true
		}
		if text, ok := mcp.AsTextContent(res.Content); ok {
			return text.Text, true
		}
		return fmt.Sprintf("%T", res.Content), true
	}))
	s.AddTool(mcp.NewTool("elicit"), ask("e", func(ctx context.Context, s *server.MCPServer) (string, error) {
		res, err := s.RequestElicitation(ctx, mcp.ElicitationRequest{Params: elicit})
		if err != nil {
			return "", err
		}
		return fmt.Sprint(res.Content.(map[string]any)["v"]), nil
	}, func(b *server.InputRequestBuilder) { b.Elicit("e", elicit) }, func(r mcp.InputResponses) (string, bool) {
		res := server.ElicitationResponse(r, "e")
		if res == nil {
			return "", false
		}
		return fmt.Sprint(res.Content.(map[string]any)["v"]), true
	}))
	s.AddTool(mcp.NewTool("roots"), ask("r", func(ctx context.Context, s *server.MCPServer) (string, error) {
		res, err := s.RequestRoots(ctx, mcp.ListRootsRequest{})
		if err != nil {
			return "", err
		}
		return res.Roots[0].Name, nil
	}, func(b *server.InputRequestBuilder) { b.Roots("r") }, func(r mcp.InputResponses) (string, bool) {
		res := server.RootsResponse(r, "r")
		if res == nil || len(res.Roots) == 0 {
			return "", false
		}
		return res.Roots[0].Name, true
	}))
	return s
}

// TestHTTPProviderRelays: a provider served over streamable HTTP by
// mcp-go asks for sampling, elicitation and roots during a call, and the
// calling client's relay answers, on both protocol versions the provider
// connection may speak. On 2025-11-25 the requests come on the GET stream
// the connection keeps open; before it did, they waited for the call's
// timeout.
func TestHTTPProviderRelays(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, protocol string
		modernOnly     bool // the server refuses initialize
	}{
		{"auto", mcpconn.ProtocolAuto, false}, {"legacy", mcpconn.ProtocolLegacy, false}, {"modern", mcpconn.ProtocolModern, false},
		{"auto against a 2026-07-28-only server", mcpconn.ProtocolAuto, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			protocol := tt.protocol
			var h http.Handler = server.NewStreamableHTTPServer(askingServer())
			if tt.modernOnly {
				h = refuseInitialize(h)
			}
			ts := httptest.NewServer(h)
			defer ts.Close()
			tr, err := mcpconn.HTTP(ts.URL+"/mcp", nil, ts.Client())
			if err != nil {
				t.Fatal(err)
			}
			c, err := mcpconn.Connect(t.Context(), tr, protocol)
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			defer c.Close()
			if tt.modernOnly && !mcp.IsModernProtocol(c.ProtocolVersion()) {
				t.Errorf("a 2026-07-28-only server speaks %s", c.ProtocolVersion())
			}
			for tool, want := range map[string]string{"sample": "sampled", "elicit": "elicited", "roots": "rooted"} {
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				res, err := c.CallTool(ctx, tool, map[string]any{}, &mcpconn.CallOptions{Relay: answers{}})
				cancel()
				if err != nil || res.IsError || len(res.Content) == 0 {
					t.Errorf("%s on %s: %+v, %v", tool, c.ProtocolVersion(), res, err)
					continue
				}
				if got := res.Content[0].(mcp.TextContent).Text; got != want {
					t.Errorf("%s on %s = %q, want %q", tool, c.ProtocolVersion(), got, want)
				}
			}
		})
	}
}

// refuseInitialize answers initialize as a server that knows only
// 2026-07-28 does: method not found.
func refuseInitialize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method == "initialize" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, msg.ID)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}
