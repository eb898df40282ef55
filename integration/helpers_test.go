package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/app"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/endpoint"
)

// Timeouts of the helpers: generous against a loaded 2-core machine, short
// enough that a hang fails the test instead of the whole run.
const (
	callTimeout   = 60 * time.Second
	dockerTimeout = 15 * time.Second
)

// ---------------------------------------------------------------------------
// Logging

// testLog is an io.Writer into t.Log that turns into a no-op once the test
// has ended: background goroutines of the gateway may still log after the
// test returns, and t.Log would then panic.
type testLog struct {
	mu     sync.Mutex
	t      testing.TB
	closed bool
	buf    []byte
}

func newTestLog(t testing.TB) *testLog {
	l := &testLog{t: t}
	t.Cleanup(l.close)
	return l
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return len(p), nil
	}
	l.buf = append(l.buf, p...)
	for {
		i := strings.IndexByte(string(l.buf), '\n')
		if i < 0 {
			break
		}
		l.t.Log(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

func (l *testLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.t.Log(string(l.buf))
		l.buf = nil
	}
	l.closed = true
}

// ---------------------------------------------------------------------------
// Instances and configs

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// newInstance returns a gateway instance name unique to this test and run,
// starting with the suite's prefix.
func newInstance(t testing.TB) string {
	name := strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 32 {
		name = name[:32]
	}
	return suitePrefix + name + "-" + randomHex(3)
}

// writeConfig writes yaml to a file in a temporary directory of the test.
func writeConfig(t testing.TB, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// ---------------------------------------------------------------------------
// In-process gateway

// gw is a gateway running in the test process.
type gw struct {
	URL      string // http://127.0.0.1:port
	MCPURL   string // URL + "/mcp"
	Instance string
	App      *app.App
}

// startGateway runs an in-process gateway for the config yaml under a new
// instance name.
func startGateway(t testing.TB, yaml string) *gw {
	t.Helper()
	return startGatewayAs(t, newInstance(t), yaml)
}

// startGatewayAs runs an in-process gateway under the given instance name.
// The cleanup stops it, closes the app and fails the test if any container
// of the instance is left.
func startGatewayAs(t testing.TB, instance, yaml string) *gw {
	t.Helper()
	return startGatewayFile(t, writeConfig(t, yaml), app.Options{Instance: instance})
}

// startGatewayFile runs an in-process gateway on the config file at path
// (which hangar_reload_config re-reads), with opts (Instance defaults to a
// new one for the test, DataDir to a new temporary directory, Log to the
// test log).
func startGatewayFile(t testing.TB, path string, opts app.Options) *gw {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	// The front door's prefetch (on by default) starts every provider once
	// at boot to read its catalog; tests that count containers and cold
	// starts from boot run without it unless they set it themselves.
	if raw, _ := os.ReadFile(path); !bytes.Contains(raw, []byte("prefetch:")) {
		cfg.FrontDoor.Prefetch = false
	}
	if opts.Instance == "" {
		opts.Instance = newInstance(t)
	}
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(newTestLog(t), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	instance := opts.Instance
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Listen = ln.Addr().String()
	a, err := app.New(cfg, opts)
	if err != nil {
		_ = ln.Close()
		t.Fatalf("app.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- a.ServeHTTP(ctx, ln, endpoint.Options{}, 5*time.Second) }()

	g := &gw{URL: "http://" + ln.Addr().String(), Instance: instance, App: a}
	g.MCPURL = g.URL + "/mcp"
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("ServeHTTP: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("ServeHTTP did not return within 15s of its context ending")
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		if err := a.Close(cctx); err != nil {
			t.Errorf("app.Close: %v", err)
		}
		if left := containers(t, instance, ""); len(left) > 0 {
			t.Errorf("after app.Close, %d container(s) of instance %s remain: %s", len(left), instance, describe(left))
			removeContainers(t, left)
		}
	})
	return g
}

// ---------------------------------------------------------------------------
// Docker

// containers lists the managed containers of owner (and of server, if not
// empty), running or not.
func containers(t testing.TB, owner, server string) []container.Summary {
	t.Helper()
	f := make(client.Filters).Add("label", dockerrt.LabelManaged+"=true", dockerrt.LabelOwner+"="+owner)
	if server != "" {
		f.Add("label", dockerrt.LabelServer+"="+server)
	}
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	list, err := docker.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	return list.Items
}

func countContainers(t testing.TB, owner, server string) int {
	t.Helper()
	return len(containers(t, owner, server))
}

func describe(cs []container.Summary) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%.12s(server=%s state=%s)", c.ID, c.Labels[dockerrt.LabelServer], c.State)
	}
	return strings.Join(parts, ", ")
}

func removeContainers(t testing.TB, cs []container.Summary) {
	for _, c := range cs {
		removeContainer(t, c.ID)
	}
}

func removeContainer(t testing.TB, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	if _, err := docker.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true}); err != nil && !isNotFound(err) {
		t.Logf("remove container %.12s: %v", id, err)
	}
}

func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

// ---------------------------------------------------------------------------
// MCP clients

// session is an initialised MCP client session.
type session struct {
	*mcpclient.Client
	init *mcp.InitializeResult
}

// connect opens a streamable HTTP MCP session to url (the /mcp endpoint)
// with the given client options; the cleanup closes it.
func connect(t testing.TB, url string, opts ...mcpclient.ClientOption) *session {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	return startSession(t, mcpclient.NewClient(tr, opts...))
}

// startSession starts and initialises c; the cleanup closes it. The
// client's GET stream, when its transport keeps one, lives until then
// (mcp-go ties it to Start's context).
func startSession(t testing.TB, c *mcpclient.Client) *session {
	t.Helper()
	life, end := context.WithCancel(context.Background())
	t.Cleanup(end)
	ctx, cancel := context.WithTimeout(life, 30*time.Second)
	defer cancel()
	if err := c.Start(life); err != nil {
		_ = c.Close()
		t.Fatalf("mcp client start: %v", err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "hangar-integration", Version: "0"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		_ = c.Close()
		t.Fatalf("mcp initialize: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &session{Client: c, init: res}
}

// callE calls a tool without touching t, for use from goroutines. The map
// is the tool's JSON answer (nil when the text is not a JSON object).
func (s *session) callE(ctx context.Context, name string, args map[string]any) (map[string]any, bool, string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := s.CallTool(ctx, req)
	if err != nil {
		return nil, false, "", fmt.Errorf("%s: %w", name, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			texts = append(texts, tc.Text)
		}
	}
	text := strings.Join(texts, "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		m = nil
		// Fall back to the structured content, if any.
		if res.StructuredContent != nil {
			if b, err := json.Marshal(res.StructuredContent); err == nil {
				_ = json.Unmarshal(b, &m)
			}
		}
	}
	return m, res.IsError, text, nil
}

// call calls a tool and fails the test on a protocol error; tool errors are
// returned as isError with their text.
func (s *session) call(t testing.TB, name string, args map[string]any) (map[string]any, bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	m, isErr, text, err := s.callE(ctx, name, args)
	if err != nil {
		t.Fatal(err)
	}
	return m, isErr, text
}

// mustCall calls a tool that must succeed and returns its JSON answer.
func (s *session) mustCall(t testing.TB, name string, args map[string]any) map[string]any {
	t.Helper()
	m, isErr, text := s.call(t, name, args)
	if isErr {
		t.Fatalf("%s(%v): tool error: %s", name, args, text)
	}
	if m == nil {
		t.Fatalf("%s(%v): answer is not a JSON object: %q", name, args, text)
	}
	return m
}

// one is hangar_call's arguments for a single call.
func one(server, tool string, args map[string]any) map[string]any {
	c := map[string]any{"mcp_server": server, "tool": tool}
	if args != nil {
		c["arguments"] = args
	}
	return map[string]any{"calls": []any{c}}
}

// result returns the single result of a hangar_call answer.
func result(t testing.TB, batch map[string]any) map[string]any {
	t.Helper()
	r, err := firstResult(batch)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func firstResult(batch map[string]any) (map[string]any, error) {
	rs, ok := batch["results"].([]any)
	if !ok || len(rs) != 1 {
		b, _ := json.Marshal(batch)
		return nil, fmt.Errorf("hangar_call answer has no single result: %s", b)
	}
	r, ok := rs[0].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("hangar_call result is %T", rs[0])
	}
	return r, nil
}

// callOne runs one tool through hangar_call and returns its result.
func (s *session) callOne(t testing.TB, server, tool string, args map[string]any) map[string]any {
	t.Helper()
	return result(t, s.mustCall(t, "hangar_call", one(server, tool, args)))
}

// str returns m[k] as a string ("" when absent or not a string).
func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// strings of a JSON list.
func stringList(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// providerState returns the state hangar_list reports for id.
func (s *session) providerState(t testing.TB, id string) string {
	t.Helper()
	l := s.mustCall(t, "hangar_list", nil)
	servers, _ := l["mcp_servers"].([]any)
	for _, x := range servers {
		m, _ := x.(map[string]any)
		if str(m, "mcp_server") == id {
			return str(m, "state")
		}
	}
	t.Fatalf("hangar_list does not list %s: %v", id, l)
	return ""
}

// ---------------------------------------------------------------------------
// Processes

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitHealthy polls url until it answers 200 or the deadline passes; exited
// ends the wait early when the process is gone.
func waitHealthy(t testing.TB, url string, within time.Duration, exited <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(within)
	hc := &http.Client{Timeout: time.Second}
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Fatalf("the gateway process exited before %s answered", url)
		default:
		}
		resp, err := hc.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s not healthy within %s: %v", url, within, last)
}
