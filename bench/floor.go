package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/dockerrt"
)

// The protocol floor: a bare mcp-go streamable HTTP server with one
// trivial tool, run as its own process (this binary re-executed with
// -floor-server) so that its CPU per call can be read from /proc the same
// way as the gateway's. Whatever the gateway spends per call beyond it is
// the gateway's own.
//
// The same process is also the bare proxy: its tool add is the provider's
// add, forwarded over stdio to a container of its own (the gateway's
// container spec, the gateway's client code, no policy, audit, metrics or
// anything else). That is the least a gateway can take for a call, measured
// rather than added up: the floor's round trip plus the direct call leaves
// out what chaining the two in one process costs.

// floorTool is the floor server's trivial tool: it answers "ok".
const floorTool = "noop"

// proxyTool is the bare proxy's tool: the provider's add.
const proxyTool = "add"

// floorProxy is what the floor process needs to run the bare proxy's
// provider (passed to it as JSON in -floor-proxy).
type floorProxy struct {
	Owner    string
	Spec     dockerrt.Spec
	Protocol string
}

// serveFloor runs the floor server on addr until stdin closes (the bench
// holds the other end, so the server never outlives it). With proxy it
// first starts the bare proxy's provider, and removes it on the way out.
func serveFloor(addr, proxy string) error {
	s := server.NewMCPServer("floor", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool(floorTool, mcp.WithDescription("does nothing")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	if proxy != "" {
		var fp floorProxy
		if err := json.Unmarshal([]byte(proxy), &fp); err != nil {
			return fmt.Errorf("-floor-proxy: %w", err)
		}
		docker, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
		if err != nil {
			return err
		}
		defer docker.Close()
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		d, err := startDirect(context.Background(), docker, fp.Owner, fp.Spec, fp.Protocol, log)
		if err != nil {
			return err
		}
		defer d.Close()
		s.AddTool(mcp.NewTool(proxyTool, mcp.WithDescription("the provider's add")),
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return d.Conn.CallTool(ctx, proxyTool, req.GetArguments(), nil)
			})
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: server.NewStreamableHTTPServer(s, server.WithEndpointPath("/mcp")), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = srv.Close()
	}()
	fmt.Println("listening " + ln.Addr().String())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Floor is a running floor server.
type Floor struct {
	URL   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// StartFloor runs the floor server as a child process; with proxy, also
// the bare proxy.
func StartFloor(proxy *floorProxy) (*Floor, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"-floor-server", "127.0.0.1:0"}
	if proxy != nil {
		js, err := json.Marshal(proxy)
		if err != nil {
			return nil, err
		}
		args = append(args, "-floor-proxy", string(js))
	}
	cmd := exec.Command(self, args...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	f := &Floor{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		f.Stop()
		return nil, fmt.Errorf("floor server did not start (%v): %q", err, line)
	}
	f.URL = "http://" + addr + "/mcp"
	return f, nil
}

// CPU is the floor server's CPU time so far.
func (f *Floor) CPU() (time.Duration, error) { return readCPU(f.cmd.Process.Pid) }

// Stop ends the floor server.
func (f *Floor) Stop() {
	_ = f.stdin.Close()
	done := make(chan struct{})
	go func() { _ = f.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(25 * time.Second): // the bare proxy removes its container first
		_ = f.cmd.Process.Kill()
		<-done
	}
}

// proxyAdd calls add on the bare proxy.
func proxyAdd(c *Client) callFn {
	return func(ctx context.Context, i int) error {
		r, err := c.Call(ctx, proxyTool, map[string]any{"a": i, "b": 1})
		if err != nil {
			return err
		}
		if r.IsError {
			return fmt.Errorf("bare proxy: add: %s", resultText(r))
		}
		return nil
	}
}

func floorCall(c *Client) callFn {
	return func(ctx context.Context, _ int) error {
		r, err := c.Call(ctx, floorTool, nil)
		if err != nil {
			return err
		}
		if r.IsError || resultText(r) != "ok" {
			return fmt.Errorf("floor tool answered %q", resultText(r))
		}
		return nil
	}
}
