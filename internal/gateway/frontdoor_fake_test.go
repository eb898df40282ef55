package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// A real MCP server (mcp-go) behind a real MCP client connection (mcpconn
// over streamable HTTP): what the front door forwards is what a provider
// really sends.

// bigMeta is a _meta value with integers beyond float64's precision.
const bigMeta = `{"big":12345678901234567890123,"nested":{"n":-9007199254740993}}`

// futureContent is a content item of a type mcp-go does not know.
type futureContent struct{ mcp.Content }

func (futureContent) MarshalJSON() ([]byte, error) {
	return []byte(`{"type":"hologram","frames":18446744073709551617}`), nil
}

// providerServer builds the provider's MCP server; each launch gets a new
// one. Tools:
//
//	echo_raw     → structuredContent = the raw arguments; text "echo"
//	kitchen_sink → every content type, structuredContent, _meta, isError
//	slow         → reports progress steps (arg "steps"), then "done";
//	               with "hold": waits until cancelled
//	<extra>      → whatever extra adds
//
// Resources can be subscribed to (hooks sees the requests); completions
// answer "<id>:<ref>:<argument>=<value>", ref being the prompt name or the
// URI the provider was asked about.
func providerServer(id string, extra func(*mcpserver.MCPServer), hooks *mcpserver.Hooks) *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer(id, "1", mcpserver.WithToolCapabilities(false),
		mcpserver.WithResourceCapabilities(true, false), mcpserver.WithHooks(hooks),
		mcpserver.WithCompletions(), mcpserver.WithPromptCompletionProvider(echoCompleter(id)), mcpserver.WithResourceCompletionProvider(echoCompleter(id)))
	s.AddTool(mcp.Tool{
		Name:            "echo_raw",
		Title:           "Echo raw",
		Description:     "echoes its arguments",
		RawInputSchema:  json.RawMessage(`{"type":"object","properties":{"n":{"anyOf":[{"type":"integer"},{"type":"string"}]}},"$schema":"https://json-schema.org/draft/2020-12/schema"}`),
		RawOutputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations:     mcp.ToolAnnotation{Title: "Echo", ReadOnlyHint: mcp.ToBoolPtr(true)},
	}, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		raw, _ := req.GetRawArguments().(json.RawMessage)
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("echo")}, RawStructuredContent: raw}, nil
	})
	s.AddTool(mcp.NewTool("kitchen_sink"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res := &mcp.CallToolResult{
			Result: mcp.Result{Meta: &mcp.Meta{AdditionalFields: map[string]any{"trace": json.RawMessage(bigMeta)}}},
			Content: []mcp.Content{
				mcp.NewTextContent("text"),
				mcp.NewImageContent("aW1n", "image/png"),
				mcp.NewAudioContent("YXVk", "audio/wav"),
				mcp.NewResourceLink("file:///a", "a", "the a", "text/plain"),
				mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "file:///b", MIMEType: "text/plain", Text: "b"}),
				futureContent{},
			},
			RawStructuredContent: json.RawMessage(`{"id":98765432109876543210,"f":1.5e300}`),
			IsError:              true,
		}
		return res, nil
	})
	s.AddTool(mcp.NewTool("slow", mcp.WithNumber("steps"), mcp.WithBoolean("hold")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		steps := req.GetInt("steps", 0)
		var token any
		if req.Params.Meta != nil {
			token = req.Params.Meta.ProgressToken
		}
		srv := mcpserver.ServerFromContext(ctx)
		for i := 1; i <= steps && token != nil; i++ {
			_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress),
				map[string]any{"progressToken": token, "progress": i, "total": steps, "message": fmt.Sprintf("step %d", i)})
		}
		// mcp-go's HTTP server drops notifications still queued when the
		// response goes out; a real long-running tool works between them.
		if token != nil {
			time.Sleep(200 * time.Millisecond)
		}
		if req.GetBool("hold", false) {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return mcp.NewToolResultText(fmt.Sprintf("done, token %v", token)), nil
	})
	s.AddTool(mcp.NewTool("ask"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		req := mcp.CreateMessageRequest{}
		req.Messages = []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("2+2?")}}
		req.MaxTokens = 10
		res, err := mcpserver.ServerFromContext(ctx).RequestSampling(ctx, req)
		if err != nil {
			return mcp.NewToolResultError("sampling failed: " + err.Error()), nil
		}
		text, _ := res.Content.(mcp.TextContent)
		return mcp.NewToolResultText("the model said " + text.Text), nil
	})
	// Resources and prompts: file:///shared is offered by every server
	// (a collision), the rest carry the server's ID.
	for _, uri := range []string{"file:///shared", "file:///" + id} {
		s.AddResource(mcp.NewResource(uri, uri, mcp.WithMIMEType("text/plain")), func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "from " + id}}, nil
		})
	}
	s.AddResourceTemplate(mcp.NewResourceTemplate("item-"+id+"://{n}", "item"), func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: id + " item " + req.Params.URI}}, nil
	})
	s.AddPrompt(mcp.NewPrompt("greet", mcp.WithArgument("who", mcp.RequiredArgument())), func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("greeting", []mcp.PromptMessage{
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(id+" greets "+req.Params.Arguments["who"])),
		}), nil
	})
	if extra != nil {
		extra(s)
	}
	return s
}

// echoCompleter completes with what it was asked, naming its server.
type echoCompleter string

func (c echoCompleter) CompletePromptArgument(_ context.Context, name string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	return &mcp.Completion{Values: []string{fmt.Sprintf("%s:%s:%s=%s", c, name, arg.Name, arg.Value)}}, nil
}

func (c echoCompleter) CompleteResourceArgument(_ context.Context, uri string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	return &mcp.Completion{Values: []string{fmt.Sprintf("%s:%s:%s=%s", c, uri, arg.Name, arg.Value)}, HasMore: true}, nil
}

// pipeBackend is a provider.Backend over an mcp-go server on an HTTP test
// server. (Not stdio: mcp-go's stdio server keeps its session in a package
// variable, so two in one process would see each other's notifications.)
type pipeBackend struct {
	conn *mcpconn.Conn
	hs   *httptest.Server   // nil over stdio
	end  context.CancelFunc // ends a stdio server
	done chan struct{}
	once sync.Once
}

func (b *pipeBackend) ListTools(ctx context.Context) ([]mcpconn.Tool, error) {
	return b.conn.ListTools(ctx)
}
func (b *pipeBackend) CallTool(ctx context.Context, name string, args any, o *mcpconn.CallOptions) (*mcp.CallToolResult, error) {
	return b.conn.CallTool(ctx, name, args, o)
}
func (b *pipeBackend) ListAll(ctx context.Context, kind string) ([]json.RawMessage, error) {
	return b.conn.ListAll(ctx, kind)
}
func (b *pipeBackend) ReadResource(ctx context.Context, uri string) (json.RawMessage, error) {
	return b.conn.ReadResource(ctx, uri)
}
func (b *pipeBackend) GetPrompt(ctx context.Context, name string, args map[string]string) (json.RawMessage, error) {
	return b.conn.GetPrompt(ctx, name, args)
}
func (b *pipeBackend) Complete(ctx context.Context, ref any, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	return b.conn.Complete(ctx, ref, arg, cc)
}
func (b *pipeBackend) Subscribe(ctx context.Context, uri string, updated func(map[string]any)) error {
	return b.conn.Subscribe(ctx, uri, updated)
}
func (b *pipeBackend) Unsubscribe(ctx context.Context, uri string) error {
	return b.conn.Unsubscribe(ctx, uri)
}
func (b *pipeBackend) Done() <-chan struct{} { return b.done }
func (b *pipeBackend) Exit() string          { return "exit 0" }
func (b *pipeBackend) Stderr() string        { return "" }
func (b *pipeBackend) ContainerID() string   { return "" }
func (b *pipeBackend) Stop(context.Context) error {
	b.once.Do(func() {
		_ = b.conn.Close()
		if b.hs != nil {
			b.hs.CloseClientConnections()
			b.hs.Close()
		}
		if b.end != nil {
			b.end()
		}
		close(b.done)
	})
	return nil
}

var _ provider.Extras = (*pipeBackend)(nil)

// pipeLauncher launches providerServers.
type pipeLauncher struct {
	extra map[string]func(*mcpserver.MCPServer)
	// stdio serves over pipes instead of HTTP: server-to-client requests
	// need it (mcp-go's HTTP server sends them on a GET stream only). At
	// most one stdio server may run in the process at a time.
	stdio bool
	// gate, when set, holds every launch until it is closed.
	gate chan struct{}

	mu       sync.Mutex
	launches map[string]int
	running  map[string]*mcpserver.MCPServer
	// upstream records the resources/subscribe and unsubscribe requests
	// each server got, as "<launch> subscribe|unsubscribe <uri>".
	upstream map[string][]string
}

func newPipeLauncher() *pipeLauncher {
	return &pipeLauncher{extra: map[string]func(*mcpserver.MCPServer){}, launches: map[string]int{}, running: map[string]*mcpserver.MCPServer{}, upstream: map[string][]string{}}
}

func (l *pipeLauncher) Launch(ctx context.Context, s *config.Server) (provider.Backend, error) {
	l.mu.Lock()
	l.launches[s.ID]++
	launch := l.launches[s.ID]
	l.mu.Unlock()
	if l.gate != nil {
		<-l.gate
	}
	record := func(what, uri string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.upstream[s.ID] = append(l.upstream[s.ID], fmt.Sprintf("%d %s %s", launch, what, uri))
	}
	hooks := &mcpserver.Hooks{}
	hooks.AddAfterSubscribe(func(_ context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		record("subscribe", req.Params.URI)
	})
	hooks.AddAfterUnsubscribe(func(_ context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		record("unsubscribe", req.Params.URI)
	})
	srv := providerServer(s.ID, l.extra[s.ID], hooks)
	l.mu.Lock()
	l.running[s.ID] = srv
	l.mu.Unlock()
	if l.stdio {
		return launchStdio(ctx, srv)
	}
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv))
	tr, err := mcpconn.HTTP(hs.URL+"/mcp", nil, nil)
	if err != nil {
		hs.Close()
		return nil, err
	}
	conn, err := mcpconn.Connect(ctx, tr, mcpconn.ProtocolLegacy)
	if err != nil {
		hs.Close()
		return nil, err
	}
	return &pipeBackend{conn: conn, hs: hs, done: make(chan struct{})}, nil
}

func (l *pipeLauncher) count(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.launches[id]
}

// upstreamOf returns the subscription requests id got so far.
func (l *pipeLauncher) upstreamOf(id string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.upstream[id])
}

// direct is the provider's own MCP server of id's last launch, to compare
// the gateway's answers with.
func (l *pipeLauncher) direct(id string) *mcpserver.MCPServer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running[id]
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func launchStdio(ctx context.Context, srv *mcpserver.MCPServer) (provider.Backend, error) {
	toServerR, toServerW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	life, end := context.WithCancel(context.Background())
	go func() {
		_ = mcpserver.NewStdioServer(srv).Listen(life, toServerR, toClientW)
		_ = toClientW.Close()
	}()
	go func() {
		<-life.Done()
		_ = toServerW.Close()
		_ = toServerR.Close()
	}()
	conn, err := mcpconn.Connect(ctx, mcpconn.Stdio(toClientR, toServerW), mcpconn.ProtocolLegacy)
	if err != nil {
		end()
		return nil, err
	}
	return &pipeBackend{conn: conn, end: end, done: make(chan struct{})}, nil
}
