package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The protocol floor: a bare mcp-go streamable HTTP server with one
// trivial tool, run as its own process (this binary re-executed with
// -floor-server) so that its CPU per call can be read from /proc the same
// way as the gateway's. Whatever the gateway spends per call beyond it is
// the gateway's own.

// floorTool is the floor server's one tool: it answers "ok".
const floorTool = "noop"

// serveFloor runs the floor server on addr until stdin closes (the bench
// holds the other end, so the server never outlives it).
func serveFloor(addr string) error {
	s := server.NewMCPServer("floor", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool(floorTool, mcp.WithDescription("does nothing")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
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

// StartFloor runs the floor server as a child process.
func StartFloor() (*Floor, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-floor-server", "127.0.0.1:0")
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
	case <-time.After(5 * time.Second):
		_ = f.cmd.Process.Kill()
		<-done
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
