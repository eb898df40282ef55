// Command testkit is an MCP server for testing the hangar gateway. Flags make
// it misbehave in the ways real providers do: dying at start, hanging,
// speaking only one protocol era, crashing mid-call or running out of memory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// version is overridden at build time with -ldflags "-X main.version=...".
var version = "dev"

const shutdownGrace = 5 * time.Second

type config struct {
	transport   string
	port        int
	path        string
	protocol    protocolMode
	name        string
	exitOnStart int
	hang        bool
	stderrLines int
	// writeOnStart is a file to create before serving; failing to is fatal,
	// as it is for a provider that keeps state on disk.
	writeOnStart string
}

func main() {
	// stdout carries the JSON-RPC stream on stdio, so logs go to stderr.
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	slog.SetDefault(logger)

	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "testkit:", err)
		os.Exit(2)
	}

	for i := 1; i <= cfg.stderrLines; i++ {
		fmt.Fprintf(os.Stderr, "testkit stderr line %d\n", i)
	}
	if cfg.exitOnStart > 0 {
		fmt.Fprintln(os.Stderr, "testkit: exiting on start as asked")
		os.Exit(cfg.exitOnStart)
	}
	if cfg.writeOnStart != "" {
		if err := os.WriteFile(cfg.writeOnStart, []byte("testkit\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "testkit: cannot write state file:", err)
			os.Exit(1)
		}
	}

	// Without a handler, SIGTERM is ignored by PID 1 in a container and
	// docker stop would have to wait for its kill timeout.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	if err := run(ctx, cfg, logger); err != nil {
		logger.Error("testkit stopped", "err", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	var cfg config
	var protocol string
	fs := flag.NewFlagSet("testkit", flag.ContinueOnError)
	fs.StringVar(&cfg.transport, "transport", "stdio", "transport: stdio, http (streamable HTTP) or sse")
	fs.IntVar(&cfg.port, "port", 8080, "listen port for http and sse, on all interfaces")
	fs.StringVar(&cfg.path, "path", "/mcp", "endpoint path for http; for sse the event stream, with messages posted to <path>/message")
	fs.StringVar(&protocol, "protocol", string(protocolAuto), "handshake to support: auto (both), legacy (ignore server/discover) or modern (reject initialize)")
	fs.StringVar(&cfg.name, "name", "testkit", "server name reported to clients")
	fs.IntVar(&cfg.exitOnStart, "exit-on-start", 0, "exit at once with this code (0 = off)")
	fs.BoolVar(&cfg.hang, "hang", false, "accept input but never answer anything")
	fs.IntVar(&cfg.stderrLines, "stderr-lines", 0, "lines to write to stderr at start")
	fs.StringVar(&cfg.writeOnStart, "write-on-start", "", "create this file at start and exit 1 if that fails (\"\" = off)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}

	mode, err := parseProtocolMode(protocol)
	if err != nil {
		return config{}, err
	}
	cfg.protocol = mode
	// ServeMux patterns must start with a slash; mcp-go normalises the same way.
	cfg.path = "/" + strings.Trim(cfg.path, "/")

	switch cfg.transport {
	case "stdio", "http":
	case "sse":
		// A server that knows only 2026-07-28 has no HTTP+SSE transport,
		// and the SSE answer channel is out of reach of an interceptor.
		if cfg.protocol == protocolModern {
			return config{}, errors.New("--protocol modern cannot be combined with --transport sse")
		}
	default:
		return config{}, fmt.Errorf("unknown transport %q: want stdio, http or sse", cfg.transport)
	}
	if cfg.port < 1 || cfg.port > 65535 {
		return config{}, fmt.Errorf("--port %d out of range", cfg.port)
	}
	if cfg.exitOnStart < 0 || cfg.exitOnStart > 255 {
		return config{}, fmt.Errorf("--exit-on-start %d out of range 0-255", cfg.exitOnStart)
	}
	if cfg.stderrLines < 0 {
		return config{}, fmt.Errorf("--stderr-lines %d must not be negative", cfg.stderrLines)
	}
	return cfg, nil
}

func newServer(name string) *server.MCPServer {
	s := server.NewMCPServer(name, version,
		server.WithToolCapabilities(false),
		server.WithRecovery(),
	)
	registerTools(s)
	registerMutate(s)
	return s
}

func run(ctx context.Context, cfg config, logger *slog.Logger) error {
	logger.Info("starting", "name", cfg.name, "transport", cfg.transport,
		"protocol", cfg.protocol, "hang", cfg.hang)

	if cfg.transport == "stdio" {
		if cfg.hang {
			return hangStdio(ctx, os.Stdin)
		}
		return serveStdio(ctx, newServer(cfg.name), cfg.protocol, os.Stdin, os.Stdout, logger)
	}

	mux := http.NewServeMux()
	switch cfg.transport {
	case "http":
		opts := []server.StreamableHTTPOption{
			server.WithEndpointPath(cfg.path),
			// Callers reach the container through its network address or a
			// published port; the loopback check is meant for desktop servers.
			server.WithDisableLocalhostProtection(true),
			server.WithStreamableHTTPLogger(logger),
		}
		if versions := cfg.protocol.advertised(); versions != nil {
			opts = append(opts, server.WithStreamableHTTPProtocolVersions(versions...))
		}
		h := server.NewStreamableHTTPServer(newServer(cfg.name), opts...)
		mux.Handle(cfg.path, filterHTTP(cfg.protocol, holdUntilGone, h, logger))
	case "sse":
		h := server.NewSSEServer(newServer(cfg.name),
			server.WithSSEEndpoint(cfg.path),
			server.WithMessageEndpoint(path.Join(cfg.path, "message")),
			server.WithSSEDisableLocalhostProtection(true),
		)
		mux.Handle(h.CompleteSsePath(), h.SSEHandler())
		mux.Handle(h.CompleteMessagePath(), filterHTTP(cfg.protocol, acceptAndDrop, h.MessageHandler(), logger))
	}
	var handler http.Handler = mux
	if cfg.hang {
		handler = http.HandlerFunc(holdUntilGone)
	}
	return serveHTTP(ctx, ":"+strconv.Itoa(cfg.port), handler, logger)
}

// serveStdio runs the mcp-go stdio server on in and out, with mode applied to
// every inbound line.
func serveStdio(ctx context.Context, s *server.MCPServer, mode protocolMode, in io.Reader, out io.Writer, logger *slog.Logger) error {
	stdio := server.NewStdioServer(s)
	stdio.SetErrorLogger(slog.NewLogLogger(logger.Handler(), slog.LevelError))
	if versions := mode.advertised(); versions != nil {
		stdio.SetContextFunc(func(ctx context.Context) context.Context {
			return server.WithSupportedProtocolVersions(ctx, versions)
		})
	}

	if mode != protocolAuto {
		w := &lineWriter{w: out}
		pr, pw := io.Pipe()
		defer pr.Close()
		go filterStdio(mode, in, pw, w, logger)
		in, out = pr, w
	}

	err := stdio.Listen(ctx, in, out)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// hangStdio consumes input so the client's writes never block, and answers
// nothing. It keeps running past EOF, like a wedged process would, until it
// is signalled.
func hangStdio(ctx context.Context, in io.Reader) error {
	go func() { _, _ = io.Copy(io.Discard, in) }()
	<-ctx.Done()
	return nil
}

func serveHTTP(ctx context.Context, addr string, handler http.Handler, logger *slog.Logger) error {
	srv := &http.Server{
		Addr:              addr,
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		// Requests inherit ctx so that held and streaming requests end on
		// shutdown instead of stalling it.
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    slog.NewLogLogger(logger.Handler(), slog.LevelError),
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	logger.Info("listening", "addr", addr)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}

	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return srv.Close()
	}
	return nil
}
