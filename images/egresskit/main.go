// Command egresskit is the egress tests' provider and test server.
//
//	egresskit                      an MCP server on stdio with three tools:
//	                               fetch (HTTP GET through $HTTP_PROXY, as
//	                               any client would), dial (a direct TCP
//	                               connection, bypassing any proxy) and
//	                               dial_all (dial, to many addresses at once)
//	egresskit serve NAME [ADDR]    an HTTP server answering "egresskit NAME"
//	                               on ADDR (default :8080)
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	if len(os.Args) >= 3 && os.Args[1] == "serve" {
		addr := ":8080"
		if len(os.Args) > 3 {
			addr = os.Args[3]
		}
		if err := serve(os.Args[2], addr); err != nil {
			fmt.Fprintln(os.Stderr, "egresskit:", err)
			os.Exit(1)
		}
		return
	}
	s := server.NewMCPServer("egresskit", "1.0.0")
	s.AddTool(mcp.NewTool("fetch",
		mcp.WithDescription("GET a URL with the environment's proxy settings; returns the status and body"),
		mcp.WithString("url", mcp.Required()),
	), fetch)
	s.AddTool(mcp.NewTool("dial",
		mcp.WithDescription("Open a direct TCP connection to host:port, bypassing any proxy"),
		mcp.WithString("addr", mcp.Required()),
	), dial)
	s.AddTool(mcp.NewTool("dial_all",
		mcp.WithDescription("Open direct TCP connections to each host:port at once, bypassing any proxy; one line per address: connected, or the error"),
		mcp.WithArray("addrs", mcp.Required(), mcp.WithStringItems()),
	), dialAll)
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, "egresskit:", err)
		os.Exit(1)
	}
}

func serve(name, addr string) error {
	srv := &http.Server{
		Addr:              addr,
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "egresskit %s", name)
		}),
	}
	return srv.ListenAndServe()
}

// client reads HTTP_PROXY/HTTPS_PROXY/NO_PROXY like most clients do.
var client = &http.Client{
	Timeout:   10 * time.Second,
	Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true},
}

func fetch(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	url, err := req.RequireString("url")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	resp, err := client.Do(hr)
	if err != nil {
		return mcp.NewToolResultError("fetch failed: " + err.Error()), nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return mcp.NewToolResultText(fmt.Sprintf("%d %s", resp.StatusCode, body)), nil
}

func dial(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	addr, err := req.RequireString("addr")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	d := net.Dialer{Timeout: 3 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return mcp.NewToolResultError("dial failed: " + err.Error()), nil
	}
	_ = c.Close()
	return mcp.NewToolResultText("connected"), nil
}

func dialAll(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	addrs, err := req.RequireStringSlice("addrs")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	lines := make([]string, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Go(func() {
			d := net.Dialer{Timeout: 5 * time.Second}
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				lines[i] = addr + " dial failed: " + err.Error()
				return
			}
			_ = c.Close()
			lines[i] = addr + " connected"
		})
	}
	wg.Wait()
	return mcp.NewToolResultText(strings.Join(lines, "\n")), nil
}
