package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The two protocol versions every client kind is run on.
const (
	v20251125 = "2025-11-25"
	v20260728 = "2026-07-28"
)

// clientKind is one MCP client library on one protocol version.
type clientKind string

const (
	mcpgoLegacy clientKind = "mcpgo-20251125"
	mcpgoModern clientKind = "mcpgo-20260728"
	sdkLegacy   clientKind = "gosdk-20251125"
	sdkModern   clientKind = "gosdk-20260728"
)

var clientKinds = []clientKind{mcpgoLegacy, mcpgoModern, sdkLegacy, sdkModern}

func (k clientKind) version() string {
	if strings.HasSuffix(string(k), "20251125") {
		return v20251125
	}
	return v20260728
}

func (k clientKind) goSDK() bool { return strings.HasPrefix(string(k), "gosdk") }

// Label is how the report names the kind.
func (k clientKind) Label() string {
	lib := "mcp-go"
	if k.goSDK() {
		lib = "go-sdk"
	}
	return lib + " " + k.version()
}

// mcpSession is an initialised session of either library.
type mcpSession interface {
	// Call calls a tool; the text is the result's text content.
	Call(ctx context.Context, tool string, args map[string]any) (text string, isError bool, err error)
	// CallStreaming calls a tool with a progress token; progress is called
	// (once at most) at the first progress notification.
	CallStreaming(ctx context.Context, tool string, args map[string]any, progress func()) error
	Close()
}

// errVersion: the session was opened on another protocol version than
// asked (a client that fell back after its first request failed).
var errVersion = errors.New("other protocol version negotiated")

// dial opens a session of kind k on url with the bearer token and checks
// the protocol version it speaks.
func dial(ctx context.Context, k clientKind, url, token string) (mcpSession, error) {
	if k.goSDK() {
		return dialSDK(ctx, k, url, token)
	}
	return dialMCPGo(ctx, k, url, token)
}

type mcpgoSession struct {
	c   *mcpclient.Client
	end context.CancelFunc
	progressWaiters
}

// progressWaiters are a session's calls waiting for their first progress
// notification, by progress token.
type progressWaiters struct {
	mu sync.Mutex
	m  map[string]func()
}

// wait registers progress under a new token; done forgets it.
func (w *progressWaiters) wait(progress func()) (tok string, done func()) {
	tok = "p-" + randomHex(6)
	w.mu.Lock()
	if w.m == nil {
		w.m = map[string]func(){}
	}
	w.m[tok] = progress
	w.mu.Unlock()
	return tok, func() {
		w.mu.Lock()
		delete(w.m, tok)
		w.mu.Unlock()
	}
}

// fire calls, once, what waits for tok's first progress (off the client's
// read loop: it must never call the client from there).
func (w *progressWaiters) fire(tok string) {
	w.mu.Lock()
	f := w.m[tok]
	delete(w.m, tok)
	w.mu.Unlock()
	if f != nil {
		go f()
	}
}

func dialMCPGo(ctx context.Context, k clientKind, url, token string) (mcpSession, error) {
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		return nil, err
	}
	var opts []mcpclient.ClientOption
	if k.version() == v20251125 {
		opts = append(opts, mcpclient.WithProtocolVersion(v20251125))
	}
	c := mcpclient.NewClient(tr, opts...)
	life, end := context.WithCancel(context.Background())
	s := &mcpgoSession{c: c, end: end}
	if err := c.Start(life); err != nil {
		end()
		_ = c.Close()
		return nil, err
	}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != string(mcp.MethodNotificationProgress) {
			return
		}
		s.fire(fmt.Sprint(n.Params.AdditionalFields["progressToken"]))
	})
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "hangar-soak", Version: "0"}
	req.Params.ProtocolVersion = k.version()
	res, err := c.Initialize(ctx, req)
	if err != nil {
		s.Close()
		return nil, err
	}
	if res.ProtocolVersion != k.version() {
		s.Close()
		return nil, fmt.Errorf("%w: mcp-go session speaks %q, want %q", errVersion, res.ProtocolVersion, k.version())
	}
	return s, nil
}

func (s *mcpgoSession) Call(ctx context.Context, tool string, args map[string]any) (string, bool, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := s.c.CallTool(ctx, req)
	if err != nil {
		return "", false, err
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n"), res.IsError, nil
}

func (s *mcpgoSession) CallStreaming(ctx context.Context, tool string, args map[string]any, progress func()) error {
	tok, done := s.wait(progress)
	defer done()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	req.Params.Meta = &mcp.Meta{ProgressToken: tok}
	_, err := s.c.CallTool(ctx, req)
	return err
}

func (s *mcpgoSession) Close() {
	_ = s.c.Close()
	s.end()
}

type sdkSession struct {
	s *sdk.ClientSession
	progressWaiters
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// sdkTransport is shared by the go-sdk sessions (their connections are
// pooled, as one application's would be).
var sdkTransport = &http.Transport{MaxIdleConnsPerHost: 32}

func dialSDK(ctx context.Context, k clientKind, url, token string) (mcpSession, error) {
	ss := &sdkSession{}
	c := sdk.NewClient(&sdk.Implementation{Name: "hangar-soak", Version: "0"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			ss.fire(fmt.Sprint(r.Params.ProgressToken))
		},
	})
	s, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{token, sdkTransport}}}, &sdk.ClientSessionOptions{ProtocolVersion: k.version()})
	if err != nil {
		return nil, err
	}
	if got := s.InitializeResult().ProtocolVersion; got != k.version() {
		_ = s.Close()
		return nil, fmt.Errorf("%w: go-sdk session speaks %q, want %q", errVersion, got, k.version())
	}
	ss.s = s
	return ss, nil
}

func (s *sdkSession) Call(ctx context.Context, tool string, args map[string]any) (string, bool, error) {
	res, err := s.s.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", false, err
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n"), res.IsError, nil
}

func (s *sdkSession) CallStreaming(ctx context.Context, tool string, args map[string]any, progress func()) error {
	tok, done := s.wait(progress)
	defer done()
	p := &sdk.CallToolParams{Name: tool, Arguments: args}
	p.SetProgressToken(tok)
	_, err := s.s.CallTool(ctx, p)
	return err
}

func (s *sdkSession) Close() { _ = s.s.Close() }

// hangarCall is hangar_call's arguments for one call.
func hangarCall(server, tool string, args map[string]any) map[string]any {
	return map[string]any{"calls": []any{map[string]any{"mcp_server": server, "tool": tool, "arguments": args}}}
}

// callResult is the single result of a hangar_call answer: its value, or
// the error kind (the text before the first colon) of a failed call.
func callResult(text string) (result any, errKind string) {
	r, kind, _ := callResultText(text)
	return r, kind
}

// callResultText is callResult with the failed call's error text.
func callResultText(text string) (result any, errKind, errText string) {
	var batch struct {
		Results []struct {
			Success   bool   `json:"success"`
			Result    any    `json:"result"`
			Error     string `json:"error"`
			ErrorType string `json:"error_type"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(text), &batch); err != nil || len(batch.Results) != 1 {
		return nil, "bad_answer", text
	}
	r := batch.Results[0]
	if !r.Success {
		if r.ErrorType != "" {
			return nil, r.ErrorType, r.Error
		}
		return nil, errorKind(r.Error), r.Error
	}
	return r.Result, "", ""
}

// errorKind is a wire error's kind: its text up to the first colon, when
// that is one word (seed 001's error strings start so).
func errorKind(text string) string {
	kind, _, found := strings.Cut(text, ":")
	if !found || strings.ContainsAny(kind, " \n") {
		if len(text) > 60 {
			text = text[:60]
		}
		return "tool_error(" + text + ")"
	}
	return kind
}
