package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/forward"
)

// balancer is a plain round-robin HTTP balancer in front of replicas: each
// request goes to the next one, whatever it carries.
type balancer struct {
	URL    string // …/mcp
	mu     sync.Mutex
	counts map[string]int // requests by replica URL
	// strayStates counts the requests resuming a requestState that went
	// to a replica other than the one holding it.
	strayStates int
}

func newBalancer(t *testing.T, rs ...*replica) *balancer {
	b := &balancer{counts: map[string]int{}}
	var next atomic.Int64
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	p := &httputil.ReverseProxy{
		Transport: tr,
		Rewrite: func(pr *httputil.ProxyRequest) {
			r := rs[int(next.Add(1))%len(rs)]
			u, _ := url.Parse(r.URL)
			pr.SetURL(&url.URL{Scheme: u.Scheme, Host: u.Host})
			pr.Out.URL.Path = pr.In.URL.Path
			var body []byte
			if pr.In.Body != nil {
				body, _ = io.ReadAll(pr.In.Body)
				pr.Out.Body = io.NopCloser(bytes.NewReader(body))
			}
			var m struct {
				Params struct {
					RequestState string `json:"requestState"`
				} `json:"params"`
			}
			_ = json.Unmarshal(body, &m)
			b.mu.Lock()
			b.counts[r.URL]++
			if o := forward.Owner(m.Params.RequestState); o != "" && o != r.member.Self.Replica {
				b.strayStates++
			}
			b.mu.Unlock()
		},
		FlushInterval: -1,
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	b.URL = srv.URL + "/mcp"
	return b
}

// bigServer is a remote MCP server whose tool big answers 5000 bytes and
// whose tool ask asks its client for a name (elicitation).
func bigServer(t *testing.T) string {
	t.Helper()
	s := server.NewMCPServer("big", "1", server.WithElicitation())
	s.AddTool(mcp.NewTool("big"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(strings.Repeat("x", 5000)), nil
	})
	s.AddTool(mcp.NewTool("ask"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r := mcp.ElicitationRequest{}
		r.Params.Message = "your name?"
		r.Params.RequestedSchema = map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}
		res, err := server.ServerFromContext(ctx).RequestElicitation(ctx, r)
		if err != nil {
			return mcp.NewToolResultError("elicitation failed: " + err.Error()), nil
		}
		return mcp.NewToolResultText(fmt.Sprintf("user: %s %v", res.Action, res.Content)), nil
	})
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// continued calls big through hangar_call (its answer is cut to a
// continuation) and fetches the continuation twice: behind the balancer
// one of the fetches lands on the replica that does not hold it.
func continued(t *testing.T, c *changeClient) string {
	t.Helper()
	out, err := c.call(t.Context(), "hangar_call", map[string]any{"calls": []any{map[string]any{"mcp_server": "big", "tool": "big"}}})
	if err != nil {
		t.Fatalf("%s: hangar_call: %v", c.name, err)
	}
	var res struct {
		Results []struct {
			ContinuationID string `json:"continuation_id"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Results) != 1 || res.Results[0].ContinuationID == "" {
		t.Fatalf("%s: hangar_call answered %.300s (%v), want a continuation", c.name, out, err)
	}
	id := res.Results[0].ContinuationID
	for i := range 2 {
		out, err := c.call(t.Context(), "hangar_fetch_continuation", map[string]any{"continuation_id": id, "offset": 0, "limit": 10})
		if err != nil || !strings.Contains(out, `"found":true`) || !strings.Contains(out, "xxxxxxxxxx") {
			t.Errorf("%s: fetch %d of %s: %.300s, %v", c.name, i, id, out, err)
		}
	}
	return id
}

// TestReplicasForward: clients behind a round-robin balancer over two
// replicas keep working: a 2025-11-25 session (mcp-go's and the go-sdk's
// client) whose requests alternate between the replicas, and continuations
// fetched through either replica on both protocol versions. Once the
// replica holding them is gone, its session gets 404 and its continuation
// is not found, as for any unknown id.
func TestReplicasForward(t *testing.T) {
	t.Parallel()
	path, instance := replicaConfig(t, fmt.Sprintf("  big: {mode: remote, endpoint: %q}\nbatch: {max_response_size_bytes: 1000}\n", bigServer(t)))
	// mcp_servers: {} is the config's last line but one: the server goes
	// into it.
	fixServers(t, path)
	r1 := startReplica(t, path, instance, "r1")
	r2 := startReplica(t, path, instance, "r2")
	lb := newBalancer(t, r1, r2)

	var conts []string
	var clients []*changeClient
	for _, v := range []string{mcp.LATEST_LEGACY_PROTOCOL_VERSION, mcp.LATEST_PROTOCOL_VERSION} {
		for _, c := range []*changeClient{mcpgoClient(t, lb.URL, v), sdkClient(t, lb.URL, v)} {
			clients = append(clients, c)
			for i := range 4 {
				if out, err := c.call(t.Context(), "hangar_list", nil); err != nil || !strings.Contains(out, "big") {
					t.Fatalf("%s: hangar_list %d behind the balancer: %.200s, %v", c.name, i, out, err)
				}
			}
			conts = append(conts, continued(t, c))
			// The provider asks the client for input: on 2026-07-28 the
			// client calls again with a requestState, which lands on the
			// other replica; on 2025-11-25 the question goes on the
			// session's stream, wherever the session lives.
			if out, err := c.call(t.Context(), "big__ask", nil); err != nil || out != "user: accept map[name:ada]" {
				t.Errorf("%s: big__ask behind the balancer: %q, %v", c.name, out, err)
			}
		}
	}
	lb.mu.Lock()
	if lb.counts[r1.URL] < 10 || lb.counts[r2.URL] < 10 {
		t.Errorf("the balancer sent %v: want both replicas used", lb.counts)
	}
	if lb.strayStates == 0 {
		t.Error("no requestState landed on the replica that does not hold it: forwarding not exercised")
	}
	lb.mu.Unlock()

	// The forwarding cost: a session's request on its own replica and on
	// the other one.
	sid := initialize(t, r1.URL)
	right := timeCalls(t, r1.URL, sid, 200)
	wrong := timeCalls(t, r2.URL, sid, 200)
	t.Logf("tools/call hangar_status of a 2025-11-25 session, p50 over 200: on its replica %v, on the other (forwarded) %v",
		right.Round(time.Microsecond), wrong.Round(time.Microsecond))

	// r1 is killed (it stops answering; its membership row stays live
	// for a while), then its row goes: either way what it held is unknown
	// at r2, and answered so. (Its clients' streams end first, or its
	// drain would wait for them.)
	for _, c := range clients {
		c.close()
	}
	fetcher := mcpgoClient(t, r2.URL, mcp.LATEST_PROTOCOL_VERSION)
	for _, step := range []struct {
		what string
		gone func()
	}{{"killed", r1.halt}, {"gone", r1.stop}} {
		step.gone()
		if st := post(t, r2.URL, sid, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); st != http.StatusNotFound {
			t.Errorf("a session of the %s replica: %d, want 404", step.what, st)
		}
		checked := 0
		for _, id := range conts {
			if forward.Owner(id) != "r1" {
				continue
			}
			checked++
			out, err := fetcher.call(t.Context(), "hangar_fetch_continuation", map[string]any{"continuation_id": id})
			if err != nil || !strings.Contains(out, `"found":false`) {
				t.Errorf("a continuation of the %s replica: %.200s, %v; want found false", step.what, out, err)
			}
		}
		if checked == 0 {
			t.Errorf("no continuation of r1 among %v", conts)
		}
	}
	if n := metric(t, r2, "hangar_forwarded_requests_total", "outcome", "owner_unreachable"); n < 1 {
		t.Errorf("r2's hangar_forwarded_requests_total{outcome=owner_unreachable} = %v after r1 was killed, want it counted", n)
	}
}

// fixServers moves the lines after "mcp_servers: {}" that are indented
// into it (replicaConfig writes an empty map).
func fixServers(t *testing.T, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.Replace(raw, []byte("mcp_servers: {}\n"), []byte("mcp_servers:\n"), 1)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

// initialize starts a 2025-11-25 session at url and returns its id.
func initialize(t *testing.T, url string) string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}`
	resp := do(t, url, "", body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize at %s: %d, session %q", url, resp.StatusCode, sid)
	}
	if st := post(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); st != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d", st)
	}
	return sid
}

func do(t *testing.T, url, sid, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// post sends body in session sid and returns the status.
func post(t *testing.T, url, sid, body string) int {
	t.Helper()
	resp := do(t, url, sid, body)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// timeCalls returns the median time of n tools/call requests in session
// sid sent to url.
func timeCalls(t *testing.T, url, sid string, n int) time.Duration {
	t.Helper()
	ds := make([]time.Duration, n)
	for i := range n {
		began := time.Now()
		resp := do(t, url, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hangar_status"}}`, i+2))
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ds[i] = time.Since(began)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"result"`)) {
			t.Fatalf("call %d at %s: %d %.200s", i, url, resp.StatusCode, b)
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[n/2]
}
