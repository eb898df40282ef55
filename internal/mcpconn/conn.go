// Package mcpconn holds the gateway's MCP client connections to providers:
// stdio over an attached container stream, streamable HTTP and SSE.
package mcpconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// Handshake preferences (same values as config.Protocol*).
const (
	ProtocolAuto   = "auto"
	ProtocolLegacy = "legacy"
	ProtocolModern = "modern"
)

// ClientName is what the gateway calls itself to providers.
const ClientName = "hangar"

// Conn is one MCP session with a provider. It is safe for concurrent use:
// concurrent calls share the session and are correlated by request ID.
type Conn struct {
	c     *client.Client
	tr    tapped
	proto string
	end   context.CancelFunc // ends the transport's lifetime
	// progress routes the provider's progress notifications to the calls
	// forwarded with a progress token.
	progress *progressRouter
	// relay passes the provider's sampling, elicitation and roots requests
	// on to the client whose call is in flight.
	relay *relayHub
	// updates routes the provider's notifications/resources/updated to
	// the subscriber of each URI.
	updates *updateRouter
}

func newConn(c *client.Client, tap tapped, relay *relayHub) *Conn {
	conn := &Conn{c: c, tr: tap, proto: c.ProtocolVersion(), progress: &progressRouter{}, relay: relay, updates: &updateRouter{}}
	c.OnNotification(conn.progress.dispatch)
	c.OnNotification(conn.updates.dispatch)
	return conn
}

// Stdio returns a transport over a provider's stdin and stdout.
func Stdio(stdout io.Reader, stdin io.WriteCloser) transport.Interface {
	t := &stdioTap{}
	t.Stdio = transport.NewIO(newLineReader(stdout, &t.calls), stdin, nil)
	return t
}

// HTTP returns a streamable HTTP transport to url.
//
// On a 2025-11-25 session it keeps a GET stream open to the provider: a
// server may send its sampling, elicitation and roots requests there
// rather than on the call's own stream (mcp-go's server sends them nowhere
// else), and the relay hub answers them from there like any other. The
// option that opens it also keeps mcp-go's client off 2026-07-28, which
// has no GET stream, so Connect uses a transport without it for a modern
// handshake (httpTap.withoutListening).
func HTTP(url string, headers map[string]string, hc *http.Client) (transport.Interface, error) {
	return newHTTPTap(url, headers, hc, true)
}

func newHTTPTap(url string, headers map[string]string, hc *http.Client, listen bool) (*httpTap, error) {
	opts := []transport.StreamableHTTPCOption{transport.WithHTTPHeaders(headers), transport.WithHTTPHeaderFunc(telemetry.Headers)}
	if hc != nil {
		opts = append(opts, transport.WithHTTPBasicClient(hc))
	}
	if listen {
		opts = append(opts, transport.WithContinuousListening())
	}
	t, err := transport.NewStreamableHTTP(url, opts...)
	if err != nil {
		return nil, err
	}
	return &httpTap{StreamableHTTP: t, url: url, headers: headers, hc: hc, listens: listen}, nil
}

// SSE returns an SSE transport to url.
func SSE(url string, headers map[string]string, hc *http.Client) (transport.Interface, error) {
	opts := []transport.ClientOption{transport.WithHeaders(headers), transport.WithHeaderFunc(telemetry.Headers)}
	if hc != nil {
		opts = append(opts, transport.WithHTTPClient(hc))
	}
	t, err := transport.NewSSE(url, opts...)
	if err != nil {
		return nil, err
	}
	return &sseTap{SSE: t}, nil
}

// Connect performs the MCP handshake over tr (from Stdio, HTTP or SSE).
//
// With ProtocolAuto it tries the legacy initialize first: every server in
// the field answers it quickly, whereas old servers may ignore the newer
// server/discover probe and make mcp-go wait seconds for it. A server that
// rejects initialize with a JSON-RPC error only speaks 2026-07-28, and gets
// server/discover on the same transport.
func Connect(ctx context.Context, tr transport.Interface, protocol string) (*Conn, error) {
	if _, ok := tr.(tapped); !ok {
		return nil, errors.New("mcpconn: transport was not made by this package")
	}
	if ht, ok := tr.(*httpTap); ok && protocol == ProtocolModern && ht.listens {
		var err error
		if tr, err = ht.withoutListening(); err != nil {
			return nil, err
		}
	}
	// The transport lives as long as the connection, not as long as the
	// handshake's context: an SSE stream opened with ctx would die when a
	// start timeout's context is released. ctx still bounds the start.
	life, end := context.WithCancel(context.WithoutCancel(ctx))
	if err := start(ctx, life, tr); err != nil {
		end()
		return nil, err
	}
	conn, err := handshake(ctx, life, tr, protocol)
	if err != nil {
		end()
		return nil, err
	}
	conn.end = end
	return conn, nil
}

// start starts tr for the connection's life, waiting at most as long as
// ctx.
func start(ctx, life context.Context, tr transport.Interface) error {
	started := make(chan error, 1)
	go func() { started <- tr.Start(life) }()
	select {
	case err := <-started:
		if err != nil {
			return fmt.Errorf("start transport: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("start transport: %w", ctx.Err())
	}
}

func handshake(ctx, life context.Context, tr transport.Interface, protocol string) (*Conn, error) {
	tap := tr.(tapped)
	if protocol == "" {
		protocol = ProtocolAuto
	}
	var firstErr error
	relay := &relayHub{}
	handlers := []client.ClientOption{client.WithSamplingHandler(relay), client.WithElicitationHandler(relay), client.WithRootsHandler(relay)}
	if protocol != ProtocolModern {
		c := client.NewClient(tr, append(handlers, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))...)
		if err := initialize(ctx, c); err == nil {
			return newConn(c, tap, relay), nil
		} else if protocol == ProtocolLegacy || !tap.state().initRejected.Load() {
			_ = tr.Close()
			return nil, fmt.Errorf("initialize: %w", err)
		} else if ht, ok := tr.(*httpTap); ok && ht.listens {
			firstErr = err
			// A server that knows only 2026-07-28, over HTTP: a transport
			// of its own, without the GET stream that would keep the
			// client on 2025-11-25.
			_ = tr.Close()
			if tr, err = ht.withoutListening(); err != nil {
				return nil, err
			}
			if err := start(ctx, life, tr); err != nil {
				return nil, err
			}
			tap = tr.(tapped)
		} else {
			firstErr = err
			// The client below numbers its requests from 1 again, on the
			// same transport. mcp-go's stdio reader forgets an answered id
			// only after handing the answer over, so it can forget the
			// next request of that id instead, whose answer is then
			// dropped and the handshake hangs. One more request of this
			// client, answered or refused, is read only after that
			// forgetting: from then on id 1 is free.
			_, _ = c.Discover(ctx, mcp.DiscoverRequest{})
		}
	}
	c := client.NewClient(tr, append(handlers, client.WithDiscoverTimeout(-1))...)
	if err := initialize(ctx, c); err != nil {
		_ = tr.Close()
		if firstErr != nil {
			return nil, fmt.Errorf("initialize rejected (%v), server/discover: %w", firstErr, err)
		}
		return nil, fmt.Errorf("server/discover: %w", err)
	}
	if !mcp.IsModernProtocol(c.ProtocolVersion()) && protocol == ProtocolModern {
		_ = tr.Close()
		return nil, fmt.Errorf("server/discover: server does not speak the %s protocol", mcp.LATEST_PROTOCOL_VERSION)
	}
	return newConn(c, tap, relay), nil
}

func initialize(ctx context.Context, c *client.Client) error {
	if err := c.Start(ctx); err != nil {
		return err
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: ClientName, Version: "dev"}
	_, err := c.Initialize(ctx, req)
	return err
}

// ProtocolVersion is the negotiated protocol version.
func (c *Conn) ProtocolVersion() string { return c.proto }

// Tool is a provider tool with its input schema exactly as the provider
// sent it.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	// The rest of the definition, kept for the front door to list the
	// tool as the provider describes it.
	Meta  json.RawMessage `json:"_meta,omitempty"`
	Icons json.RawMessage `json:"icons,omitempty"`
}

// maxToolPages bounds pagination against a provider that never stops
// returning cursors.
const maxToolPages = 100

// ListTools fetches every page of tools/list, keeping schemas raw.
func (c *Conn) ListTools(ctx context.Context) ([]Tool, error) {
	var out []Tool
	var cursor mcp.Cursor
	for range maxToolPages {
		var raw json.RawMessage
		req := mcp.ListToolsRequest{}
		req.Params.Cursor = cursor
		res, err := c.c.ListToolsByPage(withRawSink(ctx, &raw), req)
		if err != nil {
			return nil, err
		}
		var page struct {
			Tools []Tool `json:"tools"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("decode tools/list: %w", err)
		}
		out = append(out, page.Tools...)
		if res.NextCursor == "" {
			return out, nil
		}
		cursor = res.NextCursor
	}
	return nil, fmt.Errorf("tools/list: more than %d pages", maxToolPages)
}

// CallTool calls a tool; a tool-level error comes back as a result with
// IsError set, a protocol or transport failure as an error. The call is
// forwarded as o says; nil forwards nothing of the caller's.
func (c *Conn) CallTool(ctx context.Context, name string, args any, o *CallOptions) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	var spilled []string
	ctx = context.WithValue(ctx, spillSinkKey{}, &spilled)
	if o == nil {
		defer c.relay.add(nil)()
		injectTrace(ctx, &req)
		res, err := c.c.CallTool(ctx, req)
		if err == nil && len(spilled) > 0 {
			restoreSpilled(res, spilled)
		}
		return res, err
	}
	ctx, settle, done := c.prepare(ctx, &req, o)
	defer done()
	injectTrace(ctx, &req)
	res, err := c.c.CallTool(ctx, req)
	if err == nil {
		settle()
		if len(spilled) > 0 {
			// Big texts were read aside (lines.go): the raw answer holds
			// their markers, so the decoded result, texts put back, is
			// the one to forward.
			restoreSpilled(res, spilled)
			if o.Raw != nil {
				*o.Raw = (*o.Raw)[:0]
			}
		}
	}
	if err != nil && o.Raw != nil && len(*o.Raw) > 0 {
		// The provider answered; only decoding it failed, and the caller
		// forwards the raw answer.
		return rawOnly(*o.Raw), nil
	}
	return res, err
}

// Close ends the session and its transport.
func (c *Conn) Close() error {
	defer c.end()
	done := make(chan error, 1)
	go func() { done <- c.c.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(2 * time.Second):
		// A transport stuck on a dead peer must not hold up shutdown.
		return errors.New("close: timed out")
	}
}

// injectTrace puts the trace context of the call's CLIENT span in the
// request's _meta (SEP-414), over any the caller's _meta carried: a
// provider that traces joins the gateway's trace under that span.
func injectTrace(ctx context.Context, req *mcp.CallToolRequest) {
	req.Params.Meta = traceMeta(ctx, req.Params.Meta)
}

// traceMeta is meta with the trace context of ctx's span put in (meta
// itself when ctx has none).
func traceMeta(ctx context.Context, meta *mcp.Meta) *mcp.Meta {
	fields := telemetry.MetaFields(ctx)
	if fields == nil {
		return meta
	}
	if meta == nil {
		meta = &mcp.Meta{}
	}
	if meta.AdditionalFields == nil {
		meta.AdditionalFields = make(map[string]any, len(fields))
	}
	maps.Copy(meta.AdditionalFields, fields)
	return meta
}
