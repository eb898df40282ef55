// Command hangar is a container-native MCP gateway.
//
//	hangar serve [--config FILE] [--listen HOST:PORT | --stdio]
//	hangar config check FILE
//	hangar call [--url URL] TOOL [JSON-ARGUMENTS]
//	hangar servers list|details|install|uninstall|restart|policy …
//	hangar import FILE
//	hangar healthz [URL]
//	hangar version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-hangar/hangar/internal/app"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/gateway"
)

const usage = `hangar — a container-native MCP gateway

Usage:
  hangar serve [--config FILE] [--listen HOST:PORT | --stdio] [--instance NAME]
  hangar config check FILE
  hangar call [--url URL] TOOL [JSON-ARGUMENTS]
  hangar servers list|details NAME|install FILE|uninstall NAME|restart NAME|policy NAME --enabled=… --implicit=…
  hangar import FILE        (a Claude Desktop, Cursor or VS Code MCP config)
  hangar healthz [URL]
  hangar version

The config file is --config, else $MCP_CONFIG, else ./config.yaml.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "config":
		err = configCmd(os.Args[2:])
	case "call":
		err = callCmd(os.Args[2:])
	case "servers":
		err = serversCmd(os.Args[2:], false)
	case "import":
		err = serversCmd(os.Args[2:], true)
	case "healthz":
		url := "http://127.0.0.1:8080/healthz"
		if len(os.Args) > 2 {
			url = os.Args[2]
		}
		err = app.Healthz(context.Background(), url)
	case "version", "--version":
		fmt.Println("hangar", gateway.Version)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "hangar: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hangar:", err)
		os.Exit(1)
	}
}

func configCmd(args []string) error {
	if len(args) != 2 || args[0] != "check" {
		return errors.New("usage: hangar config check FILE")
	}
	cfg, err := config.Load(args[1])
	if err != nil {
		return err
	}
	fmt.Printf("%s: ok (%d MCP servers)\n", args[1], len(cfg.Servers))
	return nil
}

func callCmd(args []string) error {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	url := fs.String("url", envOr("HANGAR_URL", "http://127.0.0.1:8080/mcp"), "the gateway's MCP endpoint")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return errors.New("usage: hangar call [--url URL] TOOL [JSON-ARGUMENTS]")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	return app.CallTool(ctx, *url, fs.Arg(0), fs.Arg(1), os.Stdout)
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "config file (default $MCP_CONFIG, else ./config.yaml)")
	listen := fs.String("listen", envOr("HANGAR_LISTEN", "127.0.0.1:8080"), "HTTP listen address")
	stdio := fs.Bool("stdio", false, "serve MCP on stdin/stdout instead of HTTP")
	instance := fs.String("instance", envOr("HANGAR_INSTANCE", "default"), "instance name labelled on containers; instances never touch each other's containers")
	origins := fs.String("allow-origin", os.Getenv("HANGAR_ALLOWED_ORIGINS"), "comma-separated browser origins allowed besides loopback ones")
	drain := fs.Duration("drain-timeout", 10*time.Second, "how long SIGTERM waits for requests in flight")
	if err := fs.Parse(args); err != nil {
		return err
	}

	path := config.ResolvePath(*cfgPath)
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	a, err := app.New(cfg, app.Options{Instance: *instance})
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	if *stdio {
		a.Log.Info("serving MCP on stdio", "config", path, "mcp_servers", len(cfg.Servers))
		err = a.ServeStdio(ctx, os.Stdin, os.Stdout)
	} else {
		var ln net.Listener
		ln, err = net.Listen("tcp", *listen)
		if err == nil {
			a.Log.Info("serving MCP over HTTP", "listen", ln.Addr().String(), "config", path, "mcp_servers", len(cfg.Servers))
			err = a.ServeHTTP(ctx, ln, gateway.HTTPOptions{AllowedOrigins: splitList(*origins)}, *drain)
		}
	}

	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if cerr := a.Close(cctx); cerr != nil {
		a.Log.Warn("shutdown", "error", cerr)
	}
	a.Log.Info("stopped")
	return err
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
