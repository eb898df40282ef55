// Command agent is the smallest useful MCP client of a hangar stack: it
// connects to the gateway with the official Go SDK's client and its bearer
// token, lists every tool the gateway offers, and calls the tools named on
// its command line, printing what comes back.
//
//	agent [--url URL] [--protocol VERSION] [TOOL JSON-ARGUMENTS]...
//
// The endpoint is --url, else $HANGAR_URL, else http://hangar:8080/mcp (the
// gateway's service name on a compose network). The token is $HANGAR_TOKEN,
// else the content of the file $HANGAR_TOKEN_FILE (the gateway's generated
// token on a shared volume). It exits 1 when a call fails or a tool answers
// with an error.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	url := fs.String("url", envOr("HANGAR_URL", "http://hangar:8080/mcp"), "the gateway's MCP endpoint")
	protocol := fs.String("protocol", "", "the MCP protocol version to ask for, e.g. 2025-11-25 (default: the SDK's newest)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	calls, err := parseCalls(fs.Args())
	if err != nil {
		return err
	}
	token, err := readToken()
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "hangar-example-agent", Version: "1"}, nil)
	transport := &mcp.StreamableClientTransport{
		Endpoint:   *url,
		HTTPClient: &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}},
		// Nothing here waits for notifications from the gateway.
		DisableStandaloneSSE: true,
	}
	session, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: *protocol})
	if err != nil {
		return fmt.Errorf("connect to %s: %w", *url, err)
	}
	defer session.Close()
	init := session.InitializeResult()
	fmt.Fprintf(out, "connected to %s %s at %s (protocol %s)\n", init.ServerInfo.Name, init.ServerInfo.Version, *url, init.ProtocolVersion)

	var tools []*mcp.Tool
	for tool, err := range session.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list tools: %w", err)
		}
		tools = append(tools, tool)
	}
	fmt.Fprintf(out, "%d tools:\n", len(tools))
	for _, tool := range tools {
		fmt.Fprintf(out, "  %-28s %s\n", tool.Name, summary(tool.Description))
	}

	failed := 0
	for _, c := range calls {
		fmt.Fprintf(out, "call %s %s\n", c.name, c.raw)
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args})
		if err != nil {
			fmt.Fprintf(out, "  failed: %v\n", err)
			failed++
			continue
		}
		prefix := "  => "
		if res.IsError {
			prefix = "  tool error: "
			failed++
		}
		fmt.Fprintln(out, prefix+text(res))
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d calls failed", failed, len(calls))
	}
	return nil
}

// call is one TOOL JSON-ARGUMENTS pair of the command line.
type call struct {
	name, raw string
	args      map[string]any
}

func parseCalls(args []string) ([]call, error) {
	if len(args)%2 != 0 {
		return nil, errors.New("calls come in pairs: TOOL JSON-ARGUMENTS (use '{}' for none)")
	}
	var calls []call
	for i := 0; i < len(args); i += 2 {
		c := call{name: args[i], raw: args[i+1]}
		if err := json.Unmarshal([]byte(c.raw), &c.args); err != nil {
			return nil, fmt.Errorf("arguments of %s: not a JSON object: %w", c.name, err)
		}
		calls = append(calls, c)
	}
	return calls, nil
}

// readToken returns $HANGAR_TOKEN, else the content of $HANGAR_TOKEN_FILE.
func readToken() (string, error) {
	if t := os.Getenv("HANGAR_TOKEN"); t != "" {
		return t, nil
	}
	path := os.Getenv("HANGAR_TOKEN_FILE")
	if path == "" {
		return "", errors.New("no token: set HANGAR_TOKEN, or HANGAR_TOKEN_FILE to the file holding it")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	return t, nil
}

// text is a result's text content, one line per content block; other
// kinds of content are named by their type.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		default:
			parts = append(parts, fmt.Sprintf("(%T)", c))
		}
	}
	return strings.Join(parts, "\n     ")
}

// summary is a description's first line, cut to fit a terminal's line.
func summary(desc string) string {
	line, _, _ := strings.Cut(desc, "\n")
	if r := []rune(line); len(r) > 60 {
		return strings.TrimSpace(string(r[:59])) + "…"
	}
	return line
}

// bearer sends the token with every request to the gateway.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
