package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-hangar/hangar/internal/app"
)

// The official go-sdk client (v1.8) against a real gateway, on both
// protocol versions.

var protocols = []string{mcp.LATEST_LEGACY_PROTOCOL_VERSION, mcp.LATEST_PROTOCOL_VERSION}

// dialSDK connects a go-sdk client speaking version.
func dialSDK(t testing.TB, url, version string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "compat", Version: "1"}, opts)
	s, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: url}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("go-sdk connect on %s: %v", version, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if got := s.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("the session speaks %q, want %q", got, version)
	}
	return s
}

// awaitSignal waits up to within for one value on c.
func awaitSignal(c <-chan struct{}, within time.Duration) bool {
	select {
	case <-c:
		return true
	case <-time.After(within):
		return false
	}
}

func drainSignals(c chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// TestCompatSDKListChangedOnHotload: hangar_load and hangar_unload reach a
// go-sdk client's tools/list_changed handler within a second, on 2026-07-28
// through its subscriptions/listen stream.
func TestCompatSDKListChangedOnHotload(t *testing.T) {
	catalog := hotloadCatalog()
	g := startGateway(t, fmt.Sprintf(`
registry:
  url: ""
  catalog_file: %q
  verified_namespaces: ["io.github.mcp-hangar/"]
`, catalog))
	for _, version := range protocols {
		t.Run(version, func(t *testing.T) {
			changed := make(chan struct{}, 16)
			s := dialSDK(t, g.MCPURL, version, &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
				changed <- struct{}{}
			}})
			if _, err := s.ListTools(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "hangar_load", Arguments: map[string]any{"name": "testkit"}})
			if err != nil || res.IsError {
				t.Fatalf("hangar_load: %v %+v", err, res)
			}
			if !awaitSignal(changed, 2*time.Second) {
				t.Fatal("no tools/list_changed after hangar_load")
			}
			id, _ := res.StructuredContent.(map[string]any)["mcp_server"].(string)
			drainSignals(changed)
			if res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "hangar_unload", Arguments: map[string]any{"mcp_server": id}}); err != nil || res.IsError {
				t.Fatalf("hangar_unload(%s): %v %+v", id, err, res)
			}
			if !awaitSignal(changed, 2*time.Second) {
				t.Fatal("no tools/list_changed after hangar_unload")
			}
		})
	}
}

// ---------------------------------------------------------------------------
// The compatibility matrix: both Go MCP clients on both protocol versions
// against mcp-go's and the official go-sdk's "everything" servers behind
// the front door. Every cell passes or names the spec reason it cannot
// apply; the table is COMPATIBILITY.md at the repository's root, which
// UPDATE_COMPATIBILITY=1 rewrites and every other run checks.

// compatClient is what a matrix cell does with one MCP client.
type compatClient interface {
	tools(ctx context.Context) ([]string, error)
	// call returns the text of a tool's answer; progress, when not nil,
	// is sent the progress notifications the call gets.
	call(ctx context.Context, name string, args map[string]any, progress chan<- struct{}) (string, bool, error)
	readResource(ctx context.Context, uri string) (int, error)
	subscribe(ctx context.Context, uri string) error
	prompt(ctx context.Context, name string, args map[string]string) (int, error)
	complete(ctx context.Context, prompt, arg string) ([]string, error)
	close()
}

// mcpgoClient is mcp-go's client.
type mcpgoClient struct {
	s        *session
	progress chan<- struct{}
	mu       sync.Mutex
}

func dialMCPGo(t *testing.T, url, version string, changed chan<- struct{}) *mcpgoClient {
	t.Helper()
	opts := []mcpclient.ClientOption{mcpclient.WithSamplingHandler(user{}), mcpclient.WithElicitationHandler(user{}), mcpclient.WithRootsHandler(user{})}
	listen := version == mcp.LATEST_LEGACY_PROTOCOL_VERSION
	if listen {
		opts = append(opts, mcpclient.WithProtocolVersion(version))
	}
	c := &mcpgoClient{}
	s := dialRelay(t, &gw{MCPURL: url, App: compatApp}, listen, opts...)
	s.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case string(mcp.MethodNotificationToolsListChanged):
			select {
			case changed <- struct{}{}:
			default:
			}
		case string(mcp.MethodNotificationProgress):
			c.mu.Lock()
			p := c.progress
			c.mu.Unlock()
			if p != nil {
				select {
				case p <- struct{}{}:
				default:
				}
			}
		}
	})
	c.s = s
	if !listen {
		// On 2026-07-28 mcp-go's client gets list_changed only on a
		// subscriptions/listen stream it opens itself.
		stop, err := s.ListenAsync(context.Background(), mcp.SubscriptionFilter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	return c
}

func (c *mcpgoClient) tools(ctx context.Context) ([]string, error) {
	r, err := c.s.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Name)
	}
	return out, nil
}

func (c *mcpgoClient) call(ctx context.Context, name string, args map[string]any, progress chan<- struct{}) (string, bool, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	if progress != nil {
		c.mu.Lock()
		c.progress = progress
		c.mu.Unlock()
		req.Params.Meta = &mcp.Meta{ProgressToken: "compat-1"}
	}
	res, err := c.s.CallTool(ctx, req)
	if err != nil {
		return "", false, err
	}
	var parts []string
	for _, x := range res.Content {
		if tc, ok := mcp.AsTextContent(x); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n"), res.IsError, nil
}

func (c *mcpgoClient) readResource(ctx context.Context, uri string) (int, error) {
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	r, err := c.s.ReadResource(ctx, req)
	if err != nil {
		return 0, err
	}
	return len(r.Contents), nil
}

func (c *mcpgoClient) subscribe(ctx context.Context, uri string) error {
	req := mcp.SubscribeRequest{}
	req.Params.URI = uri
	return c.s.Subscribe(ctx, req)
}

func (c *mcpgoClient) prompt(ctx context.Context, name string, args map[string]string) (int, error) {
	req := mcp.GetPromptRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	r, err := c.s.GetPrompt(ctx, req)
	if err != nil {
		return 0, err
	}
	return len(r.Messages), nil
}

func (c *mcpgoClient) complete(ctx context.Context, prompt, arg string) ([]string, error) {
	req := mcp.CompleteRequest{}
	req.Params.Ref = mcp.PromptReference{Type: "ref/prompt", Name: prompt}
	req.Params.Argument.Name = arg
	r, err := c.s.Complete(ctx, req)
	if err != nil {
		return nil, err
	}
	return r.Completion.Values, nil
}

func (c *mcpgoClient) close() { _ = c.s.Close() }

// sdkClient is the official go-sdk's client.
type sdkClient struct {
	s        *sdk.ClientSession
	mu       sync.Mutex
	progress chan<- struct{}
}

func dialGoSDK(t *testing.T, url, version string, changed chan<- struct{}) *sdkClient {
	t.Helper()
	c := &sdkClient{}
	opts := &sdk.ClientOptions{
		CreateMessageHandler: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			return &sdk.CreateMessageResult{Role: "assistant", Model: "it-model", Content: &sdk.TextContent{Text: "sampled by the client"}}, nil
		},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"random": "chosen by the client"}}, nil
		},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
		ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) {
			c.mu.Lock()
			p := c.progress
			c.mu.Unlock()
			if p != nil {
				select {
				case p <- struct{}{}:
				default:
				}
			}
		},
	}
	cl := sdk.NewClient(&sdk.Implementation{Name: "compat", Version: "1"}, opts)
	cl.AddRoots(&sdk.Root{URI: "file:///client/work", Name: "work"})
	s, err := cl.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: url}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("go-sdk connect on %s: %v", version, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	c.s = s
	return c
}

func (c *sdkClient) tools(ctx context.Context) ([]string, error) {
	r, err := c.s.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Name)
	}
	return out, nil
}

func (c *sdkClient) call(ctx context.Context, name string, args map[string]any, progress chan<- struct{}) (string, bool, error) {
	p := &sdk.CallToolParams{Name: name, Arguments: args}
	if progress != nil {
		c.mu.Lock()
		c.progress = progress
		c.mu.Unlock()
		p.SetProgressToken("compat-1")
	}
	res, err := c.s.CallTool(ctx, p)
	if err != nil {
		return "", false, err
	}
	var parts []string
	for _, x := range res.Content {
		if tc, ok := x.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n"), res.IsError, nil
}

func (c *sdkClient) readResource(ctx context.Context, uri string) (int, error) {
	r, err := c.s.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		return 0, err
	}
	return len(r.Contents), nil
}

func (c *sdkClient) subscribe(ctx context.Context, uri string) error {
	return c.s.Subscribe(ctx, &sdk.SubscribeParams{URI: uri})
}

func (c *sdkClient) prompt(ctx context.Context, name string, args map[string]string) (int, error) {
	r, err := c.s.GetPrompt(ctx, &sdk.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return 0, err
	}
	return len(r.Messages), nil
}

func (c *sdkClient) complete(ctx context.Context, prompt, arg string) ([]string, error) {
	r, err := c.s.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: prompt}, Argument: sdk.CompleteParamsArgument{Name: arg}})
	if err != nil {
		return nil, err
	}
	return r.Completion.Values, nil
}

func (c *sdkClient) close() { _ = c.s.Close() }

// compatApp is the gateway of the running matrix (dialRelay's GET-stream
// probe needs it).
var compatApp *app.App

// notApplicable is a cell's reason to be skipped, from the spec.
type notApplicable string

var compatFeatures = []string{"tools/list", "call by name", "hangar_call", "progress", "cancel", "disconnect", "sampling",
	"elicitation", "roots", "list_changed", "resources/read", "resources/subscribe", "prompts/get", "completion"}

// compatCell runs one feature with c; a non-empty notApplicable says why
// it cannot apply.
func compatCell(ctx context.Context, g *gw, feature, version string, dial func() (compatClient, <-chan struct{})) (notApplicable, error) {
	c, changed := dial()
	defer c.close()
	text := func(name string, args map[string]any, want string) error {
		got, isErr, err := c.call(ctx, name, args, nil)
		if err != nil {
			return err
		}
		if isErr || !strings.Contains(got, want) {
			return fmt.Errorf("%s answered %q (error %v), want %q", name, got, isErr, want)
		}
		return nil
	}
	inflightZero := func(what string) error {
		deadline := time.Now().Add(10 * time.Second)
		for g.App.Providers.Inflight()["everything"] != 0 {
			if time.Now().After(deadline) {
				return fmt.Errorf("the provider's call still runs 10 s after the %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return nil
	}
	startLong := func() (context.CancelFunc, <-chan error, error) {
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, _, err := c.call(cctx, "everything__longRunningOperation", map[string]any{"duration": 30, "steps": 30}, nil)
			done <- err
		}()
		deadline := time.Now().Add(10 * time.Second)
		for g.App.Providers.Inflight()["everything"] == 0 {
			if time.Now().After(deadline) {
				cancel()
				return nil, nil, errors.New("the long call never reached the provider")
			}
			time.Sleep(20 * time.Millisecond)
		}
		return cancel, done, nil
	}
	switch feature {
	case "tools/list":
		names, err := c.tools(ctx)
		if err != nil {
			return "", err
		}
		for _, want := range []string{"everything__echo", "gosdk__greet__structured_", "hangar_call"} {
			if !slices.Contains(names, want) {
				return "", fmt.Errorf("%s not listed in %v", want, names)
			}
		}
	case "call by name":
		if err := text("everything__echo", map[string]any{"message": "compat"}, "compat"); err != nil {
			return "", err
		}
		return "", text("gosdk__greet", map[string]any{"name": "compat"}, "compat")
	case "hangar_call":
		return "", text("hangar_call", one("everything", "echo", map[string]any{"message": "via hangar_call"}), "via hangar_call")
	case "progress":
		progress := make(chan struct{}, 16)
		got, isErr, err := c.call(ctx, "everything__longRunningOperation", map[string]any{"duration": 0.6, "steps": 3}, progress)
		if err != nil || isErr {
			return "", fmt.Errorf("longRunningOperation: %q %v %v", got, isErr, err)
		}
		if !awaitSignal(progress, 5*time.Second) {
			return "", errors.New("no progress notification")
		}
	case "cancel":
		cancel, done, err := startLong()
		if err != nil {
			return "", err
		}
		cancel()
		<-done
		if err := inflightZero("cancellation"); err != nil {
			return "", err
		}
		return "", text("everything__echo", map[string]any{"message": "after cancel"}, "after cancel")
	case "disconnect":
		_, _, err := startLong()
		if err != nil {
			return "", err
		}
		c.close()
		if err := inflightZero("disconnect"); err != nil {
			return "", err
		}
		c2, _ := dial()
		defer c2.close()
		got, isErr, err := c2.call(ctx, "everything__echo", map[string]any{"message": "after disconnect"}, nil)
		if err != nil || isErr || !strings.Contains(got, "after disconnect") {
			return "", fmt.Errorf("a new client after the disconnect: %q %v %v", got, isErr, err)
		}
	case "sampling":
		return "", text("gosdk__sample", nil, "sampled by the client")
	case "elicitation":
		return "", text("gosdk__elicit__form_", nil, "chosen by the client")
	case "roots":
		return "", text("gosdk__roots", nil, "file:///client/work")
	case "list_changed":
		if _, err := c.tools(ctx); err != nil {
			return "", err
		}
		// The stream that carries list_changed (the GET stream, or
		// subscriptions/listen) is up once one sent to everybody arrives.
		if err := awaitStream(ctx, g, changed); err != nil {
			return "", err
		}
		got, isErr, err := c.call(ctx, "hangar_load", map[string]any{"name": "testkit"}, nil)
		if err != nil || isErr {
			return "", fmt.Errorf("hangar_load: %q %v %v", got, isErr, err)
		}
		var loaded struct {
			Server string `json:"mcp_server"`
		}
		_ = json.Unmarshal([]byte(got), &loaded)
		unloaded := false
		unload := func() error {
			unloaded = true
			if got, isErr, err := c.call(ctx, "hangar_unload", map[string]any{"mcp_server": loaded.Server}, nil); err != nil || isErr {
				return fmt.Errorf("hangar_unload(%s): %q %v %v", loaded.Server, got, isErr, err)
			}
			return nil
		}
		defer func() {
			if !unloaded {
				_ = unload()
			}
		}()
		if !awaitSignal(changed, 2*time.Second) {
			return "", errors.New("no tools/list_changed within 2 s of hangar_load")
		}
		drainChanged(changed)
		if err := unload(); err != nil {
			return "", err
		}
		if !awaitSignal(changed, 2*time.Second) {
			return "", errors.New("no tools/list_changed within 2 s of hangar_unload")
		}
	case "resources/read":
		n, err := c.readResource(ctx, "test://static/resource")
		if err == nil && n == 0 {
			err = errors.New("no contents")
		}
		return "", err
	case "resources/subscribe":
		if version != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
			return "2026-07-28 removed resources/subscribe: resource updates come on subscriptions/listen", nil
		}
		return "", c.subscribe(ctx, "test://static/resource")
	case "prompts/get":
		n, err := c.prompt(ctx, "everything__simple_prompt", nil)
		if err == nil && n == 0 {
			err = errors.New("no messages")
		}
		return "", err
	case "completion":
		values, err := c.complete(ctx, "everything__complex_prompt", "style")
		if err == nil && len(values) == 0 {
			err = errors.New("no values")
		}
		return "", err
	default:
		return "", fmt.Errorf("unknown feature %q", feature)
	}
	return "", nil
}

// awaitStream sends tools/list_changed to every session until changed
// gets one, then drains what followed.
func awaitStream(ctx context.Context, g *gw, changed <-chan struct{}) error {
	for ctx.Err() == nil {
		g.App.MCP.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
		if awaitSignal(changed, 50*time.Millisecond) {
			// Earlier ones may still come (a GET stream's session queues
			// them): the change to test must not be taken for one.
			for awaitSignal(changed, 200*time.Millisecond) {
			}
			return nil
		}
	}
	return errors.New("no stream carries list_changed")
}

func drainChanged(c <-chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

func TestCompatibilityMatrix(t *testing.T) {
	catalog := hotloadCatalog()
	g := startGateway(t, fmt.Sprintf(`
mcp_servers:
  everything:
    mode: docker
    image: mcp-hangar/everything:dev
    start_timeout_s: 30
  gosdk:
    mode: docker
    image: mcp-hangar/gosdk-everything:dev
    start_timeout_s: 30
registry:
  url: ""
  catalog_file: %q
  verified_namespaces: ["io.github.mcp-hangar/"]
`, catalog))
	compatApp = g.App
	raw := newRawClient(t, g.MCPURL)
	for _, id := range []string{"everything", "gosdk"} {
		raw.rpc(t, "tools/call", fmt.Sprintf(`{"name":"hangar_start","arguments":{"mcp_server":%q}}`, id))
	}
	raw.waitListed(t, "everything__echo")
	raw.waitListed(t, "gosdk__roots")
	waitFor(t, 15*time.Second, "everything's prompts listed", func() bool {
		return bytes.Contains(raw.rpc(t, "prompts/list", `{}`), []byte(`"everything__complex_prompt"`))
	})

	type column struct {
		name    string
		version string
		dial    func(t *testing.T, version string) (compatClient, <-chan struct{})
	}
	var columns []column
	for _, version := range protocols {
		columns = append(columns,
			column{"mcp-go v1.2.1", version, func(t *testing.T, version string) (compatClient, <-chan struct{}) {
				ch := make(chan struct{}, 16)
				return dialMCPGo(t, g.MCPURL, version, ch), ch
			}},
			column{"go-sdk v1.8.0", version, func(t *testing.T, version string) (compatClient, <-chan struct{}) {
				ch := make(chan struct{}, 16)
				return dialGoSDK(t, g.MCPURL, version, ch), ch
			}})
	}
	cells := map[string][]string{}
	for _, feature := range compatFeatures {
		for _, col := range columns {
			t.Run(feature+"/"+col.name+"/"+col.version, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
				defer cancel()
				na, err := compatCell(ctx, g, feature, col.version, func() (compatClient, <-chan struct{}) { return col.dial(t, col.version) })
				cell := "pass"
				switch {
				case err != nil:
					cell = "FAIL"
					t.Error(err)
				case na != "":
					cell = "n/a: " + string(na)
				}
				cells[feature] = append(cells[feature], cell)
			})
		}
	}

	var b strings.Builder
	b.WriteString("# Compatibility\n\nWritten by `TestCompatibilityMatrix` (integration/compat_test.go): both Go MCP clients on both\n" +
		"protocol versions against the front door serving mcp-go's `everything` (mcp-hangar/everything:dev)\n" +
		"and the official go-sdk's (mcp-hangar/gosdk-everything:dev). `UPDATE_COMPATIBILITY=1` rewrites this\n" +
		"file; every other run fails when the matrix differs from it.\n\n| feature |")
	for _, col := range columns {
		b.WriteString(" " + col.name + " " + col.version + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(columns)) + "\n")
	for _, feature := range compatFeatures {
		b.WriteString("| " + feature + " | " + strings.Join(cells[feature], " | ") + " |\n")
	}
	path := filepath.Join(repoRoot, "COMPATIBILITY.md")
	if os.Getenv("UPDATE_COMPATIBILITY") == "1" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	kept, err := os.ReadFile(path)
	if err != nil || string(kept) != b.String() {
		t.Errorf("COMPATIBILITY.md is not what this run found (rerun with UPDATE_COMPATIBILITY=1): %v\n%s", err, b.String())
	}
}
