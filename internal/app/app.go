// Package app wires hangar together: configuration, the Docker runtime,
// providers, the gateway and its endpoints. cmd/hangar parses flags and
// signals; tests and benchmarks embed an App directly.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/backend"
	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/clientconfig"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dashboard"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/frontdoor"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/instance"
	"github.com/mcp-hangar/hangar/internal/manage"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/metrics"
	"github.com/mcp-hangar/hangar/internal/packages"
	"github.com/mcp-hangar/hangar/internal/pin"
	"github.com/mcp-hangar/hangar/internal/provider"
	mcpregistry "github.com/mcp-hangar/hangar/internal/registry"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/telemetry"
	"github.com/mcp-hangar/hangar/internal/upstreamauth"
)

// Options are the command-line level settings.
type Options struct {
	// Instance names this gateway on the engine (LabelOwner); containers
	// of another instance are never touched, and a second live gateway of
	// the same name on the same engine is refused (see package instance).
	// "" means the compose project the gateway's container belongs to,
	// else "default".
	Instance string
	Log      *slog.Logger // nil: from the config's logging section, on stderr
	// WorkerTick is how often health and idle workers look at providers
	// (default 1s).
	WorkerTick time.Duration
	// TrafficStep is how often the dashboard's traffic charts take a
	// sample (default readmodel.DefaultTrafficStep).
	TrafficStep time.Duration
	// DataDir is --data-dir: it wins over $HANGAR_DATA_DIR and data_dir:
	// (default $XDG_STATE_HOME/hangar/<instance>).
	DataDir string
	// Pins keeps the tool pins (the rug-pull defence); nil keeps them in
	// memory, so they are taken afresh after a restart.
	Pins store.Pins
	// Audit receives every decision on a tool call; nil logs them only.
	Audit store.Audit
	// Listen is the address of the gateway's HTTP endpoint, recorded in the
	// instance lease so that a gateway on another host can check that this
	// one is alive; "" when it serves stdio.
	Listen string
	// Replica names this gateway among the replicas of its instance when
	// the store is shared (default the host name); AdvertiseURL is where
	// the other replicas reach it (default http://<Listen>).
	Replica, AdvertiseURL string
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
	// Telemetry exports traces and MCP metrics over OTLP; nil when off.
	Telemetry *telemetry.Telemetry
	Log       *slog.Logger
	// Store is the durable state in DataDir, open from New to Close.
	Store   store.Store
	DataDir string
	// Images is the gate every docker start passes (pull policy, allowed
	// registries, signatures, digest pins).
	Images *backend.ImageGate
	// Packages builds, pins and releases the images of npm and PyPI
	// servers.
	Packages *packages.Builder

	// Instance is the instance name in use (Options.Instance resolved).
	Instance string
	// Manage is the management protocol (mcp/* methods, seed 003).
	Manage *manage.Service
	// Egress runs the networks and proxies of servers with egress.
	Egress *dockerrt.Egress
	// Dashboard serves /ui/ over the read model.
	Dashboard *dashboard.Dashboard
	// UpstreamAuth is the OAuth client and vault of callers' upstream
	// credentials (upstream_auth), and the /oauth/ paths.
	UpstreamAuth *upstreamauth.Manager

	listen atomic.Value // string: the HTTP listen address (public URL default)
	// Ready turns true once what the gateway serves from is loaded
	// (becomeReady): /readyz, and /mcp requests wait for it.
	Ready *endpoint.Readiness

	egressLog *egressRefusals

	docker    *client.Client
	discovery *discovery.Service // nil when discovery is off
	self      instance.Container // the gateway's own container, zero on a host
	selfNets  []string
	leaseMu   sync.Mutex
	lease     *instance.Lease // nil until taken
	released  bool            // after Close: never taken again
	holder    instance.Holder
	member    *instance.Membership // with a shared store: replaces the lease
	// forwardKey signs and checks what replicas forward to each other.
	forwardKey []byte
	changes    *replicaChanges // with a shared store: other replicas' changes
	ctx        context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup

	trafficStep time.Duration // Options.TrafficStep

	// quarantines are the provider quarantines kept in the store.
	quarantines *pin.Quarantines
}

// NewLogger builds the slog logger the config asks for; a line logged
// with a traced context carries its trace and span ids.
func NewLogger(l config.Logging, w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToUpper(l.Level))); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if l.JSONFormat {
		return slog.New(telemetry.LogHandler(slog.NewJSONHandler(w, opts)))
	}
	return slog.New(telemetry.LogHandler(slog.NewTextHandler(w, opts)))
}

// New builds the gateway from cfg: it connects to the Docker engine, takes
// the instance's lease (failing when another live gateway holds it, before
// any container is touched), removes containers an earlier run of this
// instance left behind, and registers every configured provider and group
// (with its members) COLD.
func New(cfg *config.Config, o Options) (*App, error) {
	log := o.Log
	if log == nil {
		log = NewLogger(cfg.Logging, os.Stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &App{Config: cfg, Log: log, ctx: ctx, cancel: cancel, Engine: &dockerrt.EngineState{}, trafficStep: o.TrafficStep, Ready: endpoint.NewReadiness()}
	// A provider message bigger than this could be neither answered nor
	// kept as a continuation, so it is not read into memory.
	mcpconn.SetMaxMessageBytes(int64(cfg.Batch.MaxResponseSizeBytes) + int64(cfg.Batch.MaxContinuationBytes) + 1<<20)

	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		cancel()
		return nil, fmt.Errorf("docker client: %w", err)
	}
	a.docker = cli
	a.detectSelf(ctx)
	a.Instance = o.Instance
	if a.Instance == "" {
		a.Instance = instance.DefaultName
		if a.self.ComposeProject != "" {
			a.Instance = a.self.ComposeProject
		}
	}
	if err := instance.CheckName(a.Instance); err != nil {
		cancel()
		_ = cli.Close()
		return nil, err
	}
	// The store comes before any container is touched: a locked, corrupt
	// or unwritable data dir stops start-up there. Its default place
	// depends on the instance name, resolved just above.
	if err := a.openStore(ctx, o, a.Instance); err != nil {
		cancel()
		_ = cli.Close()
		return nil, err
	}
	if err := a.joinReplicas(ctx, o); err != nil {
		cancel()
		_ = cli.Close()
		_ = a.Store.Close()
		return nil, err
	}
	a.holder = instance.Self(a.Instance, a.self, o.Listen)
	a.Runtime = dockerrt.New(cli, a.Instance, log)
	if a.member != nil {
		a.Runtime.SetReplica(a.member.Self.Replica)
	}
	a.Runtime.SetGuard(a.holdLease)
	a.Runtime.SetAccess(a.hostAccess)

	// A dead engine at start-up is not fatal: remote providers still work
	// and the watcher reconnects when the engine comes back; the lease is
	// then taken before the first container is touched. Another live
	// holder of the name is fatal.
	rctx, rcancel := context.WithTimeout(ctx, 15*time.Second)
	if err := a.holdLease(rctx); errors.Is(err, instance.ErrHeld) || errors.Is(err, instance.ErrNotLease) {
		rcancel()
		cancel()
		_ = cli.Close()
		_ = a.Store.Close()
		return nil, err
	} else if err != nil {
		log.Warn("docker engine unavailable at start-up", "error", err)
	} else if n, err := a.Runtime.Reap(rctx, nil); err != nil {
		log.Warn("docker engine unavailable at start-up", "error", err)
	} else if n > 0 {
		log.Info("removed containers left by an earlier run", "count", n)
	}
	rcancel()

	a.Metrics = metrics.New()
	if a.member != nil {
		a.Metrics.EnableReplicas(func() bool {
			r, ok := a.Store.(interface{ Unreachable() error })
			return !ok || r.Unreachable() == nil
		})
	}
	if a.Telemetry, err = telemetry.New(ctx, telemetry.Options{Config: cfg.Telemetry, Version: gateway.Version,
		Instance: a.Instance, Recorder: a.Metrics}); err != nil {
		_ = cli.Close()
		_ = a.Store.Close()
		return nil, err
	}
	a.selfNets = a.self.Networks
	a.Images = &backend.ImageGate{
		Engine:   dockerrt.NewImages(cli, cfg.Images.AllowedRegistries, log.With("component", "images")),
		Global:   cfg.Images,
		Verifier: dockerrt.CosignVerifier{},
		Pins:     a.Store,
		Log:      log.With("component", "images"),
	}
	// npm and PyPI servers: images built once from their runner's
	// runtime image, with the runtimes and images sections of the
	// config as it is at each build.
	a.Packages = packages.New(a.Runtime, a.Images.Engine, a.Store, a.Instance, func() packages.Settings {
		cfg := a.Config
		if a.Gateway != nil {
			cfg = a.Gateway.Config()
		}
		return packages.Settings{Runtimes: cfg.Runtimes, Images: cfg.Images}
	}, log.With("component", "packages"))
	launcher := &backend.Launcher{Docker: a.Runtime, HTTPNetwork: a.httpNetwork(), Images: a.Images, Packages: a.Packages}
	a.listen.Store(o.Listen)
	// The sink passes every provider event on to metrics and queues state
	// changes for the management notifications.
	sink := manage.NewSink(a.Metrics)
	pins := o.Pins
	if pins == nil {
		pins = a.Store
	}
	// Provider quarantines (tools or image changed) are kept in the store
	// and restored into each provider as it is registered.
	quarantines, err := pin.LoadQuarantines(ctx, a.Store)
	if err != nil {
		log.Error("provider quarantines not restored", "error", err)
	}
	a.quarantines = quarantines
	// Installed servers' secrets are resolved from the keystore at launch.
	a.Providers = provider.NewManager(&manage.SecretLauncher{Next: launcher, Secrets: a.Store}, provider.Options{
		Log:         log,
		Global:      provider.NewLimiter(cfg.Execution.MaxConcurrency),
		Events:      sink,
		ToolGate:    pin.New(pins),
		Images:      a.Images,
		Quarantines: quarantines,
		Telemetry:   a.Telemetry,
	})
	a.Metrics.SetInflight(a.Providers.Inflight)
	a.Gateway = gateway.New(cfg, a.Providers, a.Engine, a.Metrics, log)
	a.setUpUpstreamAuth(launcher)
	if a.member != nil {
		a.Gateway.SetReplica(a.member.Self.Replica)
	}
	a.Gateway.Telemetry = a.Telemetry
	a.Images.Engine.Puller().Pulled = a.Metrics.ImagePulled
	if a.DataDir != "" {
		// Big continuations wait on disk, not in the gateway's memory.
		if err := a.Gateway.Cache.SetDir(filepath.Join(a.DataDir, "continuations")); err != nil {
			log.Warn("continuations stay in memory", "error", err)
		}
	}
	a.Gateway.Store = a.Store
	a.Gateway.Images = a.Images
	a.setUpEgress(ctx, cfg)
	launcher.Egress = a.Egress
	a.reapEgress(ctx)
	quarantines.SourceOf = func(id string) string {
		if e, ok := a.Gateway.Catalog.Get(id); ok {
			return string(e.Source)
		}
		return ""
	}
	a.Images.Settings = func() config.Images { return a.Gateway.Config().Images }
	a.Gateway.AuditStore = o.Audit
	if a.Gateway.AuditStore == nil {
		a.Gateway.AuditStore = a.Store
		// Off the call path: one goroutine writes the trail in batches;
		// Close flushes it before the store closes.
		if st, ok := a.Store.(audit.Store); ok {
			ao := audit.Options{Dropped: audit.NewDroppedCounter(a.Metrics.Registry), Log: log.With("component", "audit")}
			if a.DataDir != "" {
				// Acknowledged entries survive a kill of this replica.
				ao.Spool = filepath.Join(a.DataDir, "audit.spool")
			}
			w := audit.New(st, ao)
			a.Gateway.AuditStore = w
			a.goOwned(func() { w.Run(ctx) })
		}
	}
	a.Gateway.Pins = pins
	// The catalog registers every configured provider and group (with
	// its members); validation keeps their IDs unique, and a refusal here
	// is logged by the catalog.
	a.Gateway.Catalog.PublishConfig(ctx, cfg, "start", false)
	if cfg.Registry.Enabled() {
		loader := mcpregistry.NewLoader(cfg.Registry, mcpregistry.NewClient(cfg.Registry, log.With("component", "registry")),
			mcpregistry.Providers{M: a.Providers, Catalog: a.Gateway.Catalog}, log.With("component", "hotload"))
		loader.Execution = cfg.Execution
		loader.AllowedEgress = cfg.Install.AllowedEgress
		loader.Packages = a.Packages
		a.Gateway.HotLoad = loader
		if a.member != nil {
			a.Gateway.HotLoad = newReplicatedLoader(loader, a.Store, log.With("component", "replicas"))
		}
	}
	a.Manage = a.newManage(ctx)
	// Package images no server runs any more (hot-loaded ones of the last
	// run, a removal that failed) go, off the start-up path.
	a.goOwned(func() {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if n, err := a.Packages.Sweep(sctx); err != nil {
			log.Debug("package images not swept", "error", err)
		} else if n > 0 {
			log.Info("removed package images no server runs", "count", n)
		}
	})
	a.MCP = a.Gateway.MCPServer()
	a.Manage.Notifier.Attach(a.MCP)
	a.goOwned(func() { a.Manage.Run(ctx, sink) })
	if fd := a.Gateway.FrontDoor; fd != nil {
		// Cached catalogs survive restarts; every catalog change (a server
		// added, removed, approved, unloaded, its policy changed) is one
		// refresh, so clients get one list_changed for it.
		fd.Catalogs = a.Store
		unsubscribe := a.Gateway.Catalog.Subscribe(func(catalog.Batch) { fd.Kick() })
		a.goOwned(func() { fd.Run(ctx); unsubscribe() })
	}

	if cfg.Discovery.Enabled {
		if err := a.startDiscovery(ctx, launcher); err != nil {
			cancel()
			a.wg.Wait() // the audit writer flushes before the store closes
			_ = a.releaseLease(context.Background())
			_ = cli.Close()
			_ = a.Store.Close()
			return nil, err
		}
	}

	tick := o.WorkerTick
	if tick <= 0 {
		tick = time.Second
	}
	a.goOwned(func() { a.Runtime.WatchEvents(ctx, cli, a.Engine, a.reconcile) })
	a.goOwned(func() { a.Providers.RunWorkers(ctx, tick) })
	a.runReplicas(ctx)
	if a.member != nil {
		a.startHotloads(ctx)
	}
	a.followChanges(ctx)
	if cfg.ConfigReload.Enabled {
		a.goOwned(func() { a.Gateway.WatchConfig(ctx, cfg.ConfigReload.Interval) })
	}
	a.wireViews()
	a.goOwned(func() { a.becomeReady(ctx) })
	return a, nil
}

// becomeReady marks the gateway ready once what it serves from is loaded.
// New has opened the store, restored the installed servers and the
// quarantines, and published the config's servers to the catalog. Left
// are discovery's first listing (the servers approved before this start
// join the catalog there), then a front-door refresh after it (the
// callable names, with the tool catalogs stored at the last run), then the
// tool index holding that refresh. Catalogs nobody stored, which take a
// container start to learn, are not waited for: they join with a
// list_changed.
func (a *App) becomeReady(ctx context.Context) {
	began := time.Now()
	if a.discovery != nil {
		a.Ready.Loading("discovery's first listing")
		select {
		case <-a.discovery.Scanned():
		case <-ctx.Done():
			return
		}
	}
	if fd := a.Gateway.FrontDoor; fd != nil {
		a.Ready.Loading("the front door's tool list")
		if err := fd.Sync(ctx); err != nil {
			return
		}
		a.Ready.Loading("the tool index")
		if err := fd.SearchCaughtUp(ctx); err != nil {
			return
		}
	}
	a.Ready.Ready()
	a.Log.Info("gateway ready", "took_ms", time.Since(began).Milliseconds())
}

// newManage builds the management protocol over the providers and groups
// and restores the installed servers.
func (a *App) newManage(ctx context.Context) *manage.Service {
	cfg, log := a.Config, a.Log.With("component", "manage")
	workspace := cfg.Workspace
	if workspace == "" {
		workspace = a.Instance
	}
	cat := &manage.ProviderCatalog{Catalog: a.Gateway.Catalog, Providers: a.Providers, Groups: a.Gateway.Groups, Go: a.goOwned}
	svc := manage.New(cat, a.Store, manage.NewNotifier(log), workspace, manage.Options{
		Install: clientconfig.Options{
			Runtimes:        cfg.Runtimes,
			AllowSubprocess: cfg.Install.AllowSubprocess,
			AllowedEgress:   cfg.Install.AllowedEgress,
			Execution:       cfg.Execution,
			Access:          a.hostAccess(),
		},
		OnChanged: func() {
			if fd := a.Gateway.FrontDoor; fd != nil {
				fd.Kick()
			}
		},
		Packages: a.Packages,
	}, log)
	// allow_implicit_invocation decides whether the front door lists an
	// installed server's tools.
	a.Gateway.Exposed = func(id string) (bool, bool) {
		p, ok := svc.Policy(id)
		return p.AllowImplicitInvocation, ok
	}
	svc.Bindings = frontDoorBindings{a.Gateway}
	svc.Extras = func(id string) (resources, templates, prompts []json.RawMessage) {
		if fd := a.Gateway.FrontDoor; fd != nil {
			resources, templates, prompts, _ = fd.Extras(id)
		}
		return resources, templates, prompts
	}
	if cfg.ToolAccess.Mode != config.AccessFrontDoor {
		// Without a front door (the stored catalogs' owner) this
		// service keeps them, through the same writer.
		svc.Options.SaveCatalog = frontdoor.CatalogSaver(a.Store, a.Providers)
	}
	a.Gateway.Management = svc
	a.Gateway.Refuse = svc.Refuse
	a.Gateway.Hooks = svc.Notifier.Hooks()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := svc.Restore(rctx); err != nil {
		log.Error("installed servers not restored", "error", err)
	}
	return svc
}

// goOwned runs f as a goroutine the App owns: Close waits for it.
func (a *App) goOwned(f func()) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		f()
	}()
}

// detectSelf finds the gateway's own container (its networks and compose
// project), none when it runs on a host.
func (a *App) detectSelf(ctx context.Context) {
	host, err := os.Hostname()
	if err != nil {
		return
	}
	a.self, _ = instance.Detect(ctx, a.docker, host)
}

// holdLease takes the instance's lease unless it is held already; the
// Runtime calls it before it creates or reaps anything.
func (a *App) holdLease(ctx context.Context) error {
	a.leaseMu.Lock()
	defer a.leaseMu.Unlock()
	if a.lease != nil {
		return nil
	}
	if a.released {
		return errors.New("the gateway is shut down")
	}
	if a.member != nil { // replicas: the membership row is the claim
		return nil
	}
	l, err := instance.Acquire(ctx, &instance.Checker{API: a.docker, Self: a.holder})
	if err != nil {
		return err
	}
	a.lease = l
	if l.TookOver != nil {
		a.Log.Warn("took the instance over from a gateway that is gone; removing its leftovers",
			"instance", a.Instance, "previous", l.TookOver.String())
	} else {
		a.Log.Info("instance lease taken", "instance", a.Instance, "lease", instance.VolumeName(a.Instance))
	}
	return nil
}

func (a *App) releaseLease(ctx context.Context) error {
	a.leaseMu.Lock()
	defer a.leaseMu.Unlock()
	a.released = true
	if a.member != nil {
		return a.leaveReplicas(ctx)
	}
	if a.lease == nil {
		return nil
	}
	err := a.lease.Release(ctx)
	a.lease = nil
	return err
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
// tracks any more are removed, so no orphan survives an engine restart,
// and providers that died while it was away start again at the next call.
func (a *App) reconcile() {
	a.Providers.EngineBack()
	ctx, cancel := context.WithTimeout(a.ctx, 15*time.Second)
	defer cancel()
	if n, err := a.Runtime.Reap(ctx, a.Providers.Tracks); err != nil {
		a.Log.Warn("reconcile after reconnect", "error", err)
	} else if n > 0 {
		a.Log.Info("reconciled: removed untracked containers", "count", n)
	}
	a.reapEgress(ctx)
}

// reapEgress removes egress networks nothing uses (after the containers
// on them are gone).
func (a *App) reapEgress(ctx context.Context) {
	if n, err := a.Egress.Reap(ctx); err != nil {
		a.Log.Debug("egress networks not reaped", "error", err)
	} else if n > 0 {
		a.Log.Info("removed unused egress networks", "count", n)
	}
}

// ServeHTTP serves the endpoint on ln until ctx ends, then drains: new
// requests are refused, requests in flight get drainTimeout to finish.
func (a *App) ServeHTTP(ctx context.Context, ln net.Listener, o endpoint.Options, drainTimeout time.Duration) error {
	if o.Metrics == nil {
		// OpenMetrics, when the scraper asks for it, carries the MCP
		// histograms' exemplars (trace ids).
		o.Metrics = promhttp.HandlerFor(a.Metrics.Registry, promhttp.HandlerOpts{EnableOpenMetrics: true})
	}
	if o.Auth == nil {
		h, err := a.AuthHTTP(ln.Addr())
		if err != nil {
			return err
		}
		o.Auth = h
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = int64(a.Gateway.Config().Execution.MaxRequestBodyBytes)
	}
	if !o.Hosts.Loopback && o.Hosts.Allowed == nil {
		// The names the endpoint answers follow from where it listens
		// (server.allowed_hosts is read at start).
		o.Hosts = hostPolicy(isLoopback(ln.Addr()), a.Gateway.Config().HTTP)
	}
	if o.UI == nil {
		o.UI = a.Dashboard.Handler
	}
	if o.OAuth == nil {
		o.OAuth = a.UpstreamAuth.Handler()
	}
	a.listen.Store(ln.Addr().String())
	if r := a.forwarder(o.MaxBodyBytes); r != nil && o.Forward == nil {
		o.Forward = r.Middleware
		o.Auth.Forwarded = r.Check
	}
	if o.Ready == nil {
		o.Ready = a.Ready
	}
	ep := a.Gateway.HTTP(a.MCP, o)
	defer ep.Close()
	var fresh freshConns
	srv := &http.Server{Handler: ep.Handler, ReadHeaderTimeout: 10 * time.Second, ConnState: fresh.track}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	o.Ready.Drain()
	dctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	_ = ep.Sessions().Shutdown(dctx)
	o.Auth.EndStreams()
	fresh.close()
	if err := srv.Shutdown(dctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// freshConns are the connections that have not sent a request yet. A
// graceful shutdown waits up to 5 s for such a connection to become idle
// (net/http counts it as active meanwhile), and clients leave them: an
// HTTP client dials for a request that another connection then serves, and
// keeps the new one. At shutdown they are closed (the gateway no longer
// takes requests; no request of theirs is in flight).
type freshConns struct{ conns sync.Map }

func (f *freshConns) track(c net.Conn, st http.ConnState) {
	if st == http.StateNew {
		f.conns.Store(c, struct{}{})
	} else {
		f.conns.Delete(c)
	}
}

func (f *freshConns) close() {
	f.conns.Range(func(c, _ any) bool {
		_ = c.(net.Conn).Close()
		return true
	})
}

// ServeStdio serves MCP on r/w until ctx ends or r reaches EOF.
func (a *App) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	// The management methods (mcp/*) are answered before mcp-go sees them.
	r, w, wait := a.Manage.Stdio(ctx, r, w)
	defer wait()
	// One client, which reads the tool list right after its handshake:
	// nothing is read before what the list is made of is loaded.
	a.Ready.Wait(ctx)
	s := server.NewStdioServer(a.MCP)
	stdioTrust()(s)
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
	// Proxies are stopped before the reap, so none is restarted by its
	// supervisor; their networks go once nothing is left on them.
	a.Egress.Close()
	if _, rerr := a.Runtime.ReapAll(ctx); rerr != nil && err == nil {
		err = rerr
	}
	a.reapEgress(ctx)
	a.cancel()
	a.wg.Wait()
	a.Images.Engine.Puller().Close()
	// Spans and metrics of the shutdown above are flushed.
	if terr := a.Telemetry.Shutdown(ctx); terr != nil {
		a.Log.Warn("telemetry not flushed", "error", terr)
	}
	// Last: once the lease is gone another gateway may take the name.
	if lerr := a.releaseLease(ctx); lerr != nil && err == nil {
		err = lerr
	}
	_ = a.docker.Close()
	// Last: everything above may still record a decision.
	if serr := a.Store.Close(); serr != nil && err == nil {
		err = serr
	}
	return err
}

// frontDoorBindings is management's recent_bindings: the front door's
// callable names of a server (none in egress mode).
type frontDoorBindings struct{ g *gateway.Gateway }

func (b frontDoorBindings) RecentBindings(server string, limit int) []manage.Binding {
	fd := b.g.FrontDoor
	if fd == nil {
		return nil
	}
	var out []manage.Binding
	for _, x := range fd.Bindings(server, limit) {
		out = append(out, manage.Binding{CallableName: x.Callable, RawToolName: x.Tool, CatalogVersion: x.CatalogVersion, BoundAt: x.BoundAt})
	}
	return out
}
