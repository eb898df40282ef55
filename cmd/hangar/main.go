// Command hangar is a container-native MCP gateway. `hangar --help` lists
// its commands (the table commands); `hangar COMMAND --help` shows one's
// usage and flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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

// command is one of hangar's commands: its name, one line for hangar
// --help, and what runs it (out is standard output).
type command struct {
	name, summary string
	run           func(args []string, out io.Writer) error
}

// commands are hangar's commands, in the order hangar --help lists them.
var commands = []command{
	{"serve", "serve MCP for the servers of a config file, over HTTP (or --stdio)", serve},
	{"config", "check a config file (check); print the config's JSON Schema or reference (schema)", configCmd},
	{"call", "call a tool through a running gateway", callCmd},
	{"token", "make an access token (new); print a generated token file (show)", tokenCmd},
	{"servers", "list, inspect, install, uninstall or restart a running gateway's servers",
		func(args []string, out io.Writer) error { return serversCmd(args, false, out) }},
	{"import", "install the servers of a Claude Desktop, Cursor or VS Code MCP config",
		func(args []string, out io.Writer) error { return serversCmd(args, true, out) }},
	{"healthz", "check that a gateway answers at its /healthz (the image's health check)", healthzCmd},
	{"egress-proxy", "the egress proxy the gateway runs in a container for a server with egress", egressProxy},
	{"version", "print hangar's version", versionCmd},
}

// usageText is hangar --help.
func usageText() string {
	var b strings.Builder
	b.WriteString("hangar — a container-native MCP gateway\n\nusage: hangar COMMAND [ARGUMENTS]\n\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-14s%s\n", c.name, c.summary)
	}
	b.WriteString("\n`hangar COMMAND --help` shows a command's usage and flags. The config file is --config,\n" +
		"else $MCP_CONFIG, else ./config.yaml; docs/configuration.md describes every key.\n")
	return b.String()
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run runs the command args name and returns the exit code: 0, 1 when
// the command failed, 2 for a command hangar does not know.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText())
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usageText())
		return 0
	case "--version":
		args[0] = "version"
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(args[1:], stdout)
		switch {
		case err == nil, errors.Is(err, errHelpShown):
			return 0
		}
		fmt.Fprintln(stderr, "hangar:", err)
		return 1
	}
	fmt.Fprintf(stderr, "hangar: unknown command %q\n\n%s", args[0], usageText())
	return 2
}

func versionCmd(args []string, out io.Writer) error {
	if helpAsked(args) {
		usage{lines: []string{"hangar version"}, about: "Prints hangar's version."}.print(out, nil)
		return errHelpShown
	}
	_, err := fmt.Fprintln(out, "hangar", gateway.Version)
	return err
}

// defaultHealthzURL is where the image's health check finds its gateway.
const defaultHealthzURL = "http://127.0.0.1:8080/healthz"

func healthzCmd(args []string, out io.Writer) error {
	if helpAsked(args) {
		usage{lines: []string{"hangar healthz [URL]"},
			about: "Exits 0 when the gateway answers 200 at URL (default " + defaultHealthzURL + "), else 1: the gateway image's HEALTHCHECK, which has no shell or curl."}.print(out, nil)
		return errHelpShown
	}
	url := defaultHealthzURL
	if len(args) > 0 {
		url = args[0]
	}
	return app.Healthz(context.Background(), url)
}

// callUsage is hangar call --help.
var callUsage = usage{
	lines: []string{"hangar call [flags] TOOL [JSON-ARGUMENTS]"},
	about: "Calls TOOL (a callable name such as math__add, or a hangar_* tool) through a running gateway " +
		"and prints its result. The token is --token, else $HANGAR_TOKEN, else the file named by " +
		"--token-file or $HANGAR_TOKEN_FILE.",
}

func callCmd(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	url := fs.String("url", envOr("HANGAR_URL", "http://127.0.0.1:8080/mcp"), "the gateway's MCP endpoint ($HANGAR_URL)")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	token := fs.String("token", "", "access `TOKEN` (default $HANGAR_TOKEN)")
	tokenFile := fs.String("token-file", os.Getenv("HANGAR_TOKEN_FILE"), "`FILE` holding the access token ($HANGAR_TOKEN_FILE)")
	if err := parse(fs, args, out, callUsage); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return errors.New("usage: hangar " + callUsage.lines[0])
	}
	tok, err := resolveToken(*token, *tokenFile)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	return app.CallTool(ctx, *url, tok, fs.Arg(0), fs.Arg(1), out)
}

// serveUsage is hangar serve --help.
var serveUsage = usage{
	lines: []string{"hangar serve [flags]"},
	about: "Serves MCP at /mcp (liveness at /healthz, Prometheus at /metrics) for the servers of the " +
		"config file: --config, else $MCP_CONFIG, else ./config.yaml. State lives in --data-dir, else " +
		"$HANGAR_DATA_DIR, else data_dir: in the config, else $XDG_STATE_HOME/hangar/<instance>. " +
		"SIGTERM drains and exits 0.",
}

func serve(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "config `FILE` (default $MCP_CONFIG, else ./config.yaml)")
	listen := fs.String("listen", envOr("HANGAR_LISTEN", "127.0.0.1:8080"), "HTTP listen address, `HOST:PORT` ($HANGAR_LISTEN)")
	stdio := fs.Bool("stdio", false, "serve MCP on stdin/stdout instead of HTTP")
	instance := fs.String("instance", os.Getenv("HANGAR_INSTANCE"), "instance `NAME` labelled on containers; one name runs once per engine ($HANGAR_INSTANCE; default: the compose project, else \"default\")")
	origins := fs.String("allow-origin", os.Getenv("HANGAR_ALLOWED_ORIGINS"), "comma-separated browser `ORIGINS` allowed besides loopback ones ($HANGAR_ALLOWED_ORIGINS)")
	dataDir := fs.String("data-dir", "", "`DIR` of the state that survives restarts (default: see above)")
	replica := fs.String("replica", os.Getenv("HANGAR_REPLICA"), "this gateway's `NAME` among its instance's replicas (store.url); default the host name ($HANGAR_REPLICA)")
	advertise := fs.String("advertise-url", os.Getenv("HANGAR_ADVERTISE_URL"), "`URL` the other replicas reach this one at (default http://<listen address>; $HANGAR_ADVERTISE_URL)")
	drain := fs.Duration("drain-timeout", 10*time.Second, "how long SIGTERM waits for requests in flight")
	if err := parse(fs, args, out, serveUsage); err != nil {
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
// and costs about a quarter of a call's CPU. A larger GOGC collects less
// often, and the heap grows to (1 + GOGC/100) times what is live before
// it does. Under 32 clients a gateway with one provider peaks at about
// 30 MiB of heap and 20-27 MiB of its binary's pages (RssAnon, RssFile):
// with 300 its RSS peaked at 51-56 MiB over six runs of `make bench`
// figure 1 (issue 38's bound is 50 MiB), with 250 at 48.5-49.2 MiB, with
// 200 at 47.2-47.5 MiB, for about 5% more CPU per call at that load than
// 300 (by callable name 167-170 µs against 156-161 µs). The soft memory limit makes the collector work
// harder as the heap nears it, which keeps a huge provider answer as
// bounded as before: 100 MiB holds a 60 MiB answer's peak RSS near 135 MB
// (128 MiB let it reach 167 MB, binary pages included), and is still five
// times the live heap of 1,000 configured providers or 10,000 idle
// sessions (about 20 MB each), so the limit never drives the collector in
// steady state. GOGC and GOMEMLIMIT in the environment win.
const (
	gcPercent     = 200
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
