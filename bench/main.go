// Command bench measures hangar against baselines taken in the same run and
// writes BENCHMARKS.md:
//
//	go run ./bench -out BENCHMARKS.md     (what `make bench` runs)
//	go run ./bench -quick -only 1,4       (a smoke run of some figures)
//	go run ./bench -inprocess -cpuprofile cpu.out
//	                                      (figure 1 against an in-process
//	                                       gateway, profiling both sides)
//
// The gateway under test is the real bin/hangar binary run as a subprocess;
// see the Method section of BENCHMARKS.md. The bench never pulls an image
// and removes every container it starts, also on error or Ctrl-C.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/app"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
)

// lastFigure is the highest figure number -only accepts.
const lastFigure = 16

type options struct {
	out        string
	bin        string
	quick      bool
	only       map[int]bool
	cpuprofile string
	inprocess  bool
	budget     time.Duration
}

func main() {
	var o options
	var only, floorAddr, floorProxy string
	flag.StringVar(&floorAddr, "floor-server", "", "internal: serve the bare mcp-go floor server on this address (the bench runs itself so)")
	flag.StringVar(&floorProxy, "floor-proxy", "", "internal: with -floor-server, also serve the bare proxy of this provider (JSON)")
	flag.StringVar(&o.out, "out", "", "write the report here (e.g. BENCHMARKS.md); only a full, successful run writes it. The report always goes to stdout")
	flag.StringVar(&o.bin, "hangar", "", "gateway binary under test (default bin/hangar, built into a temp dir when missing)")
	flag.BoolVar(&o.quick, "quick", false, "about a quarter of the samples: a smoke run")
	flag.StringVar(&only, "only", "", "comma-separated figures to run, 1-16 (the report file is then not written)")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write the bench process's CPU profile to this file")
	flag.BoolVar(&o.inprocess, "inprocess", false, "run figure 1 only, against a gateway inside this process (with -cpuprofile: both sides of the call in one profile)")
	flag.DurationVar(&o.budget, "budget", 15*time.Minute, "abort the suite (cleaning up) when it runs longer than this (figure 15 builds images)")
	flag.Parse()
	if floorAddr != "" {
		if err := serveFloor(floorAddr, floorProxy); err != nil {
			fmt.Fprintln(os.Stderr, "bench: floor server:", err)
			os.Exit(1)
		}
		return
	}
	if only != "" {
		o.only = map[int]bool{}
		for _, f := range strings.Split(only, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > lastFigure {
				fmt.Fprintf(os.Stderr, "bench: -only: bad figure %q\n", f)
				os.Exit(2)
			}
			o.only[n] = true
		}
	}
	os.Exit(run(o))
}

func (o options) wants(fig ...int) bool {
	if o.inprocess {
		return slices.Contains(fig, 1)
	}
	if o.only == nil {
		return true
	}
	for _, f := range fig {
		if o.only[f] {
			return true
		}
	}
	return false
}

func run(o options) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.budget)
	defer cancel()

	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			log.Error("cpuprofile", "error", err)
			return 1
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Error("cpuprofile", "error", err)
			return 1
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}

	docker, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		log.Error("docker client", "error", err)
		return 1
	}
	defer docker.Close()
	for _, img := range []string{mathImage, testkitImage} {
		ictx, icancel := context.WithTimeout(ctx, dockerTimeout)
		_, err := docker.ImageInspect(ictx, img)
		icancel()
		if err != nil {
			log.Error("image missing (the bench never pulls; run `make images`)", "image", img, "error", err)
			return 1
		}
	}
	tmp, err := os.MkdirTemp("", "hangar-bench-")
	if err != nil {
		log.Error("temp dir", "error", err)
		return 1
	}
	defer os.RemoveAll(tmp)

	b := &Bench{ctx: ctx, docker: docker, runID: "bench-" + randomHex(3), tmp: tmp, scale: 1, log: log}
	if o.quick {
		b.scale = 0.25
	}
	if !o.inprocess {
		if b.bin, err = gatewayBinary(o.bin, tmp, log); err != nil {
			log.Error("gateway binary", "error", err)
			return 1
		}
	}

	b.SweepOrphans(ctx)

	r := &Report{Started: time.Now(), Bin: b.bin, Quick: o.quick, Errs: map[int]error{}, Machine: readMachine(ctx, docker)}
	log.Info("bench starting", "run", b.runID, "gateway", b.bin, "cpus", r.Machine.CPUs, "docker", r.Machine.Docker, "load", r.Machine.LoadBefore)

	cleaned := false
	cleanup := func() error {
		if cleaned {
			return nil
		}
		cleaned = true
		return b.Cleanup()
	}
	defer func() { _ = cleanup() }() // also on panic

	if o.inprocess {
		r.Warm, r.Errs[1] = b.figure1InProcess(ctx)
	} else {
		b.suite(ctx, o, r)
	}
	r.Took = time.Since(r.Started)
	r.Machine.LoadAfter = loadAvg()
	r.Cleanup = cleanup()
	r.Complete = o.only == nil && !o.inprocess

	md := r.Markdown()
	fmt.Println(md)
	code := 0
	for fig, err := range r.Errs {
		if err != nil {
			log.Error("figure failed", "figure", fig, "error", err)
			code = 1
		}
	}
	if r.Cleanup != nil {
		log.Error("cleanup", "error", r.Cleanup)
		code = 1
	}
	if ctx.Err() != nil {
		log.Error("run aborted", "cause", context.Cause(ctx))
		code = 1
	}
	switch {
	case o.out == "":
	case !r.Complete:
		log.Warn("not writing the report: only a full run writes it", "out", o.out)
	case code != 0:
		log.Warn("not writing the report: the run failed (the report above shows how); the previous file is kept", "out", o.out)
	default:
		if err := os.WriteFile(o.out, []byte(md), 0o644); err != nil {
			log.Error("write report", "error", err)
			return 1
		}
		log.Info("report written", "out", o.out)
	}
	log.Info("bench done", "took", time.Since(r.Started).Round(time.Second))
	return code
}

// gatewayBinary returns the binary to test: the flag, else bin/hangar, else
// one built now into dir.
func gatewayBinary(flagBin, dir string, log *slog.Logger) (string, error) {
	if flagBin != "" {
		return filepath.Abs(flagBin)
	}
	if fi, err := os.Stat("bin/hangar"); err == nil && !fi.IsDir() {
		return filepath.Abs("bin/hangar")
	}
	out := filepath.Join(dir, "hangar")
	log.Info("bin/hangar is missing; building it", "into", out)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-w", "-o", out, "./cmd/hangar")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/hangar: %w", err)
	}
	return out, nil
}

// srvDef is one docker provider of a generated config.
type srvDef struct{ ID, Image string }

// configYAML generates a gateway config. Concurrency limits are set so that
// they never queue the bench's clients, and idle_ttl so that no provider
// goes cold during a figure.
func configYAML(servers []srvDef, extra string) string {
	var s strings.Builder
	s.WriteString("execution:\n  max_concurrency: 200\n  default_provider_concurrency: 64\n")
	s.WriteString("logging:\n  level: INFO\n  json_format: true\n")
	s.WriteString(extra)
	s.WriteString("mcp_servers:\n")
	for _, d := range servers {
		fmt.Fprintf(&s, "  %s:\n    mode: docker\n    image: %s\n    idle_ttl_s: 3600\n", d.ID, d.Image)
	}
	return s.String()
}

// suite runs the figures o asks for, one gateway at a time.
func (b *Bench) suite(ctx context.Context, o options, r *Report) {
	fail := func(fig int, err error) { r.Errs[fig] = err; b.log.Error("figure failed", "figure", fig, "error", err) }

	// Figure 1, and figure 7's idle reading with one provider.
	if o.wants(1, 7) && ctx.Err() == nil {
		func() {
			g, err := b.StartGateway("warm", configYAML([]srvDef{{"math", mathImage}}, ""))
			if err != nil {
				fail(1, err)
				return
			}
			defer stopGateway(g, b.log)
			if r.Mem.Idle1, err = settleRSS(g); err != nil {
				fail(7, err)
			}
			if o.wants(1) {
				// The peak of a gateway with one provider under figure 1's
				// 32 clients: the high-water mark is reset when they start,
				// so what the one-client rounds before them did (and the
				// /metrics reads between those rounds) is not counted.
				resetPeak := func() error { return resetHWM(g.Pid()) }
				if r.Warm, err = b.Warm(ctx, g.MCPURL, g.Config.Servers["math"], g.CPU, resetPeak); err != nil {
					fail(1, err)
				}
				if r.Mem.Peak32, err = readStatusBytes(g.Pid(), "VmHWM"); err != nil {
					fail(7, err)
				}
			}
		}()
	}

	// Figures 2 and 3 share a gateway with one cold provider per trial.
	if o.wants(2, 3) && ctx.Err() == nil {
		func() {
			trials := b.n(5, 2)
			defs := []srvDef{{"cold", mathImage}}
			var burst []string
			for i := range trials {
				id := fmt.Sprintf("burst%d", i)
				burst = append(burst, id)
				defs = append(defs, srvDef{id, mathImage})
			}
			g, err := b.StartGateway("cold", configYAML(defs, ""))
			if err != nil {
				fail(2, err)
				fail(3, err)
				return
			}
			defer stopGateway(g, b.log)
			clis, err := DialN(ctx, g.MCPURL, 32)
			if err != nil {
				fail(2, err)
				fail(3, err)
				return
			}
			defer CloseAll(clis)
			if o.wants(2) {
				if r.Cold, err = b.Cold(ctx, g, clis[0], "cold"); err != nil {
					fail(2, err)
				}
			}
			if o.wants(3) && ctx.Err() == nil {
				if r.Burst, err = b.Burst(ctx, g, clis, burst); err != nil {
					fail(3, err)
				}
			}
		}()
	}

	// Figure 4 and the rest of figure 7: 100 providers.
	if o.wants(4, 7) && ctx.Err() == nil {
		func() {
			ids := providerIDs(100)
			defs := make([]srvDef, len(ids))
			for i, id := range ids {
				defs[i] = srvDef{id, mathImage}
			}
			// No catalog prefetch: figure 7 reads this gateway's RSS with
			// its providers cold and idle (see its note).
			g, err := b.StartGateway("list", configYAML(defs, "front_door:\n  prefetch: false\n"))
			if err != nil {
				fail(4, err)
				fail(7, err)
				return
			}
			defer stopGateway(g, b.log)
			c, err := Dial(ctx, g.MCPURL)
			if err != nil {
				fail(4, err)
				return
			}
			defer c.Close()
			if _, err := c.MustCall(ctx, "hangar_list", nil); err != nil {
				fail(4, err)
				return
			}
			if r.Mem.Idle100, err = settleRSS(g); err != nil {
				fail(7, err)
			} else if r.Mem.Idle100File, err = g.RSSFile(); err != nil {
				fail(7, err)
			}
			if o.wants(4) {
				b.log.Info("figure 4: warming 10 of 100 providers")
				if r.List, err = b.List(ctx, g, c, ids, 10); err != nil {
					fail(4, err)
					return
				}
			} else if _, err := c.MustCall(ctx, "hangar_warm", map[string]any{"mcp_servers": strings.Join(ids[:10], ",")}); err != nil {
				fail(7, err)
				return
			}
			if !o.wants(7) {
				return
			}
			if r.Mem.Warm10Idle, err = settleRSS(g); err != nil {
				fail(7, err)
				return
			}
			clis, err := DialN(ctx, g.MCPURL, 32)
			if err != nil {
				fail(7, err)
				return
			}
			defer CloseAll(clis)
			b.log.Info("figure 7: load on 10 warm providers", "clients", len(clis))
			m, err := b.Load(ctx, g, clis, ids[:10], 5*time.Second)
			if err != nil {
				fail(7, err)
				return
			}
			r.Mem.LoadMedian, r.Mem.LoadMax, r.Mem.LoadCalls, r.Mem.LoadFor = m.LoadMedian, m.LoadMax, m.LoadCalls, m.LoadFor
		}()
	}

	// Figures 5 and 6: features that may not exist yet.
	if o.wants(5, 6) && ctx.Err() == nil {
		func() {
			dir, err := os.MkdirTemp("", "hangar-bench-catalog-")
			if err != nil {
				fail(5, err)
				fail(6, err)
				return
			}
			defer os.RemoveAll(dir)
			catalog := filepath.Join(dir, "catalog.json")
			if err := os.WriteFile(catalog, []byte(catalogJSON), 0o600); err != nil {
				fail(5, err)
				fail(6, err)
				return
			}
			g, err := b.StartGateway("disc", configYAML([]srvDef{{"math", mathImage}}, discoveryYAML+registryYAML(catalog)))
			if err != nil {
				if o.wants(5) {
					r.Disc = &DiscoveryResult{Skipped: "not measured: the gateway does not start with a discovery config: " + oneLine(err.Error())}
				}
				if o.wants(6) {
					r.Load = &LoadResult{Skipped: "not measured: the gateway of this figure did not start: " + oneLine(err.Error())}
				}
				return
			}
			defer stopGateway(g, b.log)
			c, err := Dial(ctx, g.MCPURL)
			if err != nil {
				fail(5, err)
				fail(6, err)
				return
			}
			defer c.Close()
			tools, err := c.ToolNames(ctx)
			if err != nil {
				fail(5, err)
				fail(6, err)
				return
			}
			if o.wants(5) {
				if r.Disc, err = b.Discovery(ctx, g, c, tools); err != nil {
					fail(5, err)
				}
			}
			if o.wants(6) && ctx.Err() == nil {
				if r.Load, err = b.HotLoad(ctx, g, c, tools); err != nil {
					fail(6, err)
				}
			}
		}()
	}
	// Figure 8: memory bounded by the limits, on its own gateway.
	if o.wants(8) && ctx.Err() == nil {
		var err error
		if r.Bounds, err = b.Bounds(ctx); err != nil {
			fail(8, err)
		}
	}
	// Figure 10: a CPU profile of an in-process gateway under 32 clients.
	if o.wants(10) && ctx.Err() == nil {
		var err error
		if r.Profile, err = b.Profile(ctx, o.cpuprofile != ""); err != nil {
			fail(10, err)
		}
	}
	// Figure 9: tools/list with 1,000 declared tools, on its own gateway.
	if o.wants(9) && ctx.Err() == nil {
		var err error
		if r.ToolsList, err = b.ToolsList(ctx); err != nil {
			fail(9, err)
		}
	}
	// Figure 11: tracing off and on, on two gateways of its own.
	if o.wants(11) && ctx.Err() == nil {
		var err error
		if r.Telemetry, err = b.Telemetry(ctx); err != nil {
			fail(11, err)
		}
	}
	// Figure 12: tool search, on its own gateway.
	if o.wants(12) && ctx.Err() == nil {
		var err error
		if r.Search, err = b.Search(ctx); err != nil {
			fail(12, err)
		}
	}
	// Figure 13: replicas on a shared PostgreSQL store.
	if o.wants(13) && ctx.Err() == nil {
		var err error
		if r.Replicas, err = b.Replicas(ctx); err != nil {
			fail(13, err)
		}
	}
	// Figure 14: 1,000 providers and 10,000 sessions.
	if o.wants(14) && ctx.Err() == nil {
		var err error
		if r.Scale, err = b.Scale(ctx); err != nil {
			fail(14, err)
		}
	}
	// Figure 15: the binary's weight.
	if o.wants(15) && ctx.Err() == nil {
		var err error
		if r.Binary, err = b.Binary(ctx, b.bin); err != nil {
			fail(15, err)
		}
	}
	// Figure 16: npm and PyPI servers.
	if o.wants(16) && ctx.Err() == nil {
		var err error
		if r.Packages, err = b.Packages(ctx); err != nil {
			fail(16, err)
		}
	}
	if err := ctx.Err(); err != nil {
		for f := 1; f <= lastFigure; f++ {
			if o.wants(f) && r.Errs[f] == nil && !measured(r, f) {
				r.Errs[f] = fmt.Errorf("aborted: %w", context.Cause(ctx))
			}
		}
	}
}

func measured(r *Report, fig int) bool {
	switch fig {
	case 1:
		return r.Warm != nil
	case 2:
		return r.Cold != nil
	case 3:
		return r.Burst != nil
	case 4:
		return r.List != nil
	case 5:
		return r.Disc != nil
	case 6:
		return r.Load != nil
	case 7:
		return r.Mem.LoadMedian != 0
	case 8:
		return r.Bounds != nil
	case 9:
		return r.ToolsList != nil
	case 10:
		return r.Profile != nil
	case 11:
		return r.Telemetry != nil
	case 12:
		return r.Search != nil
	case 13:
		return r.Replicas != nil
	case 14:
		return r.Scale != nil
	case 15:
		return r.Binary != nil
	case 16:
		return r.Packages != nil
	}
	return false
}

// stopGateway stops g once its figures are done, so the next figure runs
// without it; a gateway that crashed is reported.
func stopGateway(g *Gateway, log *slog.Logger) {
	if err := g.Stop(); err != nil {
		log.Error("gateway stop", "name", g.Name, "error", err)
	}
}

// inProcessGateway runs the math gateway inside this process (so that a
// CPU profile covers it), on its own data dir, and returns its MCP URL and
// the function that stops it.
func (b *Bench) inProcessGateway(ctx context.Context, name string) (*config.Config, string, func(), error) {
	cfg, err := config.Parse([]byte(configYAML([]srvDef{{"math", mathImage}}, "")), nil)
	if err != nil {
		return nil, "", nil, err
	}
	cfg.Logging.Level = "INFO"
	glog := slog.New(slog.NewJSONHandler(devNull{}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// Its own data dir, as every bench gateway: the default would leave a
	// state directory per run under $XDG_STATE_HOME.
	a, err := app.New(cfg, app.Options{Instance: b.Owner(name), Log: glog, DataDir: filepath.Join(b.tmp, name+"-data")})
	if err != nil {
		return nil, "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = a.Close(context.Background())
		return nil, "", nil, err
	}
	sctx, stopServe := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- a.ServeHTTP(sctx, ln, endpoint.Options{}, 5*time.Second) }()
	stop := func() {
		stopServe()
		<-served
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := a.Close(cctx); err != nil {
			b.log.Warn("in-process gateway close", "name", name, "error", err)
		}
	}
	return cfg, "http://" + ln.Addr().String() + "/mcp", stop, nil
}

// figure1InProcess runs figure 1 against a gateway inside this process, so
// that a CPU profile covers the client, the gateway and the direct path.
func (b *Bench) figure1InProcess(ctx context.Context) (*WarmResult, error) {
	cfg, url, stop, err := b.inProcessGateway(ctx, "inproc")
	if err != nil {
		return nil, err
	}
	defer stop()
	res, err := b.Warm(ctx, url, cfg.Servers["math"], nil, nil)
	if err != nil {
		return nil, errors.Join(errors.New("in-process figure 1"), err)
	}
	return res, nil
}

type devNull struct{}

func (devNull) Write(p []byte) (int, error) { return len(p), nil }
