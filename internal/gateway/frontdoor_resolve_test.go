package gateway_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/config"
)

// callRaw sends one tools/call to s and returns its result, or its
// JSON-RPC error message.
func callRaw(t *testing.T, ctx context.Context, s *mcpserver.MCPServer, name string) (json.RawMessage, string) {
	t.Helper()
	msg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":{}}}`
	b, err := json.Marshal(s.HandleMessage(ctx, []byte(msg)))
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Error != nil {
		return nil, resp.Error.Message
	}
	return resp.Result, ""
}

// TestFrontDoorResolvesNamesNotListedYet: a call by callable name of a
// server (or group) whose catalog nobody knows yet reads that catalog and
// is served, instead of "tool not found"; a name no server can own is
// unknown at once, and starts nothing.
func TestFrontDoorResolvesNamesNotListedYet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		call     string
		wantErr  string
		launched []string
	}{
		{"a server that never ran", "p__slow", "", []string{"p"}},
		{"a group that never ran", "pool__slow", "", []string{"m1"}},
		{"a name no server owns", "nobody__slow", "not found", nil},
		{"a tool the server does not have", "p__nothing", "not found", []string{"p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := newPipeLauncher()
			h := newFrontDoor(t, l, nil, nil, server("p"), poolSpec("pool", "m1", "m2"))
			h.refresh(t)
			res, errMsg := callRaw(t, t.Context(), h.srv, tt.call)
			if tt.wantErr == "" && (errMsg != "" || !strings.Contains(string(res), "done")) {
				t.Fatalf("%s: result %s, error %q", tt.call, res, errMsg)
			}
			if tt.wantErr != "" && !strings.Contains(errMsg, tt.wantErr) {
				t.Fatalf("%s: result %s, error %q, want %q", tt.call, res, errMsg, tt.wantErr)
			}
			for _, id := range []string{"p", "m1", "m2"} {
				if got, want := l.count(id), slices.Contains(tt.launched, id); (got == 1) != want || got > 1 {
					t.Errorf("%s launched %d times, want launched %v", id, got, want)
				}
			}
		})
	}
}

// TestFrontDoorGroupListedByPrefetch: a fresh gateway lists a group's
// tools without any call (the prefetch starts one member); calls by those
// names go through the group's strategy (round robin here); members that
// disagree on tools are named in the details.
func TestFrontDoorGroupListedByPrefetch(t *testing.T) {
	t.Parallel()
	l := newPipeLauncher()
	l.extra["m2"] = func(s *mcpserver.MCPServer) {
		s.AddTool(mcp.NewTool("only_m2"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("m2"), nil
		})
	}
	h := newFrontDoor(t, l, nil, func(c *config.Config) { c.FrontDoor.Prefetch = true }, poolSpec("pool", "m1", "m2"))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); h.g.FrontDoor.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "pool__slow listed", func() bool { return h.srv.GetTool("pool__slow") != nil })
	if l.count("m1")+l.count("m2") != 1 {
		t.Errorf("the prefetch launched m1 %d and m2 %d times, want one member once", l.count("m1"), l.count("m2"))
	}
	for range 2 {
		if res, errMsg := callRaw(t, t.Context(), h.srv, "pool__slow"); errMsg != "" || !strings.Contains(string(res), "done") {
			t.Fatalf("pool__slow: %s %q", res, errMsg)
		}
	}
	waitFor(t, "both members ran", func() bool { return l.count("m2") == 1 })
	h.refresh(t)
	d := h.g.FrontDoor.Details("pool")
	if d["catalog_from"] != "m1" || !slices.Equal(d["members_disagree"].([]string), []string{"m2"}) {
		t.Errorf("details catalog_from %v, members_disagree %v; want m1 and [m2]", d["catalog_from"], d["members_disagree"])
	}
}

// TestFrontDoorCallJoinsThePrefetch: a call by a name whose server the
// prefetch is starting joins that start: one launch, and the provider stays
// up for the call instead of being stopped by the prefetch.
func TestFrontDoorCallJoinsThePrefetch(t *testing.T) {
	t.Parallel()
	l := newPipeLauncher()
	l.gate = make(chan struct{})
	h := newFrontDoor(t, l, nil, func(c *config.Config) { c.FrontDoor.Prefetch = true }, server("p"))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); h.g.FrontDoor.Run(ctx) }()
	open := sync.OnceFunc(func() { close(l.gate) })
	t.Cleanup(func() { open(); cancel(); <-done })
	waitFor(t, "the prefetch launching p", func() bool { return l.count("p") == 1 })
	p, _ := h.mgr.Get("p")
	asked := p.Demand()
	answered := make(chan string, 1)
	go func() {
		res, errMsg := callRaw(t, t.Context(), h.srv, "p__slow")
		answered <- string(res) + errMsg
	}()
	waitFor(t, "the call joining p's start", func() bool { return p.Demand() > asked })
	open()
	if got := <-answered; !strings.Contains(got, "done") {
		t.Fatalf("p__slow: %s", got)
	}
	if n := l.count("p"); n != 1 {
		t.Errorf("p launched %d times, want once (the call joins the prefetch's start)", n)
	}
}
