package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/backend"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

// Images the bench runs. Nothing is ever pulled: `make images` builds them.
const (
	mathImage    = "mcp-hangar/math:dev"
	testkitImage = "mcp-hangar/testkit:dev"
)

const (
	callTimeout   = 60 * time.Second
	dockerTimeout = 15 * time.Second
)

// Bench holds what every figure shares: the engine, the gateway binary, the
// run's unique prefix and everything that must be cleaned up.
type Bench struct {
	ctx    context.Context
	docker *client.Client
	runID  string // "bench-<hex>": every owner label starts with it
	bin    string // the hangar binary under test
	tmp    string
	scale  float64 // sample counts are multiplied by it (-quick)
	log    *slog.Logger

	mu       sync.Mutex
	owners   []string
	gateways []*Gateway
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// n scales a sample count, keeping at least lo.
func (b *Bench) n(full, lo int) int {
	return max(int(float64(full)*b.scale), lo)
}

// Owner returns a new owner label value for this run and remembers it, so
// that cleanup and the final check cover it.
func (b *Bench) Owner(suffix string) string {
	o := b.runID + "-" + suffix
	b.mu.Lock()
	b.owners = append(b.owners, o)
	b.mu.Unlock()
	return o
}

// ---------------------------------------------------------------------------
// The gateway under test: bin/hangar as a subprocess.

// Gateway is a running `hangar serve` process.
type Gateway struct {
	Name     string
	Instance string // also the owner label of its containers
	URL      string // http://127.0.0.1:port
	MCPURL   string
	Config   *config.Config
	LogPath  string

	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	stopped bool
}

// StartGateway writes yaml to a file and runs the gateway on it under a new
// instance name, returning once /healthz answers.
func (b *Bench) StartGateway(name, yaml string) (*Gateway, error) {
	return b.startGateway(name, yaml, b.Owner(name), nil)
}

// startGateway is StartGateway under instance, with the extra flags args
// gives for the gateway's URL (nil: none) and extra environment variables.
func (b *Bench) startGateway(name, yaml, instance string, args func(url string) []string, env ...string) (*Gateway, error) {
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		return nil, fmt.Errorf("gateway %s: generated config is invalid: %w", name, err)
	}
	dir := filepath.Join(b.tmp, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	g := &Gateway{
		Name:     name,
		Instance: instance,
		URL:      "http://127.0.0.1:" + strconv.Itoa(port),
		Config:   cfg,
		LogPath:  filepath.Join(dir, "gateway.log"),
		done:     make(chan struct{}),
	}
	g.MCPURL = g.URL + "/mcp"
	logf, err := os.Create(g.LogPath)
	if err != nil {
		return nil, err
	}
	argv := []string{"serve", "--config", cfgPath, "--listen", "127.0.0.1:" + strconv.Itoa(port), "--instance", g.Instance}
	if args != nil {
		argv = append(argv, args(g.URL)...)
	}
	g.cmd = exec.Command(b.bin, argv...)
	g.cmd.Stdout, g.cmd.Stderr = logf, logf
	// Its own process group keeps a terminal's Ctrl-C away from it: the
	// bench stops it in order during cleanup. If the bench dies without
	// cleaning up, the gateway gets SIGTERM and removes its containers.
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	g.cmd.Env = append(append(os.Environ(), "HANGAR_DATA_DIR="+filepath.Join(dir, "data")), env...)
	if err := g.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", b.bin, err)
	}
	go func() {
		g.waitErr = g.cmd.Wait()
		logf.Close()
		close(g.done)
	}()
	b.mu.Lock()
	b.gateways = append(b.gateways, g)
	b.mu.Unlock()

	deadline := time.Now().Add(30 * time.Second)
	hc := &http.Client{Timeout: time.Second}
	for {
		resp, err := hc.Get(g.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				b.log.Info("gateway up", "name", name, "instance", g.Instance, "pid", g.cmd.Process.Pid, "servers", len(cfg.Servers))
				return g, nil
			}
		}
		select {
		case <-g.done:
			return nil, fmt.Errorf("gateway %s exited at start (%v): %s", name, g.waitErr, g.LogTail(20))
		case <-b.ctx.Done():
			return nil, b.ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("gateway %s: /healthz did not answer within 30s: %s", name, g.LogTail(20))
		}
	}
}

// Pid of the gateway process.
func (g *Gateway) Pid() int { return g.cmd.Process.Pid }

// LogTail returns the last n lines the gateway logged.
func (g *Gateway) LogTail(n int) string {
	data, err := os.ReadFile(g.LogPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// CPU is the CPU time (user + system) the gateway process has used.
func (g *Gateway) CPU() (time.Duration, error) {
	return readCPU(g.Pid())
}

// readCPU reads utime + stime of pid from /proc/<pid>/stat, in clock ticks
// of 1/100 s (USER_HZ is 100 on Linux).
func readCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it are
	// counted from the closing parenthesis.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, errors.New("malformed /proc/pid/stat")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc/pid/stat")
	}
	// f[0] is field 3 (state): utime is field 14, stime field 15.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// machineCPU is the busy time of all cores so far (/proc/stat: user,
// nice, system, irq and softirq; not idle, I/O wait or steal), in ticks
// of 1/100 s.
func machineCPU() (time.Duration, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, errors.New("malformed /proc/stat")
	}
	var busy int64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system irq softirq
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, err
		}
		busy += v
	}
	return time.Duration(busy) * 10 * time.Millisecond, nil
}

// selfCPU is the bench process's CPU time (user + system) so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// RSS is the gateway's resident set size in bytes (VmRSS).
func (g *Gateway) RSS() (int64, error) {
	return readRSS(g.Pid())
}

// RSSFile is the file-backed part of the gateway's RSS in bytes
// (RssFile: the pages of the binary and other mapped files).
func (g *Gateway) RSSFile() (int64, error) {
	return readStatus(g.Pid(), "RssFile:")
}

func readRSS(pid int) (int64, error) {
	return readStatus(pid, "VmRSS:")
}

// readStatus reads a "NAME: N kB" line of /proc/<pid>/status, in bytes.
func readStatus(pid int, name string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok {
			f := strings.Fields(rest) // "12345 kB"
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err != nil {
					return 0, err
				}
				return kb << 10, nil
			}
		}
	}
	return 0, fmt.Errorf("no %s line in /proc/%d/status", name, pid)
}

// SettledRSS reads the RSS n times, interval apart, and returns the median.
func (g *Gateway) SettledRSS(n int, interval time.Duration) (int64, error) {
	var v []int64
	for i := range n {
		if i > 0 {
			time.Sleep(interval)
		}
		r, err := g.RSS()
		if err != nil {
			return 0, err
		}
		v = append(v, r)
	}
	return MedianInt(v), nil
}

// Stop sends SIGTERM and waits for the gateway to remove its containers
// and exit; after 40s it is killed.
func (g *Gateway) Stop() error {
	if g.stopped {
		return nil
	}
	g.stopped = true
	select {
	case <-g.done:
		return fmt.Errorf("gateway %s had already exited (%v): %s", g.Name, g.waitErr, g.LogTail(10))
	default:
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.done:
		return nil
	case <-time.After(40 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.done
		return fmt.Errorf("gateway %s ignored SIGTERM for 40s and was killed", g.Name)
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ---------------------------------------------------------------------------
// MCP clients of the gateway.

// Client is one MCP client session with the gateway's /mcp endpoint. Each
// has its own HTTP connection pool, as separate client processes would.
type Client struct {
	*mcpclient.Client
}

// Dial opens and initialises a streamable HTTP session with mcp-go's
// defaults (it negotiates the newest protocol the server speaks).
func Dial(ctx context.Context, url string) (*Client, error) {
	return dial(ctx, url)
}

// DialLegacy opens a session pinned to the last session-based protocol
// (initialize handshake, Mcp-Session-Id), as older clients do.
func DialLegacy(ctx context.Context, url string) (*Client, error) {
	return dial(ctx, url, mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
}

// ownHTTPClient is a connection pool of one client process.
func ownHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        4,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}}
}

func dial(ctx context.Context, url string, opts ...mcpclient.ClientOption) (*Client, error) {
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(ownHTTPClient()))
	if err != nil {
		return nil, err
	}
	c := mcpclient.NewClient(tr, opts...)
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.Start(ictx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("mcp start: %w", err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "hangar-bench", Version: "0"}
	if _, err := c.Initialize(ictx, req); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("mcp initialize: %w", err)
	}
	return &Client{Client: c}, nil
}

// DialN opens n sessions.
func DialN(ctx context.Context, url string, n int) ([]*Client, error) {
	out := make([]*Client, 0, n)
	for range n {
		c, err := Dial(ctx, url)
		if err != nil {
			CloseAll(out)
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// CloseAll closes every client.
func CloseAll(cs []*Client) {
	for _, c := range cs {
		_ = c.Close()
	}
}

// Call invokes a gateway tool.
func (c *Client) Call(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return c.CallTool(ctx, req)
}

// MustCall invokes a tool that must succeed and returns its JSON answer.
func (c *Client) MustCall(ctx context.Context, name string, args map[string]any) (map[string]any, error) {
	res, err := c.Call(ctx, name, args)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if res.IsError {
		return nil, fmt.Errorf("%s: tool error: %s", name, resultText(res))
	}
	m := resultJSON(res)
	if m == nil {
		return nil, fmt.Errorf("%s: answer is not a JSON object: %.200s", name, resultText(res))
	}
	return m, nil
}

// ToolNames lists the gateway's tools.
func (c *Client) ToolNames(ctx context.Context) (map[string]mcp.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]mcp.Tool, len(res.Tools))
	for _, t := range res.Tools {
		out[t.Name] = t
	}
	return out, nil
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func resultJSON(res *mcp.CallToolResult) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(resultText(res)), &m); err == nil {
		return m
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil && json.Unmarshal(b, &m) == nil {
			return m
		}
	}
	return nil
}

// oneCall is hangar_call's arguments for a single call.
func oneCall(server, tool string, args map[string]any) map[string]any {
	return map[string]any{"calls": []any{map[string]any{"mcp_server": server, "tool": tool, "arguments": args}}}
}

// checkBatch verifies a hangar_call answer whose single call succeeded.
func checkBatch(res *mcp.CallToolResult, err error) error {
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("hangar_call: tool error: %.300s", resultText(res))
	}
	m := resultJSON(res)
	if m == nil {
		return fmt.Errorf("hangar_call: answer is not JSON: %.300s", resultText(res))
	}
	if ok, _ := m["success"].(bool); !ok {
		return fmt.Errorf("hangar_call failed: %.300s", resultText(res))
	}
	return nil
}

// ---------------------------------------------------------------------------
// Direct MCP clients: the baseline path, client → stdio → container.

// Direct is a provider container the bench runs itself with the same spec
// the gateway would use, and an MCP session over its attach streams.
type Direct struct {
	C    *dockerrt.Container
	Conn *mcpconn.Conn
}

// StartDirect runs server id of cfg (a docker stdio server) the way the
// gateway would, but under the bench's own owner label.
func (b *Bench) StartDirect(ctx context.Context, owner string, srv *config.Server) (*Direct, error) {
	return startDirect(ctx, b.docker, owner, backend.SpecFor(srv, ""), srv.Protocol, b.log)
}

// startDirect runs spec under owner and opens an MCP session on protocol
// over its attach streams.
func startDirect(ctx context.Context, docker *client.Client, owner string, spec dockerrt.Spec, protocol string, log *slog.Logger) (*Direct, error) {
	rt := dockerrt.New(docker, owner, log)
	c, err := rt.Run(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("direct container: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := mcpconn.Connect(cctx, mcpconn.Stdio(c.Stdout, c.Stdin), protocol)
	if err != nil {
		_ = c.Stop(context.Background())
		return nil, fmt.Errorf("direct handshake: %w", err)
	}
	return &Direct{C: c, Conn: conn}, nil
}

// Close ends the session and removes the container.
func (d *Direct) Close() {
	_ = d.Conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_ = d.C.Stop(ctx)
}

// ---------------------------------------------------------------------------
// Docker housekeeping.

func ownerFilter(owner string) client.Filters {
	return make(client.Filters).Add("label", dockerrt.LabelOwner+"="+owner)
}

// ContainersOf lists every container (running or not) labelled with owner.
func (b *Bench) ContainersOf(ctx context.Context, owner string, extra ...string) ([]string, error) {
	f := ownerFilter(owner)
	for _, l := range extra {
		f.Add("label", l)
	}
	lctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	res, err := b.docker.ContainerList(lctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(res.Items))
	for i, c := range res.Items {
		ids[i] = c.ID
	}
	return ids, nil
}

// WaitGone waits until no container of owner (and the extra labels) is
// left, up to timeout.
func (b *Bench) WaitGone(ctx context.Context, timeout time.Duration, owner string, extra ...string) error {
	deadline := time.Now().Add(timeout)
	for {
		ids, err := b.ContainersOf(ctx, owner, extra...)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d container(s) of %s still present after %s", len(ids), owner, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// RemoveContainer force-removes id, ignoring "not found" and "in progress".
func (b *Bench) RemoveContainer(ctx context.Context, id string) error {
	rctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	_, err := b.docker.ContainerRemove(rctx, id, client.ContainerRemoveOptions{Force: true})
	if err != nil && !cerrdefs.IsNotFound(err) && !strings.Contains(err.Error(), "in progress") {
		return err
	}
	return nil
}

// Labels on the containers the bench starts that nothing else would remove
// if the bench were killed (the discovery figure's HTTP containers; stdio
// containers exit when their attach goes away, and gateways get SIGTERM
// when the bench dies). They are outside mcp.hangar.*, which discovery
// reads, and io.mcp-hangar.*, which a container spec cannot set.
const (
	benchLabelPid  = "mcp-hangar-bench.pid"
	benchLabelHost = "mcp-hangar-bench.host"
)

func hostname() string {
	h, _ := os.Hostname()
	return h
}

// SweepOrphans removes containers left by a bench process of this host that
// no longer runs (one that was killed before it could clean up).
func (b *Bench) SweepOrphans(ctx context.Context) {
	lctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	res, err := b.docker.ContainerList(lctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", benchLabelPid, benchLabelHost+"="+hostname())})
	if err != nil {
		b.log.Warn("sweep orphans", "error", err)
		return
	}
	for _, c := range res.Items {
		pid, err := strconv.Atoi(c.Labels[benchLabelPid])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue // that bench still runs
		}
		b.log.Warn("removing a container left by a killed bench run", "container", c.ID[:12], "owner", c.Labels[dockerrt.LabelOwner])
		_ = b.RemoveContainer(ctx, c.ID)
	}
}

// Cleanup stops every gateway (which removes its own containers), removes
// whatever is left under any owner label of this run, and checks that
// nothing remains. It works on a fresh context: it also runs after Ctrl-C.
func (b *Bench) Cleanup() error {
	b.mu.Lock()
	gws := append([]*Gateway(nil), b.gateways...)
	owners := append([]string(nil), b.owners...)
	b.mu.Unlock()

	var errs []error
	var wg sync.WaitGroup
	var emu sync.Mutex
	for _, g := range gws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.Stop(); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		}()
	}
	wg.Wait()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, o := range owners {
		ids, err := b.ContainersOf(ctx, o)
		if err != nil {
			errs = append(errs, fmt.Errorf("list containers of %s: %w", o, err))
			continue
		}
		if len(ids) > 0 {
			b.log.Warn("removing leftover containers", "owner", o, "count", len(ids))
		}
		for _, id := range ids {
			if err := b.RemoveContainer(ctx, id); err != nil {
				errs = append(errs, fmt.Errorf("remove %.12s: %w", id, err))
			}
		}
	}
	// The check the issue asks for: docker ps -a --filter label=owner is
	// empty for every owner this run used.
	for _, o := range owners {
		if err := b.WaitGone(ctx, 20*time.Second, o); err != nil {
			errs = append(errs, fmt.Errorf("cleanup check: %w", err))
		}
	}
	if len(errs) == 0 {
		b.log.Info("cleanup verified: no container left", "owners", len(owners))
	}
	return errors.Join(errs...)
}
