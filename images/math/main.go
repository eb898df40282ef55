// Command math is a minimal MCP server offering arithmetic tools over stdio,
// or with --http ADDR over streamable HTTP at /mcp (a server discovered by
// its labels in examples/discovery). It is the reference provider the
// hangar gateway is exercised against.
package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// version is overridden at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	// stdout carries the JSON-RPC stream, so every log line must go to stderr.
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	slog.SetDefault(logger)
	addr := flag.String("http", "", "serve streamable HTTP at /mcp on this address (e.g. :8080) instead of stdio")
	flag.Parse()

	if *addr != "" {
		// As PID 1 of a container it gets no default SIGTERM action.
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		ln, err := net.Listen("tcp", *addr)
		if err == nil {
			logger.Info("serving MCP over HTTP", "addr", ln.Addr().String(), "path", "/mcp")
			err = serveHTTP(ctx, ln)
		}
		if err != nil {
			logger.Error("http server stopped", "err", err)
			os.Exit(1)
		}
		return
	}
	err := server.ServeStdio(newServer(),
		server.WithErrorLogger(slog.NewLogLogger(logger.Handler(), slog.LevelError)))
	if err != nil {
		logger.Error("stdio server stopped", "err", err)
		os.Exit(1)
	}
}

// serveHTTP serves streamable HTTP at /mcp on ln until ctx ends.
func serveHTTP(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(newServer()))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	}
}

func newServer() *server.MCPServer {
	s := server.NewMCPServer("math", version,
		server.WithToolCapabilities(false),
		server.WithRecovery(),
	)
	registerTools(s)
	return s
}

var errDivisionByZero = errors.New("division by zero")

type binaryOp func(a, b float64) (float64, error)

func registerTools(s *server.MCPServer) {
	ops := []struct {
		name, description string
		apply             binaryOp
	}{
		{"add", "Add two numbers", func(a, b float64) (float64, error) { return a + b, nil }},
		{"subtract", "Subtract b from a", func(a, b float64) (float64, error) { return a - b, nil }},
		{"multiply", "Multiply two numbers", func(a, b float64) (float64, error) { return a * b, nil }},
		{"divide", "Divide a by b", func(a, b float64) (float64, error) {
			if b == 0 {
				return 0, errDivisionByZero
			}
			return a / b, nil
		}},
	}
	for _, op := range ops {
		tool := mcp.NewTool(op.name,
			mcp.WithDescription(op.description),
			mcp.WithNumber("a", mcp.Required(), mcp.Description("First operand")),
			mcp.WithNumber("b", mcp.Required(), mcp.Description("Second operand")),
			// mcp-go presumes a tool destructive and open-world unless told.
			mcp.WithReadOnlyHintAnnotation(true),
			mcp.WithDestructiveHintAnnotation(false),
			mcp.WithIdempotentHintAnnotation(true),
			mcp.WithOpenWorldHintAnnotation(false),
		)
		s.AddTool(tool, binaryHandler(op.apply))
	}
}

// binaryHandler adapts an arithmetic operation to a tool handler. Bad input
// and domain errors become tool errors rather than JSON-RPC errors, so that a
// model calling the tool sees the reason and can correct itself.
func binaryHandler(apply binaryOp) server.ToolHandlerFunc {
	return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, err := req.RequireFloat("a")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		b, err := req.RequireFloat("b")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		v, err := apply(a, b)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(strconv.FormatFloat(v, 'f', -1, 64)), nil
	}
}
