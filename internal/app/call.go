package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// CallTool connects to a gateway (or any MCP server) at url, calls one tool
// and writes its result to w: structured content as JSON when present,
// else the text. A tool error is returned as an error. token, when not
// empty, is sent as `Authorization: Bearer`.
func CallTool(ctx context.Context, url, token, tool string, argsJSON string, w io.Writer) error {
	var args map[string]any
	if argsJSON != "" {
		if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
			return fmt.Errorf("arguments must be a JSON object: %w", err)
		}
	}
	var opts []transport.StreamableHTTPCOption
	if token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	}
	c, err := client.NewStreamableHttpClient(url, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("connect %s: %w", url, err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "hangar-cli", Version: "dev"}
	if _, err := c.Initialize(ctx, init); err != nil {
		if strings.Contains(err.Error(), "authorization required") || strings.Contains(err.Error(), "401") {
			return fmt.Errorf("initialize %s: %w (the gateway wants a token: --token, HANGAR_TOKEN or HANGAR_TOKEN_FILE)", url, err)
		}
		return fmt.Errorf("initialize %s: %w", url, err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		if msg, refused := strings.CutPrefix(err.Error(), mcp.ErrResourceNotFound.Error()+": "); refused && errors.Is(err, mcp.ErrResourceNotFound) {
			// mcp-go reads seed 004's -32002 (a scope or a policy rule
			// refused the call) as MCP's "resource not found": the
			// gateway's own message says what happened.
			return fmt.Errorf("call %s: %s", tool, msg)
		}
		return fmt.Errorf("call %s: %w", tool, err)
	}
	var text string
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if res.IsError {
		return fmt.Errorf("%s", text)
	}
	if res.StructuredContent != nil {
		b, err := json.MarshalIndent(res.StructuredContent, "", "  ")
		if err == nil {
			text = string(b)
		}
	}
	_, err = fmt.Fprintln(w, text)
	return err
}

// Healthz asks url (the gateway's /healthz) whether it is alive; for
// container health checks in images without a shell.
func Healthz(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}
