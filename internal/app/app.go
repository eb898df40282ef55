// Package app wires hangar together: configuration, the Docker runtime,
// providers, the gateway and its endpoints. cmd/hangar parses flags and
// signals; tests and benchmarks embed an App directly.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcp-hangar/hangar/internal/backend"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/metrics"
	"github.com/mcp-hangar/hangar/internal/provider"
	mcpregistry "github.com/mcp-hangar/hangar/internal/registry"
)

// Options are the command-line level settings.
type Options struct {
	// Instance names this gateway on the engine (LabelOwner); containers
	// of another instance are never touched.
	Instance string
	Log      *slog.Logger // nil: from the config's logging section, on stderr
	// WorkerTick is how often health and idle workers look at providers
	// (default 1s).
	WorkerTick time.Duration
}

// App is a running gateway.
type App struct {
	Config    *config.Config
	Gateway   *gateway.Gateway
	MCP       *server.MCPServer
	Providers *provider.Manager
	Runtime   *dockerrt.Runtime
	Engine    *dockerrt.EngineState
	Metrics   *metrics.Metrics
	Log       *slog.Logger

	docker    *client.Client
	discovery *discovery.Service // nil when discovery is off
	selfNets  []string
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// NewLogger builds the slog logger the config asks for.
func NewLogger(l config.Logging, w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToUpper(l.Level))); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if l.JSONFormat {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// New builds the gateway from cfg: it connects to the Docker engine, removes
// containers an earlier run of this instance left behind, and registers
// every configured provider and group (with its members) COLD.
func New(cfg *config.Config, o Options) (*App, error) {
	if o.Instance == "" {
		o.Instance = "default"
	}
	log := o.Log
	if log == nil {
		log = NewLogger(cfg.Logging, os.Stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &App{Config: cfg, Log: log, ctx: ctx, cancel: cancel, Engine: &dockerrt.EngineState{}}

	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		cancel()
		return nil, fmt.Errorf("docker client: %w", err)
	}
	a.docker = cli
	a.Runtime = dockerrt.New(cli, o.Instance, log)

	// A dead engine at start-up is not fatal: remote providers still work
	// and the watcher reconnects when the engine comes back.
	rctx, rcancel := context.WithTimeout(ctx, 15*time.Second)
	if n, err := a.Runtime.Reap(rctx, nil); err != nil {
		log.Warn("docker engine unavailable at start-up", "error", err)
	} else if n > 0 {
		log.Info("removed containers left by an earlier run", "count", n)
	}
	rcancel()

	a.Metrics = metrics.New()
	a.selfNets = a.selfNetworks(ctx)
	launcher := &backend.Launcher{Docker: a.Runtime, HTTPNetwork: a.httpNetwork()}
	a.Providers = provider.NewManager(launcher, provider.Options{
		Log:    log,
		Global: provider.NewLimiter(cfg.Execution.MaxConcurrency),
		Events: a.Metrics,
	})
	a.Metrics.SetInflight(a.Providers.Inflight)
	a.Gateway = gateway.New(cfg, a.Providers, a.Engine, a.Metrics, log)
	for _, id := range sortedIDs(cfg) {
		s := cfg.Servers[id]
		if s.Mode != config.ModeGroup {
			a.Providers.Add(s)
			continue
		}
		// Validation keeps every member ID unique; this is a last guard.
		if _, err := a.Gateway.Groups.Add(s); err != nil {
			log.Error("group not served", "group", id, "error", err)
		}
	}
	if cfg.Registry.Enabled() {
		taken := func(id string) bool { _, ok := a.Gateway.Groups.Get(id); return ok }
		loader := mcpregistry.NewLoader(cfg.Registry, mcpregistry.NewClient(cfg.Registry, log.With("component", "registry")),
			mcpregistry.Providers{M: a.Providers, Taken: taken}, log.With("component", "hotload"))
		loader.Execution = cfg.Execution
		a.Gateway.HotLoad = loader
	}
	a.MCP = a.Gateway.MCPServer()
	if fd := a.Gateway.FrontDoor; fd != nil {
		a.goOwned(func() { fd.Run(ctx) })
	}

	if cfg.Discovery.Enabled {
		if err := a.startDiscovery(ctx, launcher); err != nil {
			cancel()
			_ = cli.Close()
			return nil, err
		}
	}

	tick := o.WorkerTick
	if tick <= 0 {
		tick = time.Second
	}
	a.goOwned(func() { a.Runtime.WatchEvents(ctx, cli, a.Engine, a.reconcile) })
	a.goOwned(func() { a.Providers.RunWorkers(ctx, tick) })
	if cfg.ConfigReload.Enabled {
		a.goOwned(func() { a.Gateway.WatchConfig(ctx, cfg.ConfigReload.Interval) })
	}
	return a, nil
}

// goOwned runs f as a goroutine the App owns: Close waits for it.
func (a *App) goOwned(f func()) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		f()
	}()
}

// selfNetworks are the networks of the gateway's own container, none when
// it runs on a host.
func (a *App) selfNetworks(ctx context.Context) []string {
	host, err := os.Hostname()
	if err != nil {
		return nil
	}
	return a.Runtime.SelfNetworks(ctx, host)
}

// httpNetwork is where containers serving MCP over HTTP go: the gateway's
// own network when it runs in a container (so it can reach them by IP),
// else the default bridge, which the host reaches.
func (a *App) httpNetwork() string {
	for _, n := range a.selfNets {
		if n != "host" && n != "none" {
			return n
		}
	}
	return "bridge"
}

// reconcile runs after the engine comes back: containers that nothing
// tracks any more are removed, so no orphan survives an engine restart.
func (a *App) reconcile() {
	ctx, cancel := context.WithTimeout(a.ctx, 15*time.Second)
	defer cancel()
	if n, err := a.Runtime.Reap(ctx, a.Providers.Tracks); err != nil {
		a.Log.Warn("reconcile after reconnect", "error", err)
	} else if n > 0 {
		a.Log.Info("reconciled: removed untracked containers", "count", n)
	}
}

func sortedIDs(cfg *config.Config) []string { return slices.Sorted(maps.Keys(cfg.Servers)) }

// ServeHTTP serves the endpoint on ln until ctx ends, then drains: new
// requests are refused, requests in flight get drainTimeout to finish.
func (a *App) ServeHTTP(ctx context.Context, ln net.Listener, o gateway.HTTPOptions, drainTimeout time.Duration) error {
	if o.Metrics == nil {
		o.Metrics = promhttp.HandlerFor(a.Metrics.Registry, promhttp.HandlerOpts{})
	}
	ep := a.Gateway.HTTP(a.MCP, o)
	srv := &http.Server{Handler: ep.Handler, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	dctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	_ = ep.Sessions().Shutdown(dctx)
	if err := srv.Shutdown(dctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ServeStdio serves MCP on r/w until ctx ends or r reaches EOF.
func (a *App) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	s := server.NewStdioServer(a.MCP)
	err := s.Listen(ctx, r, w)
	if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, io.EOF)) {
		return nil
	}
	return err
}

// Close stops every provider and removes every container this instance
// created, then stops the background workers.
func (a *App) Close(ctx context.Context) error {
	if a.discovery != nil {
		a.discovery.Close()
	}
	err := a.Providers.StopAll(ctx, "shutdown")
	if _, rerr := a.Runtime.Reap(ctx, nil); rerr != nil && err == nil {
		err = rerr
	}
	a.cancel()
	a.wg.Wait()
	_ = a.docker.Close()
	return err
}
