package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

// The front door: provider tools by callable name on the gateway's own
// endpoint, against the testkit image.

// longTestkitTool is testkit's 70-character tool name.
const longTestkitTool = "a_tool_name_seventy_characters_long_to_test_callable_name_shortening__"

// suffixOf is the suffix a shortened or clashing callable name gets: six
// hex digits of sha256(server NUL tool).
func suffixOf(server, tool string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	return hex.EncodeToString(sum[:])[:6]
}

// rawClient speaks JSON-RPC over HTTP to the gateway, keeping results as
// raw bytes.
type rawClient struct {
	url     string
	session string
	// token, when set, is sent as the bearer token.
	token string
}

func newRawClient(t *testing.T, url string) *rawClient {
	t.Helper()
	return newRawClientWith(t, url, "")
}

// newRawClientWith is newRawClient authenticating with token.
func newRawClientWith(t *testing.T, url, token string) *rawClient {
	t.Helper()
	c := &rawClient{url: url, token: token}
	c.rpc(t, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}`)
	return c
}

// rpc sends one request and returns its raw result; a JSON-RPC error fails
// the test.
func (c *rawClient) rpc(t *testing.T, method, params string) json.RawMessage {
	t.Helper()
	a := c.post(t, method, params)
	if a.Error != nil {
		t.Fatalf("%s: %+v", method, *a.Error)
	}
	return a.Result
}

// rawAnswer is the answer to one request.
type rawAnswer struct {
	Status int
	Header http.Header
	Result json.RawMessage
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
}

// post sends one request and returns its answer, error or not.
func (c *rawClient) post(t *testing.T, method, params string) rawAnswer {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":%q,"params":%s}`, method, params)
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.session = id
	}
	var msgs [][]byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				msgs = append(msgs, []byte(data))
			}
		}
	} else {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		msgs = append(msgs, b.Bytes())
	}
	for _, m := range msgs {
		a := rawAnswer{Status: resp.StatusCode, Header: resp.Header}
		var r struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(m, &r) != nil || string(r.ID) != "7" || json.Unmarshal(m, &a) != nil {
			continue
		}
		return a
	}
	t.Fatalf("%s: no answer in %d message(s) (HTTP %d)", method, len(msgs), resp.StatusCode)
	return rawAnswer{}
}

// toolNamesRaw lists the tools the gateway serves, by name.
func (c *rawClient) toolNames(t *testing.T) []string {
	t.Helper()
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(c.rpc(t, "tools/list", `{}`), &res); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		if !strings.HasPrefix(tool.Name, "hangar_") {
			names = append(names, tool.Name)
		}
	}
	slices.Sort(names)
	return names
}

// waitListed waits until the gateway lists name.
func (c *rawClient) waitListed(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !slices.Contains(c.toolNames(t), name) {
		if time.Now().After(deadline) {
			t.Fatalf("%s not listed within 15s; listed: %v", name, c.toolNames(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// directTestkit runs the testkit binary as a local process and returns an
// MCP connection to it: the reference a call through the gateway is
// compared with.
func directTestkit(t *testing.T) *mcpconn.Conn {
	t.Helper()
	root, err := findRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "testkit")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(root, "images", "testkit")).CombinedOutput(); err != nil {
		t.Fatalf("build testkit: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := mcpconn.Connect(ctx, mcpconn.Stdio(stdout, stdin), mcpconn.ProtocolLegacy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func directRaw(t *testing.T, conn *mcpconn.Conn, tool string, args json.RawMessage) json.RawMessage {
	t.Helper()
	var raw json.RawMessage
	ctx, opts := context.Background(), &mcpconn.CallOptions{Raw: &raw}
	if _, err := conn.CallTool(ctx, tool, args, opts); err != nil {
		t.Fatalf("direct %s: %v", tool, err)
	}
	return raw
}

// A provider tool called by its callable name answers exactly what a
// direct call answers; listing never starts a cold provider; a
// 70-character tool name is shortened; hangar_details shows the bindings.
func TestFrontDoorToolsCallByName(t *testing.T) {
	g := startGateway(t, `
mcp_servers:
  kit:
    mode: docker
    image: mcp-hangar/testkit:dev
    start_timeout_s: 30
`)
	c := newRawClient(t, g.MCPURL)
	s := connect(t, g.MCPURL)

	// Nothing known, nothing started by listing.
	for range 3 {
		if names := c.toolNames(t); len(names) != 0 {
			t.Fatalf("listed before any start: %v", names)
		}
	}
	if n := countContainers(t, g.Instance, "kit"); n != 0 {
		t.Fatalf("%d containers after tools/list, want 0", n)
	}

	// Once it ran, it is listed while COLD.
	s.mustCall(t, "hangar_start", map[string]any{"mcp_server": "kit"})
	s.mustCall(t, "hangar_stop", map[string]any{"mcp_server": "kit"})
	c.waitListed(t, "kit__echo")
	if st := s.providerState(t, "kit"); st != "cold" {
		t.Errorf("kit is %s after listing, want cold", st)
	}
	long := "kit__" + longTestkitTool
	long = long[:57] + "_" + suffixOf("kit", longTestkitTool)
	names := c.toolNames(t)
	for _, want := range []string{"kit__echo", "kit__progress", "kit__schema", long} {
		if !slices.Contains(names, want) {
			t.Errorf("%s not listed: %v", want, names)
		}
	}

	// The same answer as a direct call, byte for byte (the call also
	// cold-starts kit).
	direct := directTestkit(t)
	for _, tc := range []struct{ tool, args string }{
		{"progress", `{"steps":2,"delay_ms":1}`},
		{"schema", `{"v":123456789012345678901234567890,"w":"é"}`},
		{"fail", `{"message":"nope"}`},
		{longTestkitTool, `{}`},
	} {
		callable := "kit__" + tc.tool
		if tc.tool == longTestkitTool {
			callable = long
		}
		got := c.rpc(t, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, callable, tc.args))
		want := directRaw(t, direct, tc.tool, json.RawMessage(tc.args))
		if !bytes.Equal(got, want) {
			t.Errorf("%s through the gateway:\n%s\ndirect:\n%s", tc.tool, got, want)
		}
	}

	d := s.mustCall(t, "hangar_details", map[string]any{"mcp_server": "kit"})
	fd, _ := d["front_door"].(map[string]any)
	if v, _ := fd["catalog_version"].(string); v == "" || fd["exposed"] != true {
		t.Errorf("front_door = %v", fd)
	}
	found := false
	for _, b := range fd["tools"].([]any) {
		m := b.(map[string]any)
		if m["callable"] == long && m["tool"] == longTestkitTool {
			found = true
		}
	}
	if !found {
		t.Errorf("binding %s → %s not in %v", long, longTestkitTool, fd["tools"])
	}
}

// The caller's progressToken reaches the provider and its progress comes
// back to the caller.
func TestFrontDoorProgressForwarded(t *testing.T) {
	g := startGateway(t, testkitConfig)
	c := newRawClient(t, g.MCPURL)
	var mu sync.Mutex
	var progress []map[string]any
	s := connect(t, g.MCPURL)
	s.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationProgress) {
			mu.Lock()
			progress = append(progress, n.Params.AdditionalFields)
			mu.Unlock()
		}
	})
	s.mustCall(t, "hangar_start", map[string]any{"mcp_server": "testkit"})
	c.waitListed(t, "testkit__progress")

	req := mcp.CallToolRequest{}
	req.Params.Name = "testkit__progress"
	req.Params.Arguments = map[string]any{"steps": 3, "delay_ms": 50}
	req.Params.Meta = &mcp.Meta{ProgressToken: "it-token"}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := s.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := mcp.AsTextContent(res.Content[0]); text.Text != "done 3 steps, token given: true" {
		t.Errorf("answer %q", text.Text)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) != 3 {
		t.Fatalf("%d progress notifications, want 3: %v", len(progress), progress)
	}
	for i, p := range progress {
		if p["progressToken"] != "it-token" || p["progress"] != float64(i+1) || p["total"] != float64(3) {
			t.Errorf("progress %d = %v", i, p)
		}
	}
}

// Two servers whose callable names clash both get a suffix from their own
// identity: the same names whatever the order, and each routes to its own
// server.
func TestFrontDoorToolsNameCollision(t *testing.T) {
	g := startGateway(t, `
mcp_servers:
  kit-b:
    mode: docker
    image: mcp-hangar/testkit:dev
    prefix: kit
    env: {IT_WHO: b}
  kit-a:
    mode: docker
    image: mcp-hangar/testkit:dev
    prefix: kit
    env: {IT_WHO: a}
`)
	c := newRawClient(t, g.MCPURL)
	s := connect(t, g.MCPURL)
	s.mustCall(t, "hangar_start", map[string]any{"mcp_server": "kit-a"})
	s.mustCall(t, "hangar_start", map[string]any{"mcp_server": "kit-b"})
	envA, envB := "kit__env_"+suffixOf("kit-a", "env"), "kit__env_"+suffixOf("kit-b", "env")
	c.waitListed(t, envA)
	c.waitListed(t, envB)
	if names := c.toolNames(t); slices.Contains(names, "kit__env") {
		t.Errorf("one server kept the plain name: %v", names)
	}
	for callable, want := range map[string]string{envA: "a", envB: "b"} {
		res := c.rpc(t, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":{"name":"IT_WHO"}}`, callable))
		if !bytes.Contains(res, []byte(`"text":"`+want+`"`)) {
			t.Errorf("%s answered %s, want %s", callable, res, want)
		}
	}
}

// listen opens the session's GET stream (2025-11-25) and returns the
// methods of the notifications that arrive on it.
func (c *rawClient) listen(t *testing.T) <-chan string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.session)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: HTTP %d", resp.StatusCode)
	}
	methods := make(chan string, 64)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var m struct {
				Method string `json:"method"`
			}
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &m) == nil && m.Method != "" {
				methods <- m.Method
			}
		}
	}()
	return methods
}

// waitNotification waits for method on a listen stream and returns how
// many more of it arrive within settle afterwards.
func waitNotification(t *testing.T, stream <-chan string, method string, settle time.Duration) int {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case m := <-stream:
			if m != method {
				continue
			}
			extra := 0
			quiet := time.After(settle)
			for {
				select {
				case m := <-stream:
					if m == method {
						extra++
					}
				case <-quiet:
					return extra
				}
			}
		case <-deadline:
			t.Fatalf("no %s within 15s", method)
		}
	}
}

// tools/list_changed reaches a connected client, once, when hangar_load
// adds a server and when hangar_unload removes it.
//
// The listener is a plain GET stream: mcp-go v1.2.1's client drops its
// continuous listener after the session's first POST.
func TestFrontDoorHotloadListChanged(t *testing.T) {
	catalog := hotloadCatalog()
	g := startGateway(t, fmt.Sprintf(`
registry:
  url: ""
  catalog_file: %q
  verified_namespaces: ["io.github.mcp-hangar/"]
`, catalog))
	c := newRawClient(t, g.MCPURL)
	stream := c.listen(t)
	s := connect(t, g.MCPURL)

	const changed = string(mcp.MethodNotificationToolsListChanged)
	ans := s.mustCall(t, "hangar_load", map[string]any{"name": "testkit"})
	id := str(ans, "mcp_server")
	if extra := waitNotification(t, stream, changed, 2500*time.Millisecond); extra != 0 {
		t.Errorf("%d more list_changed after hangar_load, want one in all", extra)
	}
	if names := c.toolNames(t); !slices.Contains(names, sanitizeName(id)+"__echo") {
		t.Errorf("after hangar_load listed %v", names)
	}
	s.mustCall(t, "hangar_unload", map[string]any{"mcp_server": id})
	if extra := waitNotification(t, stream, changed, 2500*time.Millisecond); extra != 0 {
		t.Errorf("%d more list_changed after hangar_unload, want one in all", extra)
	}
	if names := c.toolNames(t); len(names) != 0 {
		t.Errorf("after hangar_unload listed %v", names)
	}
}

// sanitizeName is the front door's server part of a callable name.
func sanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// front_door.prefetch reads a catalog at start-up and leaves the provider
// COLD, its container gone.
func TestFrontDoorToolsPrefetch(t *testing.T) {
	g := startGateway(t, `
front_door: {prefetch: true}
mcp_servers:
  kit:
    mode: docker
    image: mcp-hangar/testkit:dev
    start_timeout_s: 30
`)
	c := newRawClient(t, g.MCPURL)
	s := connect(t, g.MCPURL)
	c.waitListed(t, "kit__echo")
	waitFor(t, 15*time.Second, "kit COLD with no container", func() bool {
		return s.providerState(t, "kit") == "cold" && countContainers(t, g.Instance, "kit") == 0
	})
}

// model answers sampling requests like a model would.
type model struct{}

func (model) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	// Over multi round trip mcp-go's client hands the content on as
	// decoded JSON.
	content, err := mcp.ParseSamplingContent(req.Messages[0].Content)
	if err != nil {
		return nil, err
	}
	text, _ := content.(mcp.TextContent)
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("echo " + text.Text)},
		Model:           "it-model",
	}, nil
}

// dialRelay connects an MCP client over streamable HTTP to g, keeping the
// GET stream open when listen (and waiting until it is).
func dialRelay(t *testing.T, g *gw, listen bool, opts ...mcpclient.ClientOption) *session {
	var topts []transport.StreamableHTTPCOption
	if listen {
		topts = append(topts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(g.MCPURL, topts...)
	if err != nil {
		t.Fatal(err)
	}
	s := startSession(t, mcpclient.NewClient(tr, opts...))
	if listen {
		// mcp-go queues a notification to the session until a stream
		// takes it, and none but the GET stream is open now.
		got := make(chan struct{}, 1)
		s.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == "notifications/hangar_test" {
				select {
				case got <- struct{}{}:
				default:
				}
			}
		})
		// The session joins the server's set a moment after its
		// handshake answered (CI once sent into that moment).
		deadline := time.Now().Add(callTimeout)
		for {
			err := g.App.MCP.SendNotificationToSpecificClient(tr.GetSessionId(), "notifications/hangar_test", nil)
			if err == nil {
				break
			}
			if !errors.Is(err, server.ErrSessionNotFound) || time.Now().After(deadline) {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		select {
		case <-got:
		case <-time.After(callTimeout):
			t.Fatal("the GET stream did not open")
		}
	}
	return s
}

// A provider's (testkit's, on 2025-11-25 over stdio in its container)
// sampling request during a call by callable name reaches the calling
// client over streamable HTTP: on 2025-11-25 on the GET stream it keeps
// open, on 2026-07-28 by multi round trip. A 2025-11-25 client without a
// GET stream, or a client that did not declare sampling, is refused at
// once with a clear error that the provider turns into its answer.
// (mcp-go's examples/everything has no tool that samples: its sampleLLM
// is commented out.)
func TestFrontDoorSamplingRelayed(t *testing.T) {
	g := startGateway(t, testkitConfig)
	c := newRawClient(t, g.MCPURL)
	legacy := mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	plain := connect(t, g.MCPURL, legacy)
	plain.mustCall(t, "hangar_start", map[string]any{"mcp_server": "testkit"})
	c.waitListed(t, "testkit__sample")

	tests := []struct {
		name   string
		listen bool
		opts   []mcpclient.ClientOption
		want   string
		isErr  bool
	}{
		{"2025-11-25 with a GET stream", true, []mcpclient.ClientOption{legacy, mcpclient.WithSamplingHandler(model{})}, "model it-model said: echo hi", false},
		{"2025-11-25 without a GET stream", false, []mcpclient.ClientOption{legacy, mcpclient.WithSamplingHandler(model{})}, "no GET stream open", true},
		{"2026-07-28", false, []mcpclient.ClientOption{mcpclient.WithSamplingHandler(model{})}, "model it-model said: echo hi", false},
		{"2025-11-25 without sampling", false, []mcpclient.ClientOption{legacy}, "did not declare the sampling capability", true},
		{"2026-07-28 without sampling", false, nil, "did not declare the sampling capability", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := dialRelay(t, g, tt.listen, tt.opts...)
			began := time.Now()
			_, isErr, text := s.call(t, "testkit__sample", map[string]any{"prompt": "hi"})
			took := time.Since(began)
			if isErr != tt.isErr || !strings.Contains(text, tt.want) {
				t.Errorf("testkit__sample = %q (error %v), want %q", text, isErr, tt.want)
			}
			if took > callTimeout/4 {
				t.Errorf("testkit__sample took %s", took)
			}
		})
	}
}

// user answers sampling (whatever was asked), elicitation and roots
// requests.
type user struct{}

func (user) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("sampled by the client")},
		Model:           "it-model",
	}, nil
}

func (user) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"random": "chosen by the client"}}}, nil
}

func (user) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///client/work", Name: "work"}}}, nil
}

// The official Go SDK's everything example, a third-party server (on
// 2025-11-25 over stdio in its container), asks its client for sampling,
// form elicitation and roots; through the front door each reaches the
// calling client over streamable HTTP, on 2025-11-25 (GET stream open)
// and on 2026-07-28 (multi round trip).
func TestFrontDoorThirdPartyGoSDKRelay(t *testing.T) {
	g := startGateway(t, `
mcp_servers:
  gosdk:
    mode: docker
    image: mcp-hangar/gosdk-everything:dev
    start_timeout_s: 30
`)
	c := newRawClient(t, g.MCPURL)
	legacy := mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	answers := []mcpclient.ClientOption{mcpclient.WithSamplingHandler(user{}), mcpclient.WithElicitationHandler(user{}), mcpclient.WithRootsHandler(user{})}
	connect(t, g.MCPURL, legacy).mustCall(t, "hangar_start", map[string]any{"mcp_server": "gosdk"})
	c.waitListed(t, "gosdk__roots")
	for _, proto := range []struct {
		name   string
		listen bool
		opts   []mcpclient.ClientOption
	}{
		{"2025-11-25", true, append([]mcpclient.ClientOption{legacy}, answers...)},
		{"2026-07-28", false, answers},
	} {
		t.Run(proto.name, func(t *testing.T) {
			s := dialRelay(t, g, proto.listen, proto.opts...)
			for tool, want := range map[string]string{
				"gosdk__sample":        "sampled by the client",
				"gosdk__elicit__form_": "chosen by the client",
				"gosdk__roots":         "work:file:///client/work",
			} {
				if _, isErr, text := s.call(t, tool, nil); isErr || text != want {
					t.Errorf("%s = %q (error %v), want %q", tool, text, isErr, want)
				}
			}
		})
	}
}

// mcp-go's examples/everything, a server hangar's authors did not write,
// through the front door: its long-running tool reports progress to the
// caller (it fails without a progressToken's _meta, which the gateway
// used to drop), its resources and prompts are listed and served.
func TestFrontDoorThirdPartyEverything(t *testing.T) {
	g := startGateway(t, `
mcp_servers:
  everything:
    mode: docker
    image: mcp-hangar/everything:dev
    start_timeout_s: 30
`)
	c := newRawClient(t, g.MCPURL)
	s := connect(t, g.MCPURL)
	var mu sync.Mutex
	var progress []map[string]any
	s.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationProgress) {
			mu.Lock()
			progress = append(progress, n.Params.AdditionalFields)
			mu.Unlock()
		}
	})
	s.mustCall(t, "hangar_start", map[string]any{"mcp_server": "everything"})
	c.waitListed(t, "everything__longRunningOperation")

	req := mcp.CallToolRequest{}
	req.Params.Name = "everything__longRunningOperation"
	req.Params.Arguments = map[string]any{"duration": 0.6, "steps": 3}
	req.Params.Meta = &mcp.Meta{ProgressToken: "ev-1"}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := s.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := mcp.AsTextContent(res.Content[0]); res.IsError || !strings.HasPrefix(text.Text, "Long running operation completed") {
		t.Errorf("longRunningOperation = %+v", res)
	}
	// The provider may write its last progress after its result; the
	// gateway still routes it for a grace period, so wait for it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(progress)
		mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	if len(progress) != 3 {
		t.Errorf("%d progress notifications, want 3: %v", len(progress), progress)
	}
	for _, p := range progress {
		if p["progressToken"] != "ev-1" {
			t.Errorf("progress with token %v, want the caller's", p["progressToken"])
		}
	}
	mu.Unlock()

	// Resources and prompts of the running server.
	waitFor(t, 15*time.Second, "everything's resources listed", func() bool {
		r, err := s.ListResources(ctx, mcp.ListResourcesRequest{})
		return err == nil && slices.ContainsFunc(r.Resources, func(r mcp.Resource) bool { return r.URI == "test://static/resource" })
	})
	rr := mcp.ReadResourceRequest{}
	rr.Params.URI = "test://static/resource"
	read, err := s.ReadResource(ctx, rr)
	if err != nil || len(read.Contents) == 0 {
		t.Errorf("read test://static/resource: %+v, %v", read, err)
	}
	prompts, err := s.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil || !slices.ContainsFunc(prompts.Prompts, func(p mcp.Prompt) bool { return p.Name == "everything__simple_prompt" }) {
		t.Fatalf("prompts: %+v, %v", prompts, err)
	}
	gp := mcp.GetPromptRequest{}
	gp.Params.Name = "everything__simple_prompt"
	got, err := s.GetPrompt(ctx, gp)
	if err != nil || len(got.Messages) == 0 {
		t.Errorf("get simple_prompt: %+v, %v", got, err)
	}
}

// The official Go SDK's everything example through the front door: tool
// names with spaces and parentheses become callable names, structured
// output comes back unchanged, its prompts and resources are served.
func TestFrontDoorThirdPartyGoSDK(t *testing.T) {
	g := startGateway(t, `
mcp_servers:
  gosdk:
    mode: docker
    image: mcp-hangar/gosdk-everything:dev
    start_timeout_s: 30
`)
	c := newRawClient(t, g.MCPURL)
	s := connect(t, g.MCPURL)
	s.mustCall(t, "hangar_start", map[string]any{"mcp_server": "gosdk"})
	// "greet (structured)" sanitised.
	c.waitListed(t, "gosdk__greet__structured_")
	res := c.rpc(t, "tools/call", `{"name":"gosdk__greet__structured_","arguments":{"name":"hangar"}}`)
	if !bytes.Contains(res, []byte(`"structuredContent":{"message":"Hi hangar"}`)) {
		t.Errorf("greet (structured) = %s", res)
	}
	d := s.mustCall(t, "hangar_details", map[string]any{"mcp_server": "gosdk"})
	fd, _ := d["front_door"].(map[string]any)
	found := false
	for _, b := range fd["tools"].([]any) {
		if m := b.(map[string]any); m["callable"] == "gosdk__greet__structured_" && m["tool"] == "greet (structured)" {
			found = true
		}
	}
	if !found {
		t.Errorf("binding for greet (structured) not in %v", fd["tools"])
	}

	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	waitFor(t, 15*time.Second, "gosdk's prompts listed", func() bool {
		p, err := s.ListPrompts(ctx, mcp.ListPromptsRequest{})
		return err == nil && slices.ContainsFunc(p.Prompts, func(p mcp.Prompt) bool { return p.Name == "gosdk__greet" })
	})
	gp := mcp.GetPromptRequest{}
	gp.Params.Name = "gosdk__greet"
	gp.Params.Arguments = map[string]string{"name": "hangar"}
	if got, err := s.GetPrompt(ctx, gp); err != nil || len(got.Messages) == 0 {
		t.Errorf("get greet: %+v, %v", got, err)
	}
	rr := mcp.ReadResourceRequest{}
	rr.Params.URI = "embedded:info"
	if read, err := s.ReadResource(ctx, rr); err != nil || len(read.Contents) == 0 {
		t.Errorf("read embedded:info: %+v, %v", read, err)
	}
	// Its two resources share one URI: one keeps it, the other is shadowed
	// within the same server and so not listed twice.
	r, err := s.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, res := range r.Resources {
		if res.URI == "embedded:info" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("embedded:info listed %d times", n)
	}
}

// TestFrontDoorTokenServers: a token limited to servers: [kit-a] lists
// only kit-a's callables (and the hangar_* tools its scopes allow), is
// refused kit-b's with seed 004's -32002 naming the scope, and calls
// kit-a's.
func TestFrontDoorTokenServers(t *testing.T) {
	const adminTok, agentTok = "hgr_admin-token-for-servers", "hgr_agent-token-for-kit-a"
	g := startGateway(t, `
mcp_servers:
  kit-a:
    mode: docker
    image: mcp-hangar/testkit:dev
    start_timeout_s: 30
  kit-b:
    mode: docker
    image: mcp-hangar/testkit:dev
    start_timeout_s: 30
auth:
  tokens:
    - {name: admin, token_sha256: "`+auth.HashHex(adminTok)+`", scopes: [hangar:read, hangar:call, hangar:admin]}
    - {name: agent, token_sha256: "`+auth.HashHex(agentTok)+`", scopes: [hangar:read, hangar:call], servers: [kit-a]}
`)
	admin := newRawClientWith(t, g.MCPURL, adminTok)
	for _, id := range []string{"kit-a", "kit-b"} {
		admin.rpc(t, "tools/call", fmt.Sprintf(`{"name":"hangar_start","arguments":{"mcp_server":%q}}`, id))
	}
	admin.waitListed(t, "kit-a__echo")
	admin.waitListed(t, "kit-b__echo")

	agent := newRawClientWith(t, g.MCPURL, agentTok)
	var listed struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(agent.rpc(t, "tools/list", `{}`), &listed); err != nil {
		t.Fatal(err)
	}
	var providerTools, hangarTools []string
	for _, tool := range listed.Tools {
		if strings.HasPrefix(tool.Name, "hangar_") {
			hangarTools = append(hangarTools, tool.Name)
		} else {
			providerTools = append(providerTools, tool.Name)
		}
	}
	adminNames := admin.toolNames(t)
	var kitA []string
	for _, n := range adminNames {
		if strings.HasPrefix(n, "kit-a__") {
			kitA = append(kitA, n)
		}
	}
	slices.Sort(providerTools)
	if len(kitA) == 0 || !slices.Equal(providerTools, kitA) {
		t.Errorf("agent lists %v, want kit-a's callables %v", providerTools, kitA)
	}
	for _, want := range []string{"hangar_list", "hangar_details", "hangar_call"} {
		if !slices.Contains(hangarTools, want) {
			t.Errorf("agent does not list %s: %v", want, hangarTools)
		}
	}
	for _, admin := range []string{"hangar_start", "hangar_stop", "hangar_load"} {
		if slices.Contains(hangarTools, admin) {
			t.Errorf("agent lists %s, which needs hangar:admin", admin)
		}
	}

	// kit-b's callable: refused before mcp-go, seed 004's code and words,
	// the scope named in the error and the challenge.
	a := agent.post(t, "tools/call", `{"name":"kit-b__echo","arguments":{"text":"no"}}`)
	if a.Error == nil || a.Error.Code != -32002 || a.Error.Message != "Token missing required scope: server:kit-b" {
		t.Errorf("kit-b__echo for the agent: HTTP %d, error %+v", a.Status, a.Error)
	}
	if a.Status != http.StatusForbidden || !strings.Contains(a.Header.Get("WWW-Authenticate"), `scope="server:kit-b"`) {
		t.Errorf("kit-b__echo refusal: HTTP %d, WWW-Authenticate %q", a.Status, a.Header.Get("WWW-Authenticate"))
	}
	res := agent.rpc(t, "tools/call", `{"name":"kit-a__echo","arguments":{"text":"yes"}}`)
	if !bytes.Contains(res, []byte(`"text":"yes"`)) || bytes.Contains(res, []byte(`"isError":true`)) {
		t.Errorf("kit-a__echo for the agent = %s", res)
	}
}

// TestFrontDoorCompletionEverything: completion/complete through the front
// door reaches mcp-go's everything server under its own prompt name and
// resource template, and unknown refs are refused.
func TestFrontDoorCompletionEverything(t *testing.T) {
	g := startGateway(t, `
mcp_servers:
  everything:
    mode: docker
    image: mcp-hangar/everything:dev
    start_timeout_s: 30
`)
	c := newRawClient(t, g.MCPURL)
	var initRes struct {
		Capabilities struct {
			Completions *struct{} `json:"completions"`
			Resources   struct {
				Subscribe bool `json:"subscribe"`
			} `json:"resources"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(newRawClient(t, g.MCPURL).rpc(t, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}`), &initRes); err != nil {
		t.Fatal(err)
	}
	if initRes.Capabilities.Completions == nil || !initRes.Capabilities.Resources.Subscribe {
		t.Errorf("capabilities %+v: completions and resources.subscribe not advertised", initRes.Capabilities)
	}
	c.rpc(t, "tools/call", `{"name":"hangar_start","arguments":{"mcp_server":"everything"}}`)
	waitFor(t, 15*time.Second, "everything's prompts listed", func() bool {
		return bytes.Contains(c.rpc(t, "prompts/list", `{}`), []byte(`"everything__complex_prompt"`))
	})
	waitFor(t, 15*time.Second, "everything's templates listed", func() bool {
		return bytes.Contains(c.rpc(t, "resources/templates/list", `{}`), []byte(`test://dynamic/resource/{id}`))
	})

	var got struct {
		Completion mcp.Completion `json:"completion"`
	}
	res := c.rpc(t, "completion/complete", `{"ref":{"type":"ref/prompt","name":"everything__complex_prompt"},"argument":{"name":"style","value":""}}`)
	if err := json.Unmarshal(res, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Completion.Values) == 0 {
		t.Errorf("complex_prompt style completions: %s", res)
	}
	res = c.rpc(t, "completion/complete", `{"ref":{"type":"ref/resource","uri":"test://dynamic/resource/{id}"},"argument":{"name":"id","value":"1"}}`)
	got.Completion = mcp.Completion{}
	if err := json.Unmarshal(res, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Completion.Values) == 0 || !slices.ContainsFunc(got.Completion.Values, func(v string) bool { return strings.HasPrefix(v, "1") }) {
		t.Errorf("dynamic resource id completions: %s", res)
	}
	for _, ref := range []string{`{"type":"ref/prompt","name":"complex_prompt"}`, `{"type":"ref/resource","uri":"test://nowhere/{x}"}`} {
		a := c.post(t, "completion/complete", `{"ref":`+ref+`,"argument":{"name":"x","value":""}}`)
		if a.Error == nil || !strings.Contains(a.Error.Message, "not found") {
			t.Errorf("completion for %s: %+v", ref, a.Error)
		}
	}
}

// TestFrontDoorSubscribeEverything: resources/subscribe through the front
// door subscribes mcp-go's everything server once for two sessions, and
// the last session's DELETE unsubscribes it (everything logs what it is
// asked on stderr, whose tail hangar_details shows).
func TestFrontDoorSubscribeEverything(t *testing.T) {
	g := startGateway(t, `
mcp_servers:
  everything:
    mode: docker
    image: mcp-hangar/everything:dev
    start_timeout_s: 30
`)
	c1, c2 := newRawClient(t, g.MCPURL), newRawClient(t, g.MCPURL)
	c1.rpc(t, "tools/call", `{"name":"hangar_start","arguments":{"mcp_server":"everything"}}`)
	waitFor(t, 15*time.Second, "everything's resources listed", func() bool {
		return bytes.Contains(c1.rpc(t, "resources/list", `{}`), []byte(`"test://static/resource"`))
	})
	for _, c := range []*rawClient{c1, c2} {
		c.rpc(t, "resources/subscribe", `{"uri":"test://static/resource"}`)
	}
	if a := c1.post(t, "resources/subscribe", `{"uri":"test://nowhere"}`); a.Error == nil || !strings.Contains(a.Error.Message, "not found") {
		t.Errorf("subscribe to a URI nobody serves: %+v", a.Error)
	}
	// What everything was asked, from its stderr as hangar_details shows it.
	count := func(method string) int {
		var res struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal(c1.rpc(t, "tools/call", `{"name":"hangar_details","arguments":{"mcp_server":"everything"}}`), &res); err != nil || len(res.Content) == 0 {
			t.Fatalf("hangar_details: %v", err)
		}
		return strings.Count(res.Content[0].Text, "beforeAny: "+method+",")
	}
	waitFor(t, 5*time.Second, "everything subscribed", func() bool { return count("resources/subscribe") == 1 })
	c1.rpc(t, "resources/unsubscribe", `{"uri":"test://static/resource"}`)
	// c2 still holds it: nothing sent upstream. Its DELETE ends it.
	del, err := http.NewRequest(http.MethodDelete, g.MCPURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	del.Header.Set("Mcp-Session-Id", c2.session)
	resp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	waitFor(t, 5*time.Second, "everything unsubscribed", func() bool { return count("resources/unsubscribe") == 1 })
	if n := count("resources/subscribe"); n != 1 {
		t.Errorf("everything subscribed %d times for two sessions", n)
	}
}

// Right after start, before anything (or any prefetch) read a catalog, a
// call by callable name reads the owner's catalog and is served: a server
// and a group (through its strategy: env names the member that answered)
// that never ran. A name no server can own is unknown at once. A fresh
// gateway with prefetch lists the group's tools without any call.
func TestFrontDoorCallsBeforeCatalogsAreKnown(t *testing.T) {
	g := startGateway(t, `
front_door: {prefetch: false}
mcp_servers:
  math:
    mode: docker
    image: mcp-hangar/math:dev
    start_timeout_s: 30
  pool:
    mode: group
    strategy: round_robin
    members:
      - {id: t1, mode: docker, image: mcp-hangar/testkit:dev, env: {MEMBER: t1}, start_timeout_s: 30}
      - {id: t2, mode: docker, image: mcp-hangar/testkit:dev, env: {MEMBER: t2}, start_timeout_s: 30}
`)
	c := newRawClient(t, g.MCPURL)
	if res := c.rpc(t, "tools/call", `{"name":"math__add","arguments":{"a":20,"b":22}}`); !bytes.Contains(res, []byte("42")) {
		t.Errorf("math__add before its catalog was known: %s", res)
	}
	var members []string
	for range 2 {
		res := c.rpc(t, "tools/call", `{"name":"pool__env","arguments":{"name":"MEMBER"}}`)
		for _, m := range []string{"t1", "t2"} {
			if bytes.Contains(res, []byte(m)) {
				members = append(members, m)
			}
		}
	}
	if slices.Sort(members); !slices.Equal(members, []string{"t1", "t2"}) {
		t.Errorf("pool__env answered by %v, want t1 and t2 (round robin)", members)
	}
	began := time.Now()
	if a := c.post(t, "tools/call", `{"name":"nobody__add","arguments":{}}`); a.Error == nil && !bytes.Contains(a.Result, []byte(`"isError":true`)) {
		t.Errorf("nobody__add: %+v, want unknown", a)
	}
	if took := time.Since(began); took > time.Second {
		t.Errorf("an unknown name took %s", took)
	}

	// Prefetch: the group is listed with no call at all.
	g2 := startGateway(t, `
front_door: {prefetch: true}
mcp_servers:
  pool:
    mode: group
    members:
      - {id: t1, mode: docker, image: mcp-hangar/testkit:dev, start_timeout_s: 30}
      - {id: t2, mode: docker, image: mcp-hangar/testkit:dev, start_timeout_s: 30}
`)
	newRawClient(t, g2.MCPURL).waitListed(t, "pool__echo")
}
