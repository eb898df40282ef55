// Command hangar is a container-native MCP gateway.
//
//	hangar serve [--config FILE] [--listen HOST:PORT | --stdio]
//	hangar config check FILE
//	hangar call [--url URL] [--token TOKEN | --token-file FILE] TOOL [JSON-ARGUMENTS]
//	hangar token new --name NAME --scopes S1,S2 [--servers P1,P2]
//	hangar servers list|details|install|uninstall|restart|policy …
//	hangar import FILE
//	hangar healthz [URL]
//	hangar egress-proxy --allow HOST[:PORT] …
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
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-hangar/hangar/internal/app"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/gateway"
)

const usage = `hangar — a container-native MCP gateway

Usage:
  hangar serve [--config FILE] [--listen HOST:PORT | --stdio] [--instance NAME] [--data-dir DIR]
  hangar config check FILE
  hangar call [--url URL] [--token TOKEN | --token-file FILE] TOOL [JSON-ARGUMENTS]
  hangar token new --name NAME --scopes hangar:read,hangar:call [--servers math,fs-*]
  hangar token show [FILE]
  hangar servers list|details NAME|install FILE|uninstall NAME|restart NAME|policy NAME --enabled=… --implicit=…
  hangar import FILE        (a Claude Desktop, Cursor or VS Code MCP config)
  hangar healthz [URL]
  hangar egress-proxy [--listen :3128] --allow HOST[:PORT] … [--forbid CIDR …]
                            (run by the gateway in a container; see README "Egress")
  hangar version

The config file is --config, else $MCP_CONFIG, else ./config.yaml.
hangar call sends the token of --token, else $HANGAR_TOKEN, else the file
named by --token-file or $HANGAR_TOKEN_FILE.
State lives in --data-dir, else $HANGAR_DATA_DIR, else data_dir: in the config,
else $XDG_STATE_HOME/hangar/<instance> (~/.local/state/hangar/<instance>).
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
	case "token":
		err = tokenCmd(os.Args[2:], os.Stdout)
	case "servers":
		err = serversCmd(os.Args[2:], false)
	case "import":
		err = serversCmd(os.Args[2:], true)
	case "egress-proxy":
		err = egressProxy(os.Args[2:])
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
	return app.CheckConfig(context.Background(), args[1], os.Stdout)
}

func callCmd(args []string) error {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	url := fs.String("url", envOr("HANGAR_URL", "http://127.0.0.1:8080/mcp"), "the gateway's MCP endpoint")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	token := fs.String("token", "", "access token (default $HANGAR_TOKEN)")
	tokenFile := fs.String("token-file", os.Getenv("HANGAR_TOKEN_FILE"), "file holding the access token")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return errors.New("usage: hangar call [--url URL] [--token TOKEN | --token-file FILE] TOOL [JSON-ARGUMENTS]")
	}
	tok, err := resolveToken(*token, *tokenFile)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	return app.CallTool(ctx, *url, tok, fs.Arg(0), fs.Arg(1), os.Stdout)
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "config file (default $MCP_CONFIG, else ./config.yaml)")
	listen := fs.String("listen", envOr("HANGAR_LISTEN", "127.0.0.1:8080"), "HTTP listen address")
	stdio := fs.Bool("stdio", false, "serve MCP on stdin/stdout instead of HTTP")
	instance := fs.String("instance", os.Getenv("HANGAR_INSTANCE"), "instance name labelled on containers; instances never touch each other's containers, and one name runs once per engine (default: the compose project, else \"default\")")
	origins := fs.String("allow-origin", os.Getenv("HANGAR_ALLOWED_ORIGINS"), "comma-separated browser origins allowed besides loopback ones")
	dataDir := fs.String("data-dir", "", "directory of the state that survives restarts (default $HANGAR_DATA_DIR, data_dir:, else $XDG_STATE_HOME/hangar/<instance>)")
	replica := fs.String("replica", os.Getenv("HANGAR_REPLICA"), "this gateway's name among the replicas of its instance when the store is shared (store.url); labels its containers (default the host name)")
	advertise := fs.String("advertise-url", os.Getenv("HANGAR_ADVERTISE_URL"), "where the other replicas reach this one (default http://<listen address>)")
	drain := fs.Duration("drain-timeout", 10*time.Second, "how long SIGTERM waits for requests in flight")
	if err := fs.Parse(args); err != nil {
		return err
	}

	path := config.ResolvePath(*cfgPath)
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	tuneGC()
	// Bind before app.New: a gateway that cannot serve must fail before it
	// takes the instance and touches any container, and the lease records
	// the address bound.
	var ln net.Listener
	opts := app.Options{Instance: *instance, DataDir: *dataDir, Replica: *replica, AdvertiseURL: *advertise}
	if !*stdio {
		if ln, err = net.Listen("tcp", *listen); err != nil {
			return err
		}
		opts.Listen = ln.Addr().String()
	}
	a, err := app.New(cfg, opts)
	if err != nil {
		if ln != nil {
			_ = ln.Close()
		}
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	reclaimed := make(chan struct{})
	rctx, stopReclaim := context.WithCancel(ctx)
	go func() { defer close(reclaimed); reclaimWhenIdle(rctx) }()
	defer func() { stopReclaim(); <-reclaimed }()

	if *stdio {
		a.Log.Info("serving MCP on stdio", "config", path, "mcp_servers", len(cfg.Servers))
		err = a.ServeStdio(ctx, os.Stdin, os.Stdout)
	} else {
		a.Log.Info("serving MCP over HTTP", "listen", ln.Addr().String(), "instance", a.Instance, "config", path, "mcp_servers", len(cfg.Servers))
		err = a.ServeHTTP(ctx, ln, endpoint.Options{
			AllowedOrigins:         splitList(*origins),
			SessionIdleTTL:         cfg.HTTP.SessionIdleTTL,
			MaxSessions:            cfg.HTTP.MaxSessions,
			MaxSessionsPerIdentity: cfg.HTTP.MaxSessionsPerIdentity,
		}, *drain)
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

// gcPercent and gcMemoryLimit are the collector's defaults for serve. The
// gateway's live heap is small (tens of MB) and nearly all its garbage is
// per message, so Go's default (GOGC=100) collects every few hundred calls
// and costs about a quarter of a call's CPU. A larger GOGC collects a
// fifth as often; the soft memory limit makes the collector work harder
// as the heap nears it, which keeps a huge provider answer as bounded as
// before: 100 MiB holds a 60 MiB answer's peak RSS near 135 MB (128 MiB
// let it reach 167 MB, binary pages included), and is still five times
// the live heap of 1,000 configured providers or 10,000 idle sessions
// (about 20 MB each), so the limit never drives the collector in steady
// state. GOGC and GOMEMLIMIT in the environment win.
const (
	gcPercent     = 400
	gcMemoryLimit = 100 << 20
)

func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(gcMemoryLimit)
	}
}
