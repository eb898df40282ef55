package gateway_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/gateway"
)

// What a client sees of the scope boundary, with mcp-go's client and the
// official go-sdk client on both protocol versions: a servers-limited
// token lists only its servers' resources and templates, and the client's
// stream (the GET stream on 2025-11-25, subscriptions/listen on
// 2026-07-28) ends within a second of the token's removal, and is not
// opened again.

// streamWatch is a client's HTTP transport: it sends the token and
// watches the client's streams (a GET, or a POST of subscriptions/listen
// answered with an event stream).
type streamWatch struct {
	tok    string
	opened chan string // a stream was answered 200
	ended  chan string // a stream's body ended

	mu       sync.Mutex
	statuses []int // of the stream requests, in order
}

func newStreamWatch(tok string) *streamWatch {
	return &streamWatch{tok: tok, opened: make(chan string, 16), ended: make(chan string, 16)}
}

func (w *streamWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+w.tok)
	resp, err := http.DefaultTransport.RoundTrip(req)
	stream := req.Method == http.MethodGet || req.Header.Get(mcp.HeaderMethod) == string(mcp.MethodSubscriptionsListen)
	if err != nil || !stream {
		return resp, err
	}
	w.mu.Lock()
	w.statuses = append(w.statuses, resp.StatusCode)
	w.mu.Unlock()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, nil
	}
	label := req.Method
	if req.Method == http.MethodPost {
		label = string(mcp.MethodSubscriptionsListen)
	}
	w.opened <- label
	resp.Body = &watchedBody{ReadCloser: resp.Body, end: func() { w.ended <- label }}
	return resp, nil
}

func (w *streamWatch) streamStatuses() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.statuses)
}

// watchedBody reports the end of a stream's body once.
type watchedBody struct {
	io.ReadCloser
	once sync.Once
	end  func()
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.end)
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.once.Do(b.end)
	return b.ReadCloser.Close()
}

// scopeClient is what the test needs of either client.
type scopeClient struct {
	resources func(ctx context.Context) ([]string, error)
	templates func(ctx context.Context) ([]string, error)
}

var scopeClients = []struct {
	name string
	dial func(t *testing.T, url string, w *streamWatch) scopeClient
}{
	{"mcp-go/2025-11-25", func(t *testing.T, url string, w *streamWatch) scopeClient {
		return dialMCPGo(t, url, w, true)
	}},
	{"mcp-go/2026-07-28", func(t *testing.T, url string, w *streamWatch) scopeClient {
		return dialMCPGo(t, url, w, false)
	}},
	{"go-sdk/2025-11-25", func(t *testing.T, url string, w *streamWatch) scopeClient {
		return dialGoSDK(t, url, w, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	}},
	{"go-sdk/2026-07-28", func(t *testing.T, url string, w *streamWatch) scopeClient {
		return dialGoSDK(t, url, w, mcp.LATEST_PROTOCOL_VERSION)
	}},
}

func dialMCPGo(t *testing.T, url string, w *streamWatch, legacy bool) scopeClient {
	t.Helper()
	topts := []transport.StreamableHTTPCOption{transport.WithHTTPBasicClient(&http.Client{Transport: w})}
	var copts []client.ClientOption
	if legacy {
		topts = append(topts, transport.WithContinuousListening())
		copts = append(copts, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	}
	tr, err := transport.NewStreamableHTTP(url, topts...)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, copts...)
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "scope-test", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	if mcp.IsModernProtocol(c.ProtocolVersion()) == legacy {
		t.Fatalf("the client speaks %s", c.ProtocolVersion())
	}
	if !legacy {
		stop, err := c.ListenAsync(t.Context(), mcp.SubscriptionFilter{ToolsListChanged: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	return scopeClient{
		resources: func(ctx context.Context) ([]string, error) {
			res, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
			if err != nil {
				return nil, err
			}
			var out []string
			for _, r := range res.Resources {
				out = append(out, r.URI)
			}
			sort.Strings(out)
			return out, nil
		},
		templates: func(ctx context.Context) ([]string, error) {
			res, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
			if err != nil {
				return nil, err
			}
			var out []string
			for _, r := range res.ResourceTemplates {
				out = append(out, r.URITemplate.Raw())
			}
			sort.Strings(out)
			return out, nil
		},
	}
}

func dialGoSDK(t *testing.T, url string, w *streamWatch, version string) scopeClient {
	t.Helper()
	// Asks for list_changed: on 2026-07-28 the SDK opens
	// subscriptions/listen for it.
	s := connectSDK(t, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: w}, MaxRetries: 1}, version,
		&sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {}})
	return scopeClient{
		resources: func(ctx context.Context) ([]string, error) {
			res, err := s.ListResources(ctx, nil)
			if err != nil {
				return nil, err
			}
			var out []string
			for _, r := range res.Resources {
				out = append(out, r.URI)
			}
			sort.Strings(out)
			return out, nil
		},
		templates: func(ctx context.Context) ([]string, error) {
			res, err := s.ListResourceTemplates(ctx, nil)
			if err != nil {
				return nil, err
			}
			var out []string
			for _, r := range res.ResourceTemplates {
				out = append(out, r.URITemplate)
			}
			sort.Strings(out)
			return out, nil
		},
	}
}

// TestScopeWithClients: both clients on both protocols list only the
// token's servers' resources and templates (a quarantined server's not
// at all), and their stream ends within a second of the token's removal
// by a reload and is not opened again.
func TestScopeWithClients(t *testing.T) {
	t.Parallel()
	for _, sc := range scopeClients {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			s := newScopeGateway(t, func(c *config.Config, _ *gateway.Gateway) {
				c.Auth.Tokens = append(c.Auth.Tokens, tok("streamer", streamerTok, auth.AllScopes, scopeServers...))
			})
			w := newStreamWatch(streamerTok)
			c := sc.dial(t, s.url+"/mcp", w)
			select {
			case <-w.opened:
			case <-time.After(10 * time.Second):
				t.Fatal("the client opened no stream")
			}
			ctx := t.Context()
			if got, err := c.resources(ctx); err != nil || !slices.Equal(got, []string{"file:///a", "file:///shared"}) {
				t.Errorf("resources/list = %v, %v; want a's only (b's are another's, q's quarantined)", got, err)
			}
			if got, err := c.templates(ctx); err != nil || !slices.Equal(got, []string{"item-a://{n}"}) {
				t.Errorf("resources/templates/list = %v, %v; want a's only", got, err)
			}

			before := len(w.streamStatuses())
			from := time.Now()
			s.ah.Reload(auth.Settings{Auth: auth.NewAuthenticator(ctx, config.Auth{Tokens: scopeTokens()}, auth.Options{}), RateLimit: s.cfg.Auth.RateLimit})
			select {
			case <-w.ended:
				late := time.Since(from)
				if late > time.Second {
					t.Errorf("the stream ended %s after the token was removed, want within 1s", late)
				}
				t.Logf("the stream ended %s after the token was removed", late)
			case <-time.After(5 * time.Second):
				t.Fatal("the stream is still open 5s after the token was removed")
			}
			if _, err := c.resources(ctx); err == nil {
				t.Error("resources/list still answered with the removed token")
			}
			for _, st := range w.streamStatuses()[before:] {
				if st == http.StatusOK {
					t.Errorf("a stream was opened again with the removed token (statuses %v)", w.streamStatuses()[before:])
				}
			}
		})
	}
}
