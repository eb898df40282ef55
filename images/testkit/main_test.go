package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

const testTimeout = 10 * time.Second

var quietLogger = slog.New(slog.DiscardHandler)

func newClient(t *testing.T) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)

	c, err := client.NewInProcessClient(newServer("testkit"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "testkit-test", Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return c
}

func callTool(t *testing.T, c *client.Client, tool string, args map[string]any) (string, bool) {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: got %d content items, want 1", tool, len(res.Content))
	}
	text, ok := mcp.AsTextContent(res.Content[0])
	if !ok {
		t.Fatalf("%s: content is %T, want text", tool, res.Content[0])
	}
	return text.Text, res.IsError
}

func TestEcho(t *testing.T) {
	c := newClient(t)
	if got, isErr := callTool(t, c, "echo", map[string]any{"text": "héllo\nworld"}); got != "héllo\nworld" || isErr {
		t.Errorf("echo = %q (error %v)", got, isErr)
	}
}

func TestBig(t *testing.T) {
	c := newClient(t)
	for _, n := range []int{0, 1, 1 << 20} {
		got, isErr := callTool(t, c, "big", map[string]any{"bytes": n})
		if isErr || len(got) != n || strings.Trim(got, "x") != "" {
			t.Errorf("big(%d): got %d bytes (error %v)", n, len(got), isErr)
		}
	}
	if _, isErr := callTool(t, c, "big", map[string]any{"bytes": maxBigBytes + 1}); !isErr {
		t.Error("big above the limit: want a tool error")
	}
}

func TestFail(t *testing.T) {
	c := newClient(t)
	if got, isErr := callTool(t, c, "fail", nil); got != "requested failure" || !isErr {
		t.Errorf("fail = %q (error %v), want the default message as an error", got, isErr)
	}
	if got, isErr := callTool(t, c, "fail", map[string]any{"message": "boom"}); got != "boom" || !isErr {
		t.Errorf("fail(boom) = %q (error %v)", got, isErr)
	}
}

func TestSleep(t *testing.T) {
	c := newClient(t)
	if got, isErr := callTool(t, c, "sleep", map[string]any{"ms": 10}); got != "slept 10 ms" || isErr {
		t.Errorf("sleep = %q (error %v)", got, isErr)
	}
}

func TestEnv(t *testing.T) {
	t.Setenv("TESTKIT_PROBE", "present")
	c := newClient(t)
	if got, _ := callTool(t, c, "env", map[string]any{"name": "TESTKIT_PROBE"}); got != "present" {
		t.Errorf("env(TESTKIT_PROBE) = %q", got)
	}
	if got, _ := callTool(t, c, "env", map[string]any{"name": "TESTKIT_SURELY_UNSET"}); got != "" {
		t.Errorf("env(unset) = %q, want empty", got)
	}
}

func TestAlloc(t *testing.T) {
	c := newClient(t)
	if got, isErr := callTool(t, c, "alloc", map[string]any{"mb": 2}); got != "allocated 2 MiB" || isErr {
		t.Errorf("alloc = %q (error %v)", got, isErr)
	}
}

func TestSchemaKeepsAnyOf(t *testing.T) {
	c := newClient(t)
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var schema *mcp.Tool
	for i := range res.Tools {
		if res.Tools[i].Name == "schema" {
			schema = &res.Tools[i]
		}
	}
	if schema == nil {
		t.Fatal("schema tool not listed")
	}
	// The client decodes into a typed schema; re-encoding it shows what
	// actually crossed the wire under properties.
	raw, err := json.Marshal(schema.InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Properties struct {
			V struct {
				AnyOf []map[string]any `json:"anyOf"`
			} `json:"v"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatal(err)
	}
	if got := decoded.Properties.V.AnyOf; len(got) != 2 || got[0]["type"] != "string" || got[1]["type"] != "number" {
		t.Errorf("schema tool input schema = %s, want anyOf string|number kept", raw)
	}

	got, isErr := callTool(t, c, "schema", map[string]any{"v": 4.5})
	if isErr || got != `{"v":4.5}` {
		t.Errorf("schema = %q (error %v)", got, isErr)
	}
}

// rpcReply is a JSON-RPC response as seen on the wire.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// stdioPeer drives serveStdio over pipes, as a client process would.
type stdioPeer struct {
	in      *io.PipeWriter
	replies chan rpcReply
	done    chan error
}

func startStdio(t *testing.T, mode protocolMode) *stdioPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &stdioPeer{in: inW, replies: make(chan rpcReply, 16), done: make(chan error, 1)}

	go func() {
		err := serveStdio(context.Background(), newServer("testkit"), mode, inR, outW, quietLogger)
		outW.Close()
		p.done <- err
	}()
	go func() {
		defer close(p.replies)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var r rpcReply
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Errorf("server wrote a line that is not JSON: %q", sc.Text())
				continue
			}
			p.replies <- r
		}
	}()
	return p
}

func (p *stdioPeer) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (p *stdioPeer) next(t *testing.T) rpcReply {
	t.Helper()
	select {
	case r, ok := <-p.replies:
		if !ok {
			t.Fatal("server closed its output")
		}
		return r
	case <-time.After(testTimeout):
		t.Fatal("no reply from server")
	}
	return rpcReply{}
}

// close ends the input and returns whatever the server still wrote.
func (p *stdioPeer) close(t *testing.T) []rpcReply {
	t.Helper()
	p.in.Close()
	var rest []rpcReply
	for r := range p.replies {
		rest = append(rest, r)
	}
	if err := <-p.done; err != nil {
		t.Errorf("serveStdio: %v", err)
	}
	return rest
}

const (
	initializeLine = `{"jsonrpc":"2.0","id":%s,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	discoverLine   = `{"jsonrpc":"2.0","id":%s,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	pingLine       = `{"jsonrpc":"2.0","id":%s,"method":"ping"}`
)

func line(format, id string) string { return strings.Replace(format, "%s", id, 1) }

func TestStdioLegacyIgnoresDiscover(t *testing.T) {
	p := startStdio(t, protocolLegacy)
	p.send(t, line(discoverLine, `"discover"`))
	p.send(t, line(initializeLine, "2"))
	if r := p.next(t); string(r.ID) != "2" || r.Error != nil || r.Result == nil {
		t.Fatalf("initialize reply = %+v, want a result for id 2", r)
	}
	p.send(t, line(pingLine, "3"))
	if r := p.next(t); string(r.ID) != "3" {
		t.Fatalf("ping reply has id %s, want 3", r.ID)
	}
	for _, r := range p.close(t) {
		t.Errorf("unexpected reply %+v: server/discover must go unanswered", r)
	}
}

func TestStdioModernRefusesInitialize(t *testing.T) {
	p := startStdio(t, protocolModern)
	p.send(t, line(initializeLine, `"init-1"`))
	r := p.next(t)
	if string(r.ID) != `"init-1"` || r.Error == nil || r.Error.Code != mcp.METHOD_NOT_FOUND {
		t.Fatalf("initialize reply = %+v, want error %d for id \"init-1\"", r, mcp.METHOD_NOT_FOUND)
	}

	p.send(t, line(discoverLine, "2"))
	r = p.next(t)
	var discovered mcp.DiscoverResult
	if r.Error != nil || json.Unmarshal(r.Result, &discovered) != nil ||
		!slices.Equal(discovered.SupportedVersions, []string{mcp.ProtocolVersion20260728}) {
		t.Fatalf("server/discover reply = %+v %s, want a result listing only %s", r, r.Result, mcp.ProtocolVersion20260728)
	}
	p.close(t)
}

func TestStdioAutoAnswersBoth(t *testing.T) {
	p := startStdio(t, protocolAuto)
	p.send(t, line(discoverLine, "1"))
	if r := p.next(t); r.Error != nil || r.Result == nil {
		t.Fatalf("server/discover reply = %+v, want a result", r)
	}
	p.send(t, line(initializeLine, "2"))
	if r := p.next(t); r.Error != nil || r.Result == nil {
		t.Fatalf("initialize reply = %+v, want a result", r)
	}
	p.close(t)
}

func TestHTTPFilter(t *testing.T) {
	var reached []string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		reached = append(reached, string(body))
		w.WriteHeader(http.StatusOK)
	})
	post := func(t *testing.T, url, body string, timeout time.Duration) (*http.Response, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		t.Cleanup(cancel)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return http.DefaultClient.Do(req)
	}

	t.Run("modern refuses initialize", func(t *testing.T) {
		reached = nil
		srv := httptest.NewServer(filterHTTP(protocolModern, holdUntilGone, next, quietLogger))
		defer srv.Close()

		resp, err := post(t, srv.URL, line(initializeLine, "7"), testTimeout)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r rpcReply
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		if string(r.ID) != "7" || r.Error == nil || r.Error.Code != mcp.METHOD_NOT_FOUND {
			t.Errorf("reply = %+v, want method-not-found for id 7", r)
		}
		if _, err := post(t, srv.URL, line(pingLine, "8"), testTimeout); err != nil {
			t.Fatal(err)
		}
		if len(reached) != 1 || !strings.Contains(reached[0], `"ping"`) {
			t.Errorf("requests passed on = %q, want only the ping, body intact", reached)
		}
	})

	t.Run("legacy holds discover", func(t *testing.T) {
		reached = nil
		srv := httptest.NewServer(filterHTTP(protocolLegacy, holdUntilGone, next, quietLogger))
		defer srv.Close()

		_, err := post(t, srv.URL, line(discoverLine, "1"), 200*time.Millisecond)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("server/discover: err = %v, want the client to time out", err)
		}
		if len(reached) != 0 {
			t.Errorf("server/discover was passed on: %q", reached)
		}
	})
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := config{transport: "stdio", port: 8080, path: "/mcp", protocol: protocolAuto, name: "testkit"}
	if cfg != want {
		t.Errorf("defaults = %+v, want %+v", cfg, want)
	}
	for _, args := range [][]string{
		{"--transport", "ws"},
		{"--protocol", "future"},
		{"--transport", "sse", "--protocol", "modern"},
		{"--exit-on-start", "-1"},
		{"--port", "0"},
		{"extra"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%q): want an error", args)
		}
	}
}

func TestParseFlagsWriteOnStart(t *testing.T) {
	cfg, err := parseFlags([]string{"--write-on-start", "/state.txt"})
	if err != nil || cfg.writeOnStart != "/state.txt" {
		t.Errorf("parseFlags = %+v, %v; want writeOnStart /state.txt", cfg, err)
	}
}

func TestProgressTool(t *testing.T) {
	c := newClient(t)
	var mu sync.Mutex
	var got []string
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationProgress) && n.Params.AdditionalFields["progressToken"] == "tk" {
			mu.Lock()
			got = append(got, fmt.Sprint(n.Params.AdditionalFields["progress"]))
			mu.Unlock()
		}
	})
	var req mcp.CallToolRequest
	req.Params.Name = "progress"
	req.Params.Arguments = map[string]any{"steps": 2, "delay_ms": 1}
	req.Params.Meta = &mcp.Meta{ProgressToken: "tk"}
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := mcp.AsTextContent(res.Content[0]); text.Text != "done 2 steps, token given: true" {
		t.Errorf("progress = %q", text.Text)
	}
	if string(res.RawStructuredContent) != `{"steps":2,"big":12345678901234567890123}` {
		t.Errorf("structuredContent = %s", res.RawStructuredContent)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != "1" || got[1] != "2" {
		t.Errorf("progress notifications %v, want [1 2]", got)
	}
	if len(longToolName) != 70 {
		t.Errorf("longToolName is %d characters", len(longToolName))
	}
	if text, _ := callTool(t, c, longToolName, nil); text != "long" {
		t.Errorf("%s = %q", longToolName, text)
	}
}
