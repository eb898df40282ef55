package gateway_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/gateway"
)

// The official go-sdk client against the front door over real HTTP, on
// both protocol versions.

var sdkVersions = []string{mcp.LATEST_LEGACY_PROTOCOL_VERSION, mcp.LATEST_PROTOCOL_VERSION}

// serveFrontDoor serves h's gateway on a real HTTP endpoint and returns
// the /mcp URL.
func serveFrontDoor(t *testing.T, h *fdHarness) string {
	t.Helper()
	ep := h.g.HTTP(h.srv, endpoint.Options{})
	hs := httptest.NewServer(ep.Handler)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ep.Sessions().Shutdown(ctx)
		ep.Close()
	})
	return hs.URL + "/mcp"
}

// dialSDK connects a go-sdk client speaking version.
func dialSDK(t *testing.T, url, version string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	return connectSDK(t, &sdk.StreamableClientTransport{Endpoint: url}, version, opts)
}

// connectSDK connects a go-sdk client speaking version over tr, and checks
// that the session speaks it. Every go-sdk client of these tests starts here.
func connectSDK(t *testing.T, tr *sdk.StreamableClientTransport, version string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "sdk-test", Version: "1"}, opts)
	s, err := c.Connect(t.Context(), tr, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect on %s: %v", version, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if got := s.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("the session speaks %q, want %q", got, version)
	}
	return s
}

func sdkText(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "\n")
}

// TestSDKCancel: cancelling a call with the go-sdk client cancels it at
// the provider, and the session's next call works. On 2026-07-28 the SDK
// sends notifications/cancelled without _meta (the header names the
// version), which mcp-go refused with 400.
func TestSDKCancel(t *testing.T) {
	t.Parallel()
	for _, version := range sdkVersions {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			l := newPipeLauncher()
			started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
			l.extra["p"] = func(s *mcpserver.MCPServer) {
				s.AddTool(mcp.NewTool("hold"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					started <- struct{}{}
					<-ctx.Done()
					cancelled <- struct{}{}
					return nil, ctx.Err()
				})
			}
			h := newFrontDoor(t, l, nil, nil, server("p"))
			h.ok(t, "hangar_start", map[string]any{"mcp_server": "p"})
			h.refresh(t)
			s := dialSDK(t, serveFrontDoor(t, h), version, nil)

			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				_, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "p__hold"})
				done <- err
			}()
			// Cancelled once the provider works on it: a call cancelled
			// before it got there never reaches the handler.
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Fatal("the call did not reach the provider")
			}
			cancel()
			select {
			case <-cancelled:
			case <-time.After(10 * time.Second):
				t.Fatal("the provider's handler was not cancelled")
			}
			<-done
			waitFor(t, "the call over", func() bool { return h.mgr.Inflight()["p"] == 0 })
			res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "p__slow", Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("the call after the cancellation: %v", err)
			}
			if got := sdkText(t, res); got != "done, token <nil>" {
				t.Errorf("the call after the cancellation answered %q", got)
			}
		})
	}
}

// TestSDKListChanged: a change of the listed tools, resources and prompts
// reaches a go-sdk client within a second on both protocols (on 2026-07-28
// through its subscriptions/listen stream).
func TestSDKListChanged(t *testing.T) {
	t.Parallel()
	for _, version := range sdkVersions {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			h := newFrontDoor(t, nil, nil, nil, server("p"))
			url := serveFrontDoor(t, h)
			tools, resources, prompts := make(chan struct{}, 16), make(chan struct{}, 16), make(chan struct{}, 16)
			s := dialSDK(t, url, version, &sdk.ClientOptions{
				ToolListChangedHandler:     func(context.Context, *sdk.ToolListChangedRequest) { tools <- struct{}{} },
				ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { resources <- struct{}{} },
				PromptListChangedHandler:   func(context.Context, *sdk.PromptListChangedRequest) { prompts <- struct{}{} },
			})
			if _, err := s.ListTools(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			for i, step := range []func(){
				func() { h.ok(t, "hangar_start", map[string]any{"mcp_server": "p"}); h.refresh(t) },
				func() {
					h.ok(t, "hangar_stop", map[string]any{"mcp_server": "p"})
					h.g.Providers.Remove("p")
					h.refresh(t)
				},
			} {
				for _, c := range []chan struct{}{tools, resources, prompts} {
					drain(c)
				}
				began := time.Now()
				step()
				for kind, c := range map[string]chan struct{}{"tools": tools, "resources": resources, "prompts": prompts} {
					select {
					case <-c:
					case <-time.After(time.Second - time.Since(began) + 50*time.Millisecond):
						t.Errorf("change %d: no %s/list_changed within 1 s", i, kind)
					}
				}
			}
		})
	}
}

func drain(c chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// sdkAnswerAll are the options of a go-sdk client that answers sampling,
// elicitation (and, with its roots, roots) like sampler and person do.
func sdkAnswerAll() *sdk.ClientOptions {
	return &sdk.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			q := ""
			if len(req.Params.Messages) > 0 {
				if tc, ok := req.Params.Messages[0].Content.(*sdk.TextContent); ok {
					q = tc.Text
				}
			}
			return &sdk.CreateMessageResult{Role: "assistant", Model: "test", Content: &sdk.TextContent{Text: "4, to " + q}}, nil
		},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
		},
	}
}

// dialSDKRoots is dialSDK for a client that answers everything and has
// the root file:///work.
func dialSDKRoots(t *testing.T, url, version string) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "sdk-test", Version: "1"}, sdkAnswerAll())
	c.AddRoots(&sdk.Root{URI: "file:///work", Name: "work"})
	s, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: url}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect on %s: %v", version, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestSDKRelay: the provider's sampling, elicitation and roots requests
// reach a go-sdk client and its answers reach the provider, on both
// protocols (on 2026-07-28 by multi round trip), the call run by the
// gateway itself (on 2025-11-25 the go-sdk client declares roots, and
// keeps a GET stream open). Not parallel: the provider is served over
// stdio.
func TestSDKRelay(t *testing.T) {
	h := newHTTPFrontDoor(t)
	for _, version := range sdkVersions {
		for _, ask := range []string{"sampling", "elicitation", "roots"} {
			t.Run(version+"/"+ask, func(t *testing.T) {
				s := dialSDKRoots(t, h.url, version)
				ctx, cancel := context.WithTimeout(t.Context(), relayCallTimeout)
				defer cancel()
				before := gateway.DirectCalls(h.g)
				res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "p__interview", Arguments: map[string]any{"ask": []string{ask}}})
				if err != nil {
					t.Fatalf("%s: %v", ask, err)
				}
				if gateway.DirectCalls(h.g) == before {
					t.Error("the call was not run directly")
				}
				want := map[string]string{"sampling": "model: 4, to 2+2?", "elicitation": "user: accept map[name:ada]", "roots": "roots: file:///work"}[ask]
				if got := sdkText(t, res); res.IsError || got != want {
					t.Errorf("%s: %q (error %v), want %q", ask, got, res.IsError, want)
				}
			})
		}
	}
}
