package integration

import (
	"context"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Providers served over streamable HTTP that ask their client for
// sampling, elicitation and roots during a call: the official go-sdk's
// everything example (it sends those requests on the call's own stream)
// and testkit, an mcp-go server (it sends them on the client's GET
// stream, which the gateway keeps open to a 2025-11-25 provider).
const httpAskingProviders = `
mcp_servers:
  sdkweb:
    mode: docker
    image: mcp-hangar/gosdk-everything:dev
    transport: http
    args: ["-http", ":8080"]
    port: 8080
    start_timeout_s: 30
  kitweb:
    mode: docker
    image: mcp-hangar/testkit:dev
    transport: http
    args: ["--transport", "http", "--port", "8080", "--path", "/mcp"]
    port: 8080
    start_timeout_s: 30
`

// sdkUser is a go-sdk client that answers as user{} does.
func sdkUser() *sdk.ClientOptions {
	return &sdk.ClientOptions{
		CreateMessageHandler: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			return &sdk.CreateMessageResult{Role: "assistant", Model: "it-model", Content: &sdk.TextContent{Text: "sampled by the client"}}, nil
		},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"random": "chosen by the client"}}, nil
		},
	}
}

// TestHTTPProviderRelays: through the front door, sampling, elicitation and
// roots asked by providers served over streamable HTTP reach the calling
// client and come back, for mcp-go's and the go-sdk client on 2025-11-25
// and 2026-07-28. Before the gateway kept a GET stream to 2025-11-25
// HTTP providers, testkit's sampling waited for the call's timeout.
func TestHTTPProviderRelays(t *testing.T) {
	g := startGateway(t, httpAskingProviders)
	c := newRawClient(t, g.MCPURL)
	legacy := mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	starter := connect(t, g.MCPURL, legacy)
	for _, id := range []string{"sdkweb", "kitweb"} {
		starter.mustCall(t, "hangar_start", map[string]any{"mcp_server": id})
	}
	c.waitListed(t, "sdkweb__roots")
	c.waitListed(t, "kitweb__sample")
	want := map[string]string{
		"sdkweb__sample":        "sampled by the client",
		"sdkweb__elicit__form_": "chosen by the client",
		"sdkweb__roots":         "work:file:///client/work",
		"kitweb__sample":        "model it-model said: sampled by the client",
	}
	args := map[string]map[string]any{"kitweb__sample": {"prompt": "hi"}}

	answers := []mcpclient.ClientOption{mcpclient.WithSamplingHandler(user{}), mcpclient.WithElicitationHandler(user{}), mcpclient.WithRootsHandler(user{})}
	for _, proto := range []struct {
		name   string
		listen bool
		opts   []mcpclient.ClientOption
	}{
		{"mcp-go 2025-11-25", true, append([]mcpclient.ClientOption{legacy}, answers...)},
		{"mcp-go 2026-07-28", false, answers},
	} {
		t.Run(proto.name, func(t *testing.T) {
			s := dialRelay(t, g, proto.listen, proto.opts...)
			for tool, w := range want {
				if _, isErr, text := s.call(t, tool, args[tool]); isErr || text != w {
					t.Errorf("%s = %q (error %v), want %q", tool, text, isErr, w)
				}
			}
		})
	}
	for _, version := range protocols {
		t.Run("go-sdk "+version, func(t *testing.T) {
			opts := sdkUser()
			cl := sdk.NewClient(&sdk.Implementation{Name: "relay", Version: "1"}, opts)
			cl.AddRoots(&sdk.Root{URI: "file:///client/work", Name: "work"})
			s, err := cl.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: g.MCPURL}, &sdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for tool, w := range want {
				ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
				res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args[tool]})
				cancel()
				if err != nil {
					t.Errorf("%s: %v", tool, err)
					continue
				}
				var texts []string
				for _, ct := range res.Content {
					if tc, ok := ct.(*sdk.TextContent); ok {
						texts = append(texts, tc.Text)
					}
				}
				if got := strings.Join(texts, ""); res.IsError || got != w {
					t.Errorf("%s = %q (error %v), want %q", tool, got, res.IsError, w)
				}
			}
		})
	}
}
