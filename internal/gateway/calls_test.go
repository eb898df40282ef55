package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/gateway"
)

// callGateway is a front door with tokens and started providers, served
// by the gateway's endpoint (gw) and by a bare mcp-go streamable server
// over the same MCP server (ref), as newListingGateway.
func callGateway(t *testing.T) *listingGateway {
	t.Helper()
	l := newPipeLauncher()
	l.extra["alpha"] = func(s *mcpserver.MCPServer) {
		// A parameter bound to a header: mcp-go checks the two agree.
		s.AddTool(mcp.Tool{Name: "region", RawInputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)},
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("somewhere"), nil
			})
		interview(s) // asks its client for sampling, elicitation, roots
	}
	var cfg *config.Config
	h := newFrontDoor(t, l, nil, func(c *config.Config) {
		c.Auth.Tokens = []config.Token{
			tok("admin", adminTok, auth.AllScopes),
			tok("caller", callTok, []string{auth.ScopeRead, auth.ScopeCall}, "alpha"),
			tok("reader", readTok, []string{auth.ScopeRead}),
		}
		cfg = c
	}, server("alpha"), server("beta"))
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "alpha"})
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "beta"})
	h.refresh(t)
	// Tools of the gateway's own that answer the same every time, and the
	// handler outcomes mcp-go turns into errors.
	raw := json.RawMessage(`{"type":"object"}`)
	h.srv.AddTools(
		mcpserver.ServerTool{Tool: mcp.Tool{Name: "fixed", RawInputSchema: raw}, Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultStructured(map[string]any{"a": "<b> & \u2028"}, "fixed"), nil
		}},
		mcpserver.ServerTool{Tool: mcp.Tool{Name: "asks", RawInputSchema: raw}, Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Result: mcp.Result{ResultType: mcp.ResultTypeInputRequired},
				MultiRoundTripResult: mcp.MultiRoundTripResult{RequestState: "s1", InputRequests: mcp.InputRequests{}}}, nil
		}},
		mcpserver.ServerTool{Tool: mcp.Tool{Name: "panics", RawInputSchema: raw}, Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			panic("kaboom")
		}},
		mcpserver.ServerTool{Tool: mcp.Tool{Name: "nothing", RawInputSchema: raw}, Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, nil
		}},
		mcpserver.ServerTool{Tool: mcp.Tool{Name: "typed"}, Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("typed schema"), nil
		}},
	)
	ah := &auth.HTTP{Auth: auth.NewAuthenticator(t.Context(), cfg.Auth, auth.Options{}), Log: quiet}
	ref := mcpserver.NewStreamableHTTPServer(h.srv, mcpserver.WithEndpointPath("/mcp"))
	return &listingGateway{fdHarness: h, gw: h.g.HTTP(h.srv, endpoint.Options{Auth: ah}).Handler, ref: ah.Middleware(ref)}
}

// modernCallReq is a 2026-07-28 tools/call of tool with args, its
// Mcp-Method and Mcp-Name headers set.
func modernCallReq(token, id, tool, args string) callReq {
	v := mcp.LATEST_PROTOCOL_VERSION
	return callReq{listReq{token: token, version: v, id: id,
		params: `{"name":` + jsonString(tool) + `,"arguments":` + args + `,"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `",` +
			`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}`,
		header: http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {tool}}}}
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

type callReq struct{ listReq }

func (q callReq) body() string {
	return `{"jsonrpc":"2.0","id":` + q.id + `,"method":"tools/call","params":` + q.params + `}`
}

// sameCallAnswer fails unless gw answered q exactly as mcp-go does, and
// reports whether gw ran it directly.
func (l *listingGateway) sameCallAnswer(t *testing.T, q callReq) (body []byte, direct bool) {
	t.Helper()
	q.listReq.raw = q.body()
	before := gateway.DirectCalls(l.g)
	body = l.sameAnswer(t, q.listReq)
	return body, gateway.DirectCalls(l.g) > before
}

// TestDirectCallsMatchMCPGo: the plain tools/call the gateway runs itself
// (calls.go) is answered exactly as mcp-go answers it: status, headers and
// body byte for byte, for provider tools and the gateway's own, results,
// tool errors, input_required, a panic and a handler without a result,
// every id form; every other call is left to mcp-go.
func TestDirectCallsMatchMCPGo(t *testing.T) {
	l := callGateway(t)
	edit := func(q callReq, f func(*callReq)) callReq { f(&q); return q }

	for _, tc := range []struct {
		name        string
		q           callReq
		wantInBody  string
		wantDirect  bool
		wantIsError bool
	}{
		{"provider tool", modernCallReq(adminTok, "1", "alpha__echo_raw", `{"n":7}`), `"structuredContent":{"n":7}`, true, false},
		{"every content type", modernCallReq(adminTok, "2", "beta__kitchen_sink", `{}`), `"isError":true`, true, true},
		{"caller limited to alpha", modernCallReq(callTok, "3", "alpha__echo_raw", `{"n":"x"}`), `"n":"x"`, true, false},
		{"gateway tool", modernCallReq(adminTok, `"s-<1>"`, "fixed", `{}`), `\u003cb\u003e \u0026 \u2028`, true, false},
		{"input required", modernCallReq(adminTok, "4", "asks", `{}`), `"resultType":"input_required"`, true, false},
		{"panic", modernCallReq(adminTok, "5", "panics", `{}`), `panic recovered in panics tool handler: kaboom`, true, false},
		{"no result", modernCallReq(adminTok, "6", "nothing", `{}`), `handler returned no result`, true, false},
		{"float id", modernCallReq(adminTok, "1.0", "alpha__echo_raw", `{}`), `"id":1,`, true, false},
		{"big id", modernCallReq(adminTok, "12345678901234567890", "alpha__echo_raw", `{}`), `"id":12345678901234567000`, true, false},
		{"escaped id", modernCallReq(adminTok, `"\u0041"`, "alpha__echo_raw", `{}`), `"id":"A"`, true, false},
		{"no arguments", edit(modernCallReq(adminTok, "7", "alpha__echo_raw", `{}`), func(q *callReq) {
			q.params = strings.Replace(q.params, `"arguments":{},`, "", 1)
		}), `"result"`, true, false},

		// Left to mcp-go.
		{"header binding", edit(modernCallReq(adminTok, "8", "alpha__region", `{"region":"eu"}`), func(q *callReq) {
			q.header.Set("Mcp-Param-Region", "eu")
		}), `somewhere`, false, false},
		{"header binding mismatch", edit(modernCallReq(adminTok, "9", "alpha__region", `{"region":"eu"}`), func(q *callReq) {
			q.header.Set("Mcp-Param-Region", "us")
		}), `"error"`, false, false},
		{"typed schema", modernCallReq(adminTok, "10", "typed", `{}`), `typed schema`, false, false},
		{"progress token", edit(modernCallReq(adminTok, "11", "alpha__echo_raw", `{}`), func(q *callReq) {
			q.params = strings.Replace(q.params, `"_meta":{`, `"_meta":{"progressToken":"p1",`, 1)
		}), `"result"`, false, false},
		{"Mcp-Name differs", edit(modernCallReq(adminTok, "12", "alpha__echo_raw", `{}`), func(q *callReq) {
			q.header.Set("Mcp-Name", "beta__echo_raw")
		}), `"error"`, false, false},
		{"no Mcp-Name", edit(modernCallReq(adminTok, "13", "alpha__echo_raw", `{}`), func(q *callReq) { q.header.Del("Mcp-Name") }), `"error"`, false, false},
		{"base64 Mcp-Name", edit(modernCallReq(adminTok, "14", "alpha__echo_raw", `{}`), func(q *callReq) {
			q.header.Set("Mcp-Name", "=?base64?YWxwaGFfX2VjaG9fcmF3?=")
		}), `"result"`, true, false},
		{"unknown tool", modernCallReq(adminTok, "15", "nope", `{}`), `"error"`, false, false},
		{"no capabilities", edit(modernCallReq(adminTok, "17", "alpha__echo_raw", `{}`), func(q *callReq) {
			q.params = strings.Replace(q.params, `"io.modelcontextprotocol/clientCapabilities":{},`, "", 1)
		}), `"error"`, false, false},
		{"legacy header", edit(modernCallReq(adminTok, "18", "alpha__echo_raw", `{}`), func(q *callReq) {
			q.version = mcp.LATEST_LEGACY_PROTOCOL_VERSION
		}), ``, false, false},
		{"request state", edit(modernCallReq(adminTok, "19", "alpha__echo_raw", `{}`), func(q *callReq) {
			q.params = strings.Replace(q.params, `"arguments"`, `"requestState":"nope","arguments"`, 1)
		}), `unknown or expired requestState`, false, true},
		{"with a result member", edit(modernCallReq(adminTok, "20", "alpha__echo_raw", `{}`), func(q *callReq) {
			q.params += `,"result":{}`
		}), ``, false, false},
		{"a null result member", edit(modernCallReq(adminTok, "21", "alpha__echo_raw", `{"n":1}`), func(q *callReq) {
			q.params += `,"result":null`
		}), `"n":1`, true, false},
		{"arguments not an object", modernCallReq(adminTok, "22", "alpha__echo_raw", `"just text"`), `"result"`, true, false},
		{"arguments null", modernCallReq(adminTok, "23", "alpha__echo_raw", `null`), `"result"`, true, false},
		{"name not a string", edit(modernCallReq(adminTok, "24", "alpha__echo_raw", `{}`), func(q *callReq) {
			q.params = strings.Replace(q.params, `"name":"alpha__echo_raw"`, `"name":7`, 1)
		}), `"error"`, false, false},
		{"meta not an object", edit(modernCallReq(adminTok, "25", "alpha__echo_raw", `{}`), func(q *callReq) {
			q.params = `{"name":"alpha__echo_raw","_meta":[1]}`
		}), `"error"`, false, false},
		{"params an array", edit(modernCallReq(adminTok, "26", "alpha__echo_raw", `{}`), func(q *callReq) { q.params = `[1]` }), `"error"`, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, direct := l.sameCallAnswer(t, tc.q)
			if direct != tc.wantDirect {
				t.Errorf("run directly: %v, want %v", direct, tc.wantDirect)
			}
			if !strings.Contains(string(body), tc.wantInBody) {
				t.Errorf("answer %.400s, want it to hold %s", body, tc.wantInBody)
			}
			if tc.wantIsError != strings.Contains(string(body), `"isError":true`) {
				t.Errorf("answer %.400s: isError should be %v", body, tc.wantIsError)
			}
		})
	}
}

// TestDirectCallEndsWithItsClient: a client that goes away during a call
// run directly cancels the provider's call, as on mcp-go's path.
func TestDirectCallEndsWithItsClient(t *testing.T) {
	t.Parallel()
	started, cancelled := make(chan struct{}), make(chan struct{})
	l := newPipeLauncher()
	l.extra["alpha"] = func(s *mcpserver.MCPServer) {
		s.AddTool(mcp.Tool{Name: "held", RawInputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				close(started)
				<-ctx.Done()
				close(cancelled)
				return nil, ctx.Err()
			})
	}
	h := newFrontDoor(t, l, nil, nil, server("alpha"))
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "alpha"})
	h.refresh(t)
	hs := httptest.NewServer(h.g.HTTP(h.srv, endpoint.Options{}).Handler)
	t.Cleanup(hs.Close)

	q := modernCallReq("", "1", "alpha__held", `{}`)
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/mcp", strings.NewReader(q.body()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {q.version}, "Mcp-Method": q.header["Mcp-Method"], "Mcp-Name": q.header["Mcp-Name"]}
	done := make(chan error, 1)
	go func() {
		resp, err := hs.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the provider never got the call")
	}
	if n := gateway.DirectCalls(h.g); n != 1 {
		t.Errorf("%d calls run directly, want 1", n)
	}
	cancel()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the provider's call outlived its client")
	}
	if err := <-done; err == nil {
		t.Error("the cancelled request got an answer")
	}
}

// TestDirectSessionCallsMatchMCPGo: a plain call of a provider's on a
// 2025-11-25 session is run by the gateway and answered exactly as mcp-go
// answers it on its own session, whatever the client declared it can be
// asked (sampling, elicitation, roots: the relays are
// TestDirectSessionCallRelaysMatchMCPGo's); what mcp-go would answer
// otherwise (a notification waiting, the gateway's other tools, a progress
// token, a 2026-07-28 _meta) is left to mcp-go.
func TestDirectSessionCallsMatchMCPGo(t *testing.T) {
	l := callGateway(t)
	legacy := func(sid, id, tool, args string) callReq {
		return callReq{listReq{token: adminTok, version: mcp.LATEST_LEGACY_PROTOCOL_VERSION, id: id,
			params: `{"name":` + jsonString(tool) + `,"arguments":` + args + `}`,
			header: http.Header{"Mcp-Session-Id": {sid}}}}
	}
	// same sends q on a session of each side and fails unless both
	// answer alike; it reports whether the gateway ran the call itself.
	same := func(t *testing.T, caps string, q callReq, edit func(q *callReq)) (body string, direct bool) {
		t.Helper()
		gwSession, refSession := legacySessionCaps(t, l.gw, adminTok, caps), legacySessionCaps(t, l.ref, adminTok, caps)
		if edit != nil {
			edit(&q)
		}
		q.raw = q.body()
		q.header = http.Header{"Mcp-Session-Id": {refSession}}
		want := q.send(l.ref)
		before := gateway.DirectCalls(l.g)
		q.header = http.Header{"Mcp-Session-Id": {gwSession}}
		got := q.send(l.gw)
		direct = gateway.DirectCalls(l.g) > before
		if got.Code != want.Code || unstamped(got.Body.String()) != unstamped(want.Body.String()) || !equalHeaders(got.Header(), want.Header()) {
			t.Fatalf("gateway answered %d %v %.400s\nmcp-go answered %d %v %.400s", got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
		}
		return got.Body.String(), direct
	}
	for _, tc := range []struct {
		name       string
		caps       string
		q          callReq
		edit       func(q *callReq)
		wantInBody string
		wantDirect bool
	}{
		{"provider tool", `{}`, legacy("", "1", "alpha__echo_raw", `{"n":7}`), nil, `"structuredContent":{"n":7}`, true},
		{"every content type", `{}`, legacy("", "2", "beta__kitchen_sink", `{}`), nil, `"isError":true`, true},
		{"hangar_call", `{}`, legacy("", `"c-<1>"`, "hangar_call", `{"calls":[{"mcp_server":"alpha","tool":"echo_raw","arguments":{"n":1}}]}`), nil, `"result"`, true},
		{"no version header", `{}`, legacy("", "3", "alpha__echo_raw", `{}`), func(q *callReq) { q.version = "" }, `"result"`, true},
		{"float id", `{}`, legacy("", "1.0", "alpha__echo_raw", `{}`), nil, `"id":1,`, true},
		{"other _meta", `{}`, legacy("", "4", "alpha__echo_raw", `{}`), func(q *callReq) {
			q.params = `{"name":"alpha__echo_raw","arguments":{},"_meta":{"trace":"x"}}`
		}, `"result"`, true},

		{"sampling declared", `{"sampling":{}}`, legacy("", "5", "alpha__echo_raw", `{}`), nil, `"result"`, true},
		{"roots declared", `{"roots":{"listChanged":true}}`, legacy("", "6", "alpha__echo_raw", `{}`), nil, `"result"`, true},
		{"elicitation declared", `{"elicitation":{"form":{}}}`, legacy("", "12", "alpha__echo_raw", `{"n":3}`), nil, `"n":3`, true},
		{"all three declared, hangar_call", `{"sampling":{},"elicitation":{},"roots":{"listChanged":true}}`,
			legacy("", "13", "hangar_call", `{"calls":[{"mcp_server":"alpha","tool":"echo_raw","arguments":{"n":4}}]}`), nil, `"result"`, true},

		// Left to mcp-go.
		{"gateway tool", `{}`, legacy("", "7", "fixed", `{}`), nil, `"result"`, false},
		{"progress token", `{}`, legacy("", "8", "alpha__echo_raw", `{}`), func(q *callReq) {
			q.params = `{"name":"alpha__echo_raw","arguments":{},"_meta":{"progressToken":"p"}}`
		}, `"result"`, false},
		{"2026-07-28 _meta", `{}`, legacy("", "9", "alpha__echo_raw", `{}`), func(q *callReq) {
			q.params = `{"name":"alpha__echo_raw","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"` + mcp.LATEST_PROTOCOL_VERSION + `"}}`
		}, ``, false},
		{"unknown tool", `{}`, legacy("", "10", "nope", `{}`), nil, `"error"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, direct := same(t, tc.caps, tc.q, tc.edit)
			if direct != tc.wantDirect {
				t.Errorf("run directly: %v, want %v", direct, tc.wantDirect)
			}
			if !strings.Contains(body, tc.wantInBody) {
				t.Errorf("answer %.400s, want it to hold %s", body, tc.wantInBody)
			}
		})
	}

	// A notification waiting for the session: mcp-go streams it ahead of
	// the answer, and the call after it is plain again.
	sid := legacySessionCaps(t, l.gw, adminTok, `{}`)
	l.srv.SendNotificationToAllClients("notifications/message", map[string]any{"level": "info", "data": "waiting"})
	q := legacy(sid, "11", "alpha__echo_raw", `{"n":2}`)
	q.raw = q.body()
	before := gateway.DirectCalls(l.g)
	w := q.send(l.gw)
	if body := w.Body.String(); w.Header().Get("Content-Type") != "text/event-stream" || !strings.Contains(body, `"waiting"`) ||
		strings.Index(body, `"waiting"`) > strings.Index(body, `"n":2`) || gateway.DirectCalls(l.g) != before {
		t.Fatalf("a call with a notification waiting: %s %.400s (direct calls %d -> %d)", w.Header().Get("Content-Type"), body, before, gateway.DirectCalls(l.g))
	}
	if w = q.send(l.gw); w.Header().Get("Content-Type") != "application/json" || gateway.DirectCalls(l.g) != before+1 {
		t.Fatalf("the next call: %s %.400s", w.Header().Get("Content-Type"), w.Body)
	}
}

// TestDirectSessionCallRelaysMatchMCPGo: a provider's elicitation during a
// call run directly on a 2025-11-25 session goes to the client on the
// call's own stream, as mcp-go sends it on the calls it runs: the answer
// turns into text/event-stream with mcp-go's headers, the request is its
// first event, the client's POSTed answer is acknowledged with 202, and
// the result is the last event, byte for byte mcp-go's but for the
// request's id (mcp-go numbers its requests; the gateway's are
// "hangar-elicit-<n>"). The provider's sampling and roots requests go to
// the GET stream (TestFrontDoorRelayLegacyHTTP, TestSDKRelay: run directly
// there too).
func TestDirectSessionCallRelaysMatchMCPGo(t *testing.T) {
	l := callGateway(t)
	gw, ref := httptest.NewServer(l.gw), httptest.NewServer(l.ref)
	defer gw.Close()
	defer ref.Close()
	type run struct {
		events []string // with the request id as ID
		header http.Header
		ack    int
	}
	call := func(t *testing.T, base string, h http.Handler, tool string) run {
		t.Helper()
		sid := legacySessionCaps(t, h, adminTok, `{"elicitation":{"form":{}}}`)
		post := func(body string) *http.Response {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+adminTok)
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		var args string
		switch tool {
		case "hangar_call":
			args = `{"calls":[{"mcp_server":"alpha","tool":"interview","arguments":{"ask":["elicitation"]}}]}`
		default:
			args = `{"ask":["elicitation"]}`
		}
		resp := post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`)
		defer resp.Body.Close()
		rd := bufio.NewReader(resp.Body)
		event := func() string {
			var ev strings.Builder
			for {
				line, err := rd.ReadString('\n')
				ev.WriteString(line)
				if err != nil || line == "\n" {
					return ev.String()
				}
			}
		}
		out := run{header: resp.Header}
		first := event()
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		data, _ := strings.CutPrefix(strings.TrimSpace(first), "event: message\ndata: ")
		if err := json.Unmarshal([]byte(data), &req); err != nil || req.Method != "elicitation/create" {
			t.Fatalf("first event %q, want the elicitation request", first)
		}
		out.events = append(out.events, strings.Replace(first, `"id":`+string(req.ID), `"id":ID`, 1))
		ack := post(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"accept","content":{"name":"ada"}}}`)
		ack.Body.Close()
		out.ack = ack.StatusCode
		out.events = append(out.events, unstamped(event()))
		return out
	}
	for _, tool := range []string{"alpha__interview", "hangar_call"} {
		t.Run(tool, func(t *testing.T) {
			want := call(t, ref.URL, l.ref, tool)
			before := gateway.DirectCalls(l.g)
			got := call(t, gw.URL, l.gw, tool)
			if gateway.DirectCalls(l.g) != before+1 {
				t.Error("the call was not run directly")
			}
			if !slices.Equal(got.events, want.events) || got.ack != want.ack {
				t.Errorf("gateway: %q ack %d\nmcp-go:  %q ack %d", got.events, got.ack, want.events, want.ack)
			}
			for _, k := range []string{"Content-Type", "Cache-Control", "Connection"} {
				if got.header.Get(k) != want.header.Get(k) {
					t.Errorf("%s: gateway %q, mcp-go %q", k, got.header.Get(k), want.header.Get(k))
				}
			}
			if !strings.Contains(got.events[1], "user: accept map[name:ada]") {
				t.Errorf("result %s", got.events[1])
			}
		})
	}
}

// stamps are what differs between two runs of one hangar_call: its ids
// and times.
var stamps = regexp.MustCompile(`(batch|call)-[0-9a-f]+|"elapsed_ms":[0-9.]+|\\"elapsed_ms\\":[0-9.]+`)

func unstamped(body string) string { return stamps.ReplaceAllString(body, "~") }

// TestDirectSessionCallRelayRefuses: a provider's sampling request during
// a call run directly on a 2025-11-25 session is refused as on mcp-go's
// path: its client declared no sampling.
//
// Not parallel: the provider is served over stdio, and mcp-go keeps one
// stdio session per process.
func TestDirectSessionCallRelayRefuses(t *testing.T) {
	l := newPipeLauncher()
	l.stdio = true
	h := newFrontDoor(t, l, nil, nil, server("p"))
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "p"})
	h.refresh(t)
	gw := h.g.HTTP(h.srv, endpoint.Options{}).Handler
	q := callReq{listReq{version: mcp.LATEST_LEGACY_PROTOCOL_VERSION, id: "1", params: `{"name":"p__ask","arguments":{}}`,
		header: http.Header{"Mcp-Session-Id": {legacySessionCaps(t, gw, "", `{}`)}}}}
	q.raw = q.body()
	before := gateway.DirectCalls(h.g)
	w := q.send(gw)
	if !strings.Contains(w.Body.String(), "did not declare the sampling capability") || !strings.Contains(w.Body.String(), `"isError":true`) {
		t.Fatalf("p__ask: %d %.400s", w.Code, w.Body)
	}
	if gateway.DirectCalls(h.g) != before+1 {
		t.Error("the call was not run directly")
	}
}

// legacySessionCaps opens a 2025-11-25 session on h whose client declares
// caps, and returns its id.
func legacySessionCaps(t *testing.T, h http.Handler, token, caps string) string {
	t.Helper()
	q := listReq{token: token, raw: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{` +
		`"protocolVersion":"` + mcp.LATEST_LEGACY_PROTOCOL_VERSION + `","capabilities":` + caps + `,"clientInfo":{"name":"t","version":"1"}}}`}
	w := q.send(h)
	sid := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %.300s", w.Code, w.Body)
	}
	return sid
}

// TestDirectCallsWithClients: mcp-go's client (without handlers, and with
// sampling, elicitation and roots handlers) and the official go-sdk
// client (which always declares roots), on both protocol versions, call a
// provider's tool by its name and through hangar_call over real HTTP and
// get its answer, run directly every time.
func TestDirectCallsWithClients(t *testing.T) {
	t.Parallel()
	h := newFrontDoor(t, nil, nil, nil, server("alpha"))
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "alpha"})
	h.refresh(t)
	url := serveFrontDoor(t, h)
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"alpha__echo_raw", map[string]any{"n": 7}},
		{"hangar_call", map[string]any{"calls": []any{map[string]any{"mcp_server": "alpha", "tool": "echo_raw", "arguments": map[string]any{"n": 7}}}}},
	}
	for _, mcpgo := range []struct {
		name string
		opts []client.ClientOption
	}{{"mcp-go", nil}, {"mcp-go with handlers", answerAll}} {
		for _, version := range sdkVersions {
			t.Run(mcpgo.name+"/"+version, func(t *testing.T) {
				tr, err := transport.NewStreamableHTTP(url)
				if err != nil {
					t.Fatal(err)
				}
				c := client.NewClient(tr, append([]client.ClientOption{client.WithProtocolVersion(version)}, mcpgo.opts...)...)
				t.Cleanup(func() { _ = c.Close() })
				if err := c.Start(t.Context()); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{}); err != nil {
					t.Fatal(err)
				}
				for _, call := range calls {
					before := gateway.DirectCalls(h.g)
					res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: call.tool, Arguments: call.args}})
					if err != nil || res.IsError {
						t.Fatalf("%s: %v %+v", call.tool, err, res)
					}
					if b, _ := json.Marshal(res); !strings.Contains(string(b), `"n":7`) {
						t.Errorf("%s answered %s", call.tool, b)
					}
					if gateway.DirectCalls(h.g) != before+1 {
						t.Errorf("%s was not run directly", call.tool)
					}
				}
			})
		}
	}
	for _, version := range sdkVersions {
		t.Run("go-sdk/"+version, func(t *testing.T) {
			s := dialSDK(t, url, version, nil)
			for _, call := range calls {
				before := gateway.DirectCalls(h.g)
				res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: call.tool, Arguments: call.args})
				if err != nil || res.IsError {
					t.Fatalf("%s: %v %+v", call.tool, err, res)
				}
				if b, _ := json.Marshal(res); !strings.Contains(string(b), `"n":7`) {
					t.Errorf("%s answered %s", call.tool, b)
				}
				// The go-sdk client declares roots on 2025-11-25.
				if gateway.DirectCalls(h.g) != before+1 {
					t.Errorf("%s was not run directly", call.tool)
				}
			}
		})
	}
}
