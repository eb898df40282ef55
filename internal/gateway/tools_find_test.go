package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
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
)

// Search mode (front_door.discovery: search) as clients see it, over the
// gateway's real HTTP endpoint, with mcp-go's client and the official
// go-sdk client on both protocol versions.

const findTimeout = 10 * time.Second

// fsTools and gitTools are provider tools with real servers' names and
// descriptions (modelcontextprotocol/servers src/filesystem and src/git).
func fsTools(s *mcpserver.MCPServer) {
	for _, t := range []mcp.Tool{
		mcp.NewTool("read_text_file", mcp.WithDescription("Read complete contents of a file as text"), mcp.WithString("path", mcp.Required())),
		mcp.NewTool("write_file", mcp.WithDescription("Create new file or overwrite existing"), mcp.WithString("path"), mcp.WithString("content")),
		mcp.NewTool("list_directory", mcp.WithDescription("List directory contents with [FILE] or [DIR] prefixes"), mcp.WithString("path")),
	} {
		s.AddTool(t, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.Params.Name + " " + req.GetString("path", "")), nil
		})
	}
}

func gitTools(s *mcpserver.MCPServer) {
	s.AddTool(mcp.NewTool("git_status", mcp.WithDescription("Shows the working tree status"), mcp.WithString("repo_path")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("clean"), nil
		})
}

// searchGateway is a gateway in search mode over providers fs and git
// (pinned), served over HTTP, its front door running.
type searchGateway struct {
	*fdHarness
	url string
}

func newSearchGateway(t *testing.T) *searchGateway {
	t.Helper()
	l := newPipeLauncher()
	l.extra["fs"] = fsTools
	l.extra["git"] = gitTools
	git := server("git")
	git.Pinned = true
	fs := server("fs")
	fs.Summary = "Files on the local disk"
	h := newFrontDoorWith(t, l, nil, func(c *config.Config) { c.FrontDoor.Discovery = config.DiscoverySearch }, nil, fs, git)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.g.FrontDoor.Run(ctx) }()
	ep := h.g.HTTP(h.srv, endpoint.Options{})
	hs := httptest.NewServer(ep.Handler)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = ep.Sessions().Shutdown(sctx)
		ep.Close()
		cancel()
		<-done
	})
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "fs"})
	h.ok(t, "hangar_start", map[string]any{"mcp_server": "git"})
	h.refresh(t)
	wctx, wcancel := context.WithTimeout(t.Context(), findTimeout)
	defer wcancel()
	if err := h.g.FrontDoor.SearchCaughtUp(wctx); err != nil {
		t.Fatal(err)
	}
	return &searchGateway{fdHarness: h, url: hs.URL + "/mcp"}
}

// findClient is one MCP client library on one protocol version.
type findClient interface {
	list(t *testing.T) []string
	// call returns the text and structured content of a tool's answer.
	call(t *testing.T, name string, args map[string]any) (text string, structured json.RawMessage, isError bool)
	// changed receives each tools/list_changed the client gets.
	changed() <-chan struct{}
}

type mcpgoClient struct {
	c  *client.Client
	ch chan struct{}
}

func dialFindMCPGo(t *testing.T, url, version string) findClient {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(version))
	t.Cleanup(func() { _ = c.Close() })
	mc := &mcpgoClient{c: c, ch: make(chan struct{}, 16)}
	acked := make(chan struct{}, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case mcp.MethodNotificationToolsListChanged:
			mc.ch <- struct{}{}
		case string(mcp.MethodNotificationSubscriptionsAcknowledged):
			select {
			case acked <- struct{}{}:
			default:
			}
		}
	})
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "find-test", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	if c.ProtocolVersion() != version {
		t.Fatalf("client speaks %q, want %q", c.ProtocolVersion(), version)
	}
	if mcp.IsModernProtocol(version) {
		stop, err := c.ListenAsync(context.Background(), mcp.SubscriptionFilter{ToolsListChanged: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		select {
		case <-acked:
		case <-time.After(findTimeout):
			t.Fatal("subscriptions/listen was not acknowledged")
		}
	}
	return mc
}

func (m *mcpgoClient) list(t *testing.T) []string {
	t.Helper()
	res, err := m.c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func (m *mcpgoClient) call(t *testing.T, name string, args map[string]any) (string, json.RawMessage, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), findTimeout)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := m.c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			text += tc.Text
		}
	}
	return text, json.RawMessage(text), res.IsError
}

func (m *mcpgoClient) changed() <-chan struct{} { return m.ch }

type sdkClient struct {
	s  *sdk.ClientSession
	ch chan struct{}
}

func dialFindSDK(t *testing.T, url, version string) findClient {
	t.Helper()
	sc := &sdkClient{ch: make(chan struct{}, 16)}
	sc.s = dialSDK(t, url, version, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { sc.ch <- struct{}{} },
	})
	return sc
}

func (c *sdkClient) list(t *testing.T) []string {
	t.Helper()
	res, err := c.s.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func (c *sdkClient) call(t *testing.T, name string, args map[string]any) (string, json.RawMessage, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), findTimeout)
	defer cancel()
	res, err := c.s.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var text string
	for _, ct := range res.Content {
		if tc, ok := ct.(*sdk.TextContent); ok {
			text += tc.Text
		}
	}
	return text, json.RawMessage(text), res.IsError
}

func (c *sdkClient) changed() <-chan struct{} { return c.ch }

// awaitChanged waits for one tools/list_changed.
func awaitChanged(t *testing.T, c findClient, why string) {
	t.Helper()
	select {
	case <-c.changed():
	case <-time.After(findTimeout):
		t.Fatalf("no tools/list_changed after %s", why)
	}
}

// drain forgets the list_changed notifications received so far.
func drainChanged(c findClient) {
	for {
		select {
		case <-c.changed():
		default:
			return
		}
	}
}

type findAnswer struct {
	Query   string `json:"query"`
	Matches []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
		Server      string          `json:"server"`
		Score       float64         `json:"score"`
	} `json:"matches"`
	Activated   []string `json:"activated"`
	Deactivated *int     `json:"deactivated"`
}

func find(t *testing.T, c findClient, args map[string]any) findAnswer {
	t.Helper()
	text, _, isErr := c.call(t, "hangar_find_tools", args)
	if isErr {
		t.Fatalf("hangar_find_tools(%v): %s", args, text)
	}
	var a findAnswer
	if err := json.Unmarshal([]byte(text), &a); err != nil {
		t.Fatalf("hangar_find_tools answer %q: %v", text, err)
	}
	return a
}

// TestSearchModeClients: in search mode tools/list holds the hangar_*
// tools, the pinned server's tools and hangar_find_tools; find ranks;
// an unlisted name answers when called; activate lists the matches with a
// list_changed, reset takes them away with another.
func TestSearchModeClients(t *testing.T) {
	t.Parallel()
	clients := []struct {
		name string
		dial func(t *testing.T, url, version string) findClient
	}{{"mcp-go", dialFindMCPGo}, {"go-sdk", dialFindSDK}}
	for _, cl := range clients {
		for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
			t.Run(cl.name+"/"+version, func(t *testing.T) {
				t.Parallel()
				g := newSearchGateway(t)
				c := cl.dial(t, g.url, version)

				listed := c.list(t)
				for _, want := range []string{"hangar_find_tools", "hangar_list", "hangar_call", "git__git_status", "git__echo_raw"} {
					if !slices.Contains(listed, want) {
						t.Errorf("tools/list lacks %s: %v", want, listed)
					}
				}
				if slices.Contains(listed, "fs__read_text_file") || slices.Contains(listed, "fs__echo_raw") {
					t.Errorf("tools/list holds unpinned provider tools: %v", listed)
				}

				a := find(t, c, map[string]any{"query": "read the contents of a file", "limit": 3})
				if len(a.Matches) == 0 || a.Matches[0].Name != "fs__read_text_file" {
					t.Fatalf("find: %+v", a.Matches)
				}
				m := a.Matches[0]
				if m.Server != "fs" || m.Score <= 0 || !strings.Contains(string(m.InputSchema), `"path"`) ||
					m.Description != "Read complete contents of a file as text" {
					t.Errorf("match: %+v", m)
				}
				if len(a.Matches) > 3 {
					t.Errorf("limit 3, got %d matches", len(a.Matches))
				}

				// Unlisted, and called by name all the same.
				if text, _, isErr := c.call(t, "fs__read_text_file", map[string]any{"path": "/a"}); isErr || text != "read_text_file /a" {
					t.Errorf("calling an unlisted name: %q (error %v)", text, isErr)
				}

				drainChanged(c)
				a = find(t, c, map[string]any{"query": "list directory contents", "limit": 1, "activate": true})
				if len(a.Matches) != 1 || a.Matches[0].Name != "fs__list_directory" || !slices.Equal(a.Activated, []string{"fs__list_directory"}) {
					t.Fatalf("activate: %+v", a)
				}
				awaitChanged(t, c, "activate")
				if listed := c.list(t); !slices.Contains(listed, "fs__list_directory") || slices.Contains(listed, "fs__write_file") {
					t.Errorf("after activate: %v", listed)
				}

				drainChanged(c)
				a = find(t, c, map[string]any{"reset": true})
				if a.Deactivated == nil || *a.Deactivated != 1 {
					t.Fatalf("reset: %+v", a)
				}
				awaitChanged(t, c, "reset")
				if listed := c.list(t); slices.Contains(listed, "fs__list_directory") || !slices.Contains(listed, "git__git_status") {
					t.Errorf("after reset: %v", listed)
				}
			})
		}
	}
}

// predefined is a server whose catalog comes from the config: listed and
// indexed without starting anything.
func predefined(id string, tools ...[2]string) *config.Server {
	s := server(id)
	for _, t := range tools {
		s.Tools.Predefined = append(s.Tools.Predefined, config.ToolDef{Name: t[0], Description: t[1],
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)})
	}
	return s
}

// runSearch runs h's front door and waits until its index caught up.
func runSearch(t *testing.T, h *fdHarness) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.g.FrontDoor.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	h.refresh(t)
	wctx, wcancel := context.WithTimeout(t.Context(), findTimeout)
	defer wcancel()
	if err := h.g.FrontDoor.SearchCaughtUp(wctx); err != nil {
		t.Fatal(err)
	}
}

// callFind calls hangar_find_tools as ctx's caller through mcp-go.
func callFind(t *testing.T, ctx context.Context, s *mcpserver.MCPServer, args map[string]any) (findAnswer, string, bool) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"name": "hangar_find_tools", "arguments": args})
	var res mcp.CallToolResult
	raw := rpc(t, ctx, s, "tools/call", string(b))
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			text += tc.Text
		}
	}
	var a findAnswer
	if !res.IsError {
		if err := json.Unmarshal([]byte(text), &a); err != nil {
			t.Fatalf("answer %q: %v", text, err)
		}
	}
	return a, text, res.IsError
}

func matchNames(a findAnswer) []string {
	var out []string
	for _, m := range a.Matches {
		out = append(out, m.Name)
	}
	return out
}

// TestFindToolsCallerView: what hangar_find_tools finds and describes,
// and what search mode lists, is the caller's view: token servers,
// scopes and policy apply; pins are per server or per tool.
func TestFindToolsCallerView(t *testing.T) {
	t.Parallel()
	fs := predefined("fs", [2]string{"read_text_file", "Read complete contents of a file as text"}, [2]string{"write_file", "Create new file or overwrite existing"})
	fs.Summary = "Files on the local disk"
	git := predefined("git", [2]string{"git_status", "Shows the working tree status"}, [2]string{"git_log", "Shows the commit logs"})
	git.PinnedTools = []string{"git_status"}
	pay := predefined("pay", [2]string{"create_refund", "Refund a payment intent"})
	h := newFrontDoor(t, nil, nil, func(c *config.Config) { c.FrontDoor.Discovery = config.DiscoverySearch }, fs, git, pay)
	h.g.Refuse = func(id string) error {
		if id == "pay" {
			return errors.New("disabled by policy")
		}
		return nil
	}
	runSearch(t, h)

	tests := []struct {
		name        string
		id          *auth.Identity
		query       string
		want        []string // first matches, in order
		listed      []string // provider tools listed
		described   []string
		undescribed []string
	}{
		{"local", nil, "read a file", []string{"fs__read_text_file", "fs__write_file"}, []string{"git__git_status"},
			[]string{"- fs (2 tools): Files on the local disk", "- git (2 tools): tools such as git__git_log, git__git_status"}, []string{"pay"}},
		{"token servers fs", ptr(auth.NewIdentity("t", auth.KindToken, []string{auth.ScopeRead, auth.ScopeCall}, []string{"fs"})),
			"read the working tree status of a file", []string{"fs__read_text_file"}, nil,
			[]string{"- fs (2 tools)"}, []string{"- git", "pay"}},
		{"read only", ptr(auth.NewIdentity("t", auth.KindToken, []string{auth.ScopeRead}, nil)), "read a file", nil, nil,
			[]string{"No server's tools are available to you."}, []string{"- fs", "- git"}},
		{"policy", nil, "refund a payment", nil, []string{"git__git_status"}, []string{"- fs"}, []string{"pay"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			if tt.id != nil {
				ctx = auth.WithIdentity(ctx, *tt.id)
			}
			a, text, isErr := callFind(t, ctx, h.srv, map[string]any{"query": tt.query, "limit": 5})
			if isErr {
				t.Fatalf("find: %s", text)
			}
			if got := matchNames(a); len(got) < len(tt.want) || !slices.Equal(got[:len(tt.want)], tt.want) || (len(tt.want) == 0 && len(got) > 0) {
				t.Errorf("matches %v, want first %v", got, tt.want)
			}
			for _, m := range a.Matches {
				if m.Server == "pay" || (tt.id != nil && len(tt.id.Servers) > 0 && m.Server != "fs") {
					t.Errorf("match outside the caller's view: %+v", m)
				}
			}
			tools := toolList(t, ctx, h.srv)
			if got := providerNames(tools); !slices.Equal(got, tt.listed) {
				t.Errorf("listed %v, want %v", got, tt.listed)
			}
			var desc string
			if err := json.Unmarshal(tools["hangar_find_tools"]["description"], &desc); err != nil {
				t.Fatalf("hangar_find_tools not listed: %v", err)
			}
			for _, s := range tt.described {
				if !strings.Contains(desc, s) {
					t.Errorf("description lacks %q:\n%s", s, desc)
				}
			}
			for _, s := range tt.undescribed {
				if strings.Contains(desc, s) {
					t.Errorf("description has %q:\n%s", s, desc)
				}
			}
		})
	}
}

// TestFindToolsArguments: bad arguments are tool errors naming the
// argument; servers narrows the search.
func TestFindToolsArguments(t *testing.T) {
	t.Parallel()
	fs := predefined("fs", [2]string{"read_text_file", "Read complete contents of a file as text"})
	docs := predefined("docs", [2]string{"read_page", "Read a documentation page"})
	h := newFrontDoor(t, nil, nil, func(c *config.Config) { c.FrontDoor.Discovery = config.DiscoverySearch }, fs, docs)
	runSearch(t, h)
	ctx := t.Context()
	for _, tt := range []struct {
		args map[string]any
		err  string
	}{
		{map[string]any{}, "invalid_argument: query is required unless reset is true"},
		{map[string]any{"query": "read", "limit": 0}, "invalid_argument: limit must be between 1 and 50 (got 0)"},
		{map[string]any{"query": "read", "limit": 51}, "invalid_argument: limit must be between 1 and 50 (got 51)"},
		{map[string]any{"query": "read", "servers": "fs"}, "invalid_argument: servers must be a list of strings"},
	} {
		if _, text, isErr := callFind(t, ctx, h.srv, tt.args); !isErr || text != tt.err {
			t.Errorf("%v: %q (error %v), want %q", tt.args, text, isErr, tt.err)
		}
	}
	a, _, _ := callFind(t, ctx, h.srv, map[string]any{"query": "read", "servers": []string{"docs"}})
	if got := matchNames(a); !slices.Equal(got, []string{"docs__read_page"}) {
		t.Errorf("servers [docs]: %v", got)
	}
	a, _, _ = callFind(t, ctx, h.srv, map[string]any{"query": "of the a"})
	if len(a.Matches) != 0 {
		t.Errorf("stopwords only: %v", matchNames(a))
	}
}

// TestListModeHasNoFind: front_door.discovery list (the default) lists
// every provider tool and no hangar_find_tools.
func TestListModeHasNoFind(t *testing.T) {
	t.Parallel()
	h := newFrontDoor(t, nil, nil, nil, predefined("fs", [2]string{"read_text_file", "Read a file"}))
	h.refresh(t)
	tools := toolList(t, t.Context(), h.srv)
	if _, ok := tools["hangar_find_tools"]; ok {
		t.Error("hangar_find_tools listed in list mode")
	}
	if got := providerNames(tools); !slices.Equal(got, []string{"fs__read_text_file"}) {
		t.Errorf("listed %v", got)
	}
}

// TestFindActivationIsPerSession: what one session activates, another
// session does not list.
func TestFindActivationIsPerSession(t *testing.T) {
	t.Parallel()
	g := newSearchGateway(t)
	a := dialFindMCPGo(t, g.url, mcp.ProtocolVersion20251125)
	b := dialFindMCPGo(t, g.url, mcp.ProtocolVersion20251125)
	find(t, a, map[string]any{"query": "write a file", "limit": 1, "activate": true})
	awaitChanged(t, a, "activate")
	if !slices.Contains(a.list(t), "fs__write_file") {
		t.Fatal("the activating session does not list fs__write_file")
	}
	if slices.Contains(b.list(t), "fs__write_file") {
		t.Error("another session lists what the first activated")
	}
}

// TestFindFollowsCatalog: a server added to the catalog is found once the
// index caught up; a removed one is never found again, even before.
func TestFindFollowsCatalog(t *testing.T) {
	t.Parallel()
	h := newFrontDoor(t, nil, nil, func(c *config.Config) { c.FrontDoor.Discovery = config.DiscoverySearch },
		predefined("fs", [2]string{"read_text_file", "Read complete contents of a file as text"}))
	runSearch(t, h)
	ctx := t.Context()
	if a, _, _ := callFind(t, ctx, h.srv, map[string]any{"query": "current time in a timezone"}); len(a.Matches) != 0 {
		t.Fatalf("before: %v", matchNames(a))
	}
	h.mgr.Add(predefined("time", [2]string{"get_current_time", "Get current time in a specific timezone"}))
	began := time.Now()
	h.refresh(t)
	wctx, cancel := context.WithTimeout(ctx, findTimeout)
	defer cancel()
	if err := h.g.FrontDoor.SearchCaughtUp(wctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("index caught up %v after the refresh began", time.Since(began))
	a, _, _ := callFind(t, ctx, h.srv, map[string]any{"query": "current time in a timezone"})
	if got := matchNames(a); !slices.Equal(got, []string{"time__get_current_time"}) {
		t.Fatalf("after adding: %v", got)
	}
	if _, ok := h.mgr.Remove("time"); !ok {
		t.Fatal("time not removed")
	}
	h.refresh(t) // bindings go at once; the index follows in the background
	if a, _, _ := callFind(t, ctx, h.srv, map[string]any{"query": "current time in a timezone"}); len(a.Matches) != 0 {
		t.Errorf("after removing: %v", matchNames(a))
	}
}
