package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/gateway"
)

// Relayed sampling, elicitation and roots over real streamable HTTP, on
// both protocol versions. The provider is served over stdio: not parallel
// (mcp-go keeps one stdio session per process).

// relayCallTimeout bounds a call in these tests; a refusal must come long
// before it.
const relayCallTimeout = 20 * time.Second

// interview adds the provider tool "interview": it asks its client, in the
// order of the argument "ask", for sampling, elicitation and roots, and
// answers with what it got.
func interview(s *mcpserver.MCPServer) {
	s.AddTool(mcp.NewTool("interview", mcp.WithArray("ask", mcp.WithStringItems())), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		srv := mcpserver.ServerFromContext(ctx)
		var got []string
		for _, what := range req.GetStringSlice("ask", nil) {
			switch what {
			case "sampling":
				r := mcp.CreateMessageRequest{}
				r.Messages = []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("2+2?")}}
				r.MaxTokens = 10
				res, err := srv.RequestSampling(ctx, r)
				if err != nil {
					return mcp.NewToolResultError("sampling failed: " + err.Error()), nil
				}
				content, err := mcp.ParseSamplingContent(res.Content)
				if err != nil {
					return mcp.NewToolResultError("sampling content: " + err.Error()), nil
				}
				got = append(got, "model: "+content.(mcp.TextContent).Text)
			case "elicitation":
				r := mcp.ElicitationRequest{}
				r.Params.Message = "your name?"
				r.Params.RequestedSchema = map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}
				res, err := srv.RequestElicitation(ctx, r)
				if err != nil {
					return mcp.NewToolResultError("elicitation failed: " + err.Error()), nil
				}
				got = append(got, fmt.Sprintf("user: %s %v", res.Action, res.Content))
			case "roots":
				res, err := srv.RequestRoots(ctx, mcp.ListRootsRequest{})
				if err != nil {
					return mcp.NewToolResultError("roots failed: " + err.Error()), nil
				}
				var uris []string
				for _, r := range res.Roots {
					uris = append(uris, r.URI)
				}
				got = append(got, "roots: "+strings.Join(uris, ","))
			case "progress":
				if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
					return mcp.NewToolResultError("no progress token"), nil
				}
				_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress),
					map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": 1, "total": 1, "message": "after " + strings.Join(got, ", ")})
				// mcp-go's HTTP server drops a notification still queued
				// when the response goes out; a real tool works on.
				time.Sleep(50 * time.Millisecond)
				got = append(got, "progress")
			}
		}
		return mcp.NewToolResultText(strings.Join(got, "; ")), nil
	})
}

// person answers elicitation and roots requests like a user would.
type person struct{}

func (person) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "ada"}}}, nil
}

func (person) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///work", Name: "work"}}}, nil
}

// answerAll are the client options of a client that answers everything.
var answerAll = []client.ClientOption{client.WithSamplingHandler(sampler{}), client.WithElicitationHandler(person{}), client.WithRootsHandler(person{})}

const interviewed = "model: 4, to 2+2?; user: accept map[name:ada]; roots: file:///work"

// httpFrontDoor is a front door over a stdio provider "p" with interview,
// served on a real HTTP endpoint.
type httpFrontDoor struct {
	*fdHarness
	url string
}

func newHTTPFrontDoor(t *testing.T) *httpFrontDoor {
	t.Helper()
	l := newPipeLauncher()
	l.stdio = true
	l.extra["p"] = interview
	h := newFrontDoorWith(t, l, nil, nil, nil, server("p"))
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
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "p"})
	h.refresh(t)
	return &httpFrontDoor{fdHarness: h, url: hs.URL + "/mcp"}
}

// dial connects an mcp-go client over HTTP: on 2025-11-25 when legacy
// (keeping the GET stream open when listen), else on 2026-07-28.
func (h *httpFrontDoor) dial(t *testing.T, legacy, listen bool, copts ...client.ClientOption) *client.Client {
	t.Helper()
	var topts []transport.StreamableHTTPCOption
	if listen {
		topts = append(topts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(h.url, topts...)
	if err != nil {
		t.Fatal(err)
	}
	if legacy {
		copts = append(copts, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	}
	c := client.NewClient(tr, copts...)
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "relay-test", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	if want := mcp.IsModernProtocol(c.ProtocolVersion()); want == legacy {
		t.Fatalf("client speaks %q, want legacy %v", c.ProtocolVersion(), legacy)
	}
	if listen {
		awaitGetStream(t, h.srv, c, tr.GetSessionId())
	}
	return c
}

// awaitGetStream waits until c's GET stream is up: mcp-go queues a
// notification to the session until a stream takes it, and none but the
// GET stream is open after initialize.
func awaitGetStream(t *testing.T, srv *mcpserver.MCPServer, c *client.Client, session string) {
	t.Helper()
	got := make(chan struct{}, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/hangar_test" {
			select {
			case got <- struct{}{}:
			default:
			}
		}
	})
	// mcp-go's HTTP transport registers a session just after it has
	// written the initialize answer, so the client may get here first.
	deadline := time.Now().Add(relayCallTimeout)
	for {
		err := srv.SendNotificationToSpecificClient(session, "notifications/hangar_test", nil)
		if err == nil {
			break
		}
		if !errors.Is(err, mcpserver.ErrSessionNotFound) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-got:
	case <-time.After(relayCallTimeout):
		t.Fatal("the GET stream did not open")
	}
}

// callTimed calls tool and returns its text, whether it is an error, and
// how long it took.
func callTimed(t *testing.T, c *client.Client, tool string, args map[string]any) (string, bool, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), relayCallTimeout)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	began := time.Now()
	res, err := c.CallTool(ctx, req)
	took := time.Since(began)
	if err != nil {
		t.Fatalf("%s: %v (after %s)", tool, err, took)
	}
	return textOf(t, res), res.IsError, took
}

// TestFrontDoorRelayLegacyHTTP: a 2025-11-25 client over streamable HTTP
// gets the provider's sampling and roots requests on its GET stream when
// it keeps one open, and elicitation on the call's own stream; without
// the GET stream sampling and roots are refused at once with a clear
// error, not left to time out. The gateway runs each of these calls
// itself (gateway/calls.go), as any other plain call.
func TestFrontDoorRelayLegacyHTTP(t *testing.T) {
	h := newHTTPFrontDoor(t)
	tests := []struct {
		name   string
		listen bool
		ask    []any
		want   string
		isErr  bool
	}{
		{"GET stream open", true, []any{"sampling", "elicitation", "roots"}, interviewed, false},
		{"no GET stream: sampling", false, []any{"sampling"}, "no GET stream open", true},
		{"no GET stream: roots", false, []any{"roots"}, "no GET stream open", true},
		{"no GET stream: elicitation", false, []any{"elicitation"}, "user: accept map[name:ada]", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := h.dial(t, true, tt.listen, answerAll...)
			before := gateway.DirectCalls(h.g)
			got, isErr, took := callTimed(t, c, "p__interview", map[string]any{"ask": tt.ask})
			if gateway.DirectCalls(h.g) != before+1 {
				t.Error("the call was not run directly")
			}
			if isErr != tt.isErr || !strings.Contains(got, tt.want) {
				t.Errorf("p__interview = %q (error %v), want %q", got, isErr, tt.want)
			}
			if took > relayCallTimeout/4 {
				t.Errorf("p__interview took %s", took)
			}
		})
	}
	t.Run("hangar_call", func(t *testing.T) {
		c := h.dial(t, true, true, answerAll...)
		before := gateway.DirectCalls(h.g)
		defer func() {
			if gateway.DirectCalls(h.g) != before+1 {
				t.Error("the call was not run directly")
			}
		}()
		got, isErr, _ := callTimed(t, c, "hangar_call", map[string]any{"calls": []any{
			map[string]any{"mcp_server": "p", "tool": "interview", "arguments": map[string]any{"ask": []any{"sampling", "elicitation", "roots"}}}}})
		if isErr || !strings.Contains(got, interviewed) {
			t.Errorf("hangar_call = %s (error %v)", got, isErr)
		}
	})
}

// TestFrontDoorRelayInputRoundTrips: a 2026-07-28 client over streamable
// HTTP gets the provider's requests as input_required results and calls
// again with its answers (mcp-go's client does the round trips), once per
// request, on a callable name and through hangar_call; a client that
// declared nothing is refused at once.
func TestFrontDoorRelayInputRoundTrips(t *testing.T) {
	h := newHTTPFrontDoor(t)
	ask := map[string]any{"ask": []any{"sampling", "elicitation", "roots"}}

	c := h.dial(t, false, false, answerAll...)
	got, isErr, _ := callTimed(t, c, "p__interview", ask)
	if isErr || got != interviewed {
		t.Errorf("p__interview = %q (error %v), want %q", got, isErr, interviewed)
	}

	batch, isErr, _ := callTimed(t, c, "hangar_call", map[string]any{"calls": []any{map[string]any{"mcp_server": "p", "tool": "interview", "arguments": ask}}})
	var out struct {
		Results []struct {
			Success bool            `json:"success"`
			Result  json.RawMessage `json:"result"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(batch), &out); isErr || err != nil || len(out.Results) != 1 || !out.Results[0].Success ||
		!strings.Contains(string(out.Results[0].Result), interviewed) {
		t.Errorf("hangar_call = %s (error %v)", batch, isErr)
	}

	// Progress after a round trip reaches the client on the request of
	// the round it is in.
	progress := make(chan string, 4)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationProgress) {
			progress <- fmt.Sprintf("%v: %v", n.Params.AdditionalFields["progressToken"], n.Params.AdditionalFields["message"])
		}
	})
	req := mcp.CallToolRequest{}
	req.Params.Name = "p__interview"
	req.Params.Arguments = map[string]any{"ask": []any{"sampling", "progress"}}
	req.Params.Meta = &mcp.Meta{ProgressToken: "tok-7"}
	ctx, cancel := context.WithTimeout(t.Context(), relayCallTimeout)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError {
		t.Fatalf("with progress: %+v, %v", res, err)
	}
	select {
	case p := <-progress:
		if want := "tok-7: after model: 4, to 2+2?"; p != want {
			t.Errorf("progress %q, want %q", p, want)
		}
	case <-ctx.Done():
		t.Error("no progress after the round trip")
	}

	mute := h.dial(t, false, false)
	got, isErr, took := callTimed(t, mute, "p__interview", ask)
	if !isErr || !strings.Contains(got, "did not declare the sampling capability") || took > relayCallTimeout/4 {
		t.Errorf("without capabilities: %q (error %v) after %s", got, isErr, took)
	}
}

// TestFrontDoorRequestStateBoundToCaller drives the round trips by raw
// HTTP with tokens: the requestState alice got resumes nothing for bob,
// and resumes alice's call.
func TestFrontDoorRequestStateBoundToCaller(t *testing.T) {
	l := newPipeLauncher()
	l.stdio = true
	l.extra["p"] = interview
	h := newFrontDoorWith(t, l, nil, func(cfg *config.Config) {
		for _, name := range []string{"alice", "bob"} {
			cfg.Auth.Tokens = append(cfg.Auth.Tokens, tok(name, "tok-"+name, auth.AllScopes))
		}
	}, nil, server("p"))
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "p"})
	h.refresh(t)
	ep := h.g.HTTP(h.srv, endpoint.Options{Auth: &auth.HTTP{Auth: auth.NewAuthenticator(t.Context(), h.g.Config().Auth, auth.Options{}), Log: quiet}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ep.Sessions().Shutdown(ctx)
		ep.Close()
	})

	type result struct {
		Content       []map[string]any           `json:"content"`
		IsError       bool                       `json:"isError"`
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	call := func(who string, roundTrip string) result {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"p__interview","arguments":{"ask":["sampling"]}` + roundTrip + `,` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"` + mcp.LATEST_PROTOCOL_VERSION + `",` +
			`"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}}`
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		req.RemoteAddr = "127.0.0.1:50000"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", mcp.LATEST_PROTOCOL_VERSION)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "p__interview")
		req.Header.Set("Authorization", "Bearer tok-"+who)
		rec := httptest.NewRecorder()
		ep.Handler.ServeHTTP(rec, req)
		raw := rec.Body.String()
		if i := strings.LastIndex(raw, "data: "); i >= 0 { // an event stream
			raw = strings.TrimSpace(raw[i+len("data: "):])
		}
		var resp struct {
			Result *result          `json:"result"`
			Error  *json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(raw), &resp); err != nil || resp.Result == nil {
			t.Fatalf("%s: %d %s", who, rec.Code, rec.Body.String())
		}
		return *resp.Result
	}
	text := func(r result) string {
		if len(r.Content) != 1 {
			t.Fatalf("want one content item: %+v", r)
		}
		s, _ := r.Content[0]["text"].(string)
		return s
	}

	first := call("alice", "")
	if first.ResultType != string(mcp.ResultTypeInputRequired) || len(first.InputRequests) != 1 || first.RequestState == "" {
		t.Fatalf("first round: %+v", first)
	}
	var id string
	for k := range first.InputRequests {
		id = k
	}
	answers := fmt.Sprintf(`,"requestState":%q,"inputResponses":{%q:{"role":"assistant","content":{"type":"text","text":"4"},"model":"m"}}`, first.RequestState, id)
	if got := call("bob", answers); !got.IsError || !strings.Contains(text(got), "unknown or expired requestState") {
		t.Errorf("bob resumed alice's call: %+v", got)
	}
	if got := call("alice", answers); got.IsError || text(got) != "model: 4" {
		t.Errorf("alice's answer: %+v", got)
	}
}
