package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcp-hangar/hangar/internal/backend"
	"github.com/mcp-hangar/hangar/internal/config"
)

// Figure 1: a warm tool call through the gateway's /mcp endpoint
// (client → HTTP → gateway → stdio → container) against an MCP client
// attached straight to a container of the same image and spec
// (client → stdio → container).

// PathResult is one path (gateway or direct) at one concurrency.
type PathResult struct {
	Lat    Summary
	Calls  int
	Wall   time.Duration // sum of the wall time of its rounds
	PerSec float64
	// CPUPerCall is the gateway process's CPU time (user + system) per
	// call, when the path goes through a gateway subprocess.
	CPUPerCall time.Duration
	// MachineCPUPerCall is the whole machine's busy CPU time per call
	// (every process, all cores: /proc/stat), and ClientCPUPerCall the
	// bench process's own (its clients).
	MachineCPUPerCall, ClientCPUPerCall time.Duration
	// Ops is what the gateway itself measured of the path's calls over
	// its rounds (zero when the path has no gateway or it was not read).
	Ops opTimes
}

// WarmResult is figure 1.
type WarmResult struct {
	Gateway1, Direct1   PathResult // one client, sequential calls
	Gateway32, Direct32 PathResult // 32 clients at once
	// FrontDoor32 is 32 clients calling add by its callable name.
	FrontDoor32 PathResult
	// Where the time of a gateway call goes, one client: a bare HTTP
	// round trip on loopback, an MCP round trip to the gateway for a
	// trivial tool, and hangar_call from a client on the session-based
	// (legacy) protocol.
	RawHTTP1, Health1, Legacy1 PathResult
	// FrontDoor1 calls the provider's tool by its callable name
	// (<server>__add), default protocol: the front door's path.
	FrontDoor1 PathResult
	// Floor1 is a bare mcp-go streamable HTTP server (its own process)
	// answering a trivial tool: the protocol's floor, with its CPU per call.
	Floor1 PathResult
	// Floor32 is the same floor server under the concurrent clients: the
	// CPU a bare MCP server spends per trivial call at that load, below
	// which no gateway (a server and a client in one) can get.
	Floor32 PathResult
	// Proxy1 and Proxy32 are the bare proxy (floor.go): the floor server
	// forwarding add over stdio to a container of the same provider with
	// the gateway's client code and nothing else, the least a gateway can
	// take; its CPU is that server's.
	Proxy1, Proxy32  PathResult
	Clients          int
	Protocol         string // negotiated between the bench client and the gateway
	LegacyProtocol   string
	ProviderProtocol string // negotiated on the direct stdio session
	// OpsErr says why the gateway's own account (PathResult.Ops) is
	// missing.
	OpsErr string
}

// callFn makes one call; i numbers the calls of one worker.
type callFn func(ctx context.Context, i int) error

// measure runs workers concurrently, each making n calls, and returns
// every call's latency and the wall time of the whole round.
func measure(ctx context.Context, workers []callFn, n int) ([]time.Duration, time.Duration, error) {
	lat := make([][]time.Duration, len(workers))
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w, call := range workers {
		lat[w] = make([]time.Duration, 0, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range n {
				if ctx.Err() != nil {
					errs[w] = ctx.Err()
					return
				}
				t := time.Now()
				err := call(ctx, i)
				d := time.Since(t)
				if err != nil {
					errs[w] = fmt.Errorf("worker %d call %d: %w", w, i, err)
					return
				}
				lat[w] = append(lat[w], d)
			}
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	wall := time.Since(began)
	var all []time.Duration
	for w := range workers {
		if errs[w] != nil {
			return nil, 0, errs[w]
		}
		all = append(all, lat[w]...)
	}
	return all, wall, nil
}

// path is one way of making a call, measured against the others.
type path struct {
	workers []callFn
	// cpu reads the CPU time of the gateway the path goes through (nil:
	// none to read).
	cpu func() (time.Duration, error)
	// ops reads that gateway's own totals of tools/call (nil: none).
	ops func(context.Context) (opTimes, error)
}

// interleave measures paths in rounds whose order rotates, so that load
// from elsewhere on the machine hits all of them alike.
func interleave(ctx context.Context, rounds, perRound int, paths []path) ([]PathResult, error) {
	lat := make([][]time.Duration, len(paths))
	wall := make([]time.Duration, len(paths))
	cpu := make([]time.Duration, len(paths))
	machine := make([]time.Duration, len(paths))
	self := make([]time.Duration, len(paths))
	ops := make([]opTimes, len(paths))
	machineOK := true
	for r := range rounds {
		for k := range paths {
			k = (k + r) % len(paths)
			p := paths[k]
			var o0 opTimes
			if p.ops != nil {
				var err error
				if o0, err = p.ops(ctx); err != nil {
					return nil, err
				}
			}
			var c0 time.Duration
			if p.cpu != nil {
				c0, _ = p.cpu()
			}
			m0, err := machineCPU()
			machineOK = machineOK && err == nil
			s0 := selfCPU()
			l, w, err := measure(ctx, p.workers, perRound)
			if err != nil {
				return nil, err
			}
			m1, err := machineCPU()
			machineOK = machineOK && err == nil
			self[k] += selfCPU() - s0
			machine[k] += m1 - m0
			if p.cpu != nil {
				if c1, err := p.cpu(); err == nil {
					cpu[k] += c1 - c0
				}
			}
			if p.ops != nil {
				o1, err := p.ops(ctx)
				if err != nil {
					return nil, err
				}
				ops[k] = ops[k].add(o1.sub(o0))
			}
			lat[k] = append(lat[k], l...)
			wall[k] += w
		}
	}
	out := make([]PathResult, len(paths))
	for k := range paths {
		out[k] = pathResult(lat[k], wall[k])
		if out[k].Calls == 0 {
			continue
		}
		n := time.Duration(out[k].Calls)
		if paths[k].cpu != nil {
			out[k].CPUPerCall = cpu[k] / n
		}
		out[k].Ops = ops[k]
		if machineOK {
			out[k].MachineCPUPerCall, out[k].ClientCPUPerCall = machine[k]/n, self[k]/n
		}
	}
	return out, nil
}

func pathResult(lat []time.Duration, wall time.Duration) PathResult {
	r := PathResult{Lat: Summarize(lat), Calls: len(lat), Wall: wall}
	if wall > 0 {
		r.PerSec = float64(len(lat)) / wall.Seconds()
	}
	return r
}

func gatewayAdd(c *Client, server string) callFn {
	return func(ctx context.Context, i int) error {
		return checkBatch(c.Call(ctx, "hangar_call", oneCall(server, "add", map[string]any{"a": i, "b": 1})))
	}
}

// frontDoorAdd calls add by its callable name on the front door.
func frontDoorAdd(c *Client, name string) callFn {
	return func(ctx context.Context, i int) error {
		r, err := c.Call(ctx, name, map[string]any{"a": i, "b": 1})
		if err != nil {
			return err
		}
		if r.IsError {
			return fmt.Errorf("%s: %s", name, resultText(r))
		}
		return nil
	}
}

func directAdd(d *Direct) callFn {
	return func(ctx context.Context, i int) error {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		res, err := d.Conn.CallTool(cctx, "add", map[string]any{"a": i, "b": 1}, nil)
		if err != nil {
			return err
		}
		if res.IsError {
			return fmt.Errorf("add: tool error: %s", resultText(res))
		}
		return nil
	}
}

// rawHTTP serves a fixed JSON answer to any POST: the least an HTTP hop
// costs on this machine.
func rawHTTP() (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	answer := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"batch_id\":\"batch-0123456789abcdef\",\"success\":true,\"total\":1,\"succeeded\":1,\"failed\":0,\"elapsed_ms\":0.2,\"results\":[{\"index\":0,\"call_id\":\"call-0123456789ab\",\"success\":true,\"result\":2,\"error\":null,\"error_type\":null,\"elapsed_ms\":0.2}]}"}]}}`)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	})}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/mcp", func() { _ = srv.Close() }, nil
}

func rawHTTPCall(url string) callFn {
	hc := ownHTTPClient()
	return func(ctx context.Context, i int) error {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hangar_call","arguments":{"calls":[{"mcp_server":"math","tool":"add","arguments":{"a":%d,"b":1}}]}}}`, i, i)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return err
	}
}

func gatewayTool(c *Client, name string) callFn {
	return func(ctx context.Context, _ int) error {
		r, err := c.Call(ctx, name, nil)
		if err != nil {
			return err
		}
		if r.IsError {
			return fmt.Errorf("%s: %s", name, resultText(r))
		}
		return nil
	}
}

// Warm measures figure 1 against the gateway at mcpURL, whose server srv
// (a math provider) is warmed first; the direct container is built from
// the same srv. cpu, if not nil, reads the gateway process's CPU time.
//
// beforeLoad, if not nil, runs right before the concurrent clients start
// (figure 7 takes the gateway's peak RSS under them from there).
func (b *Bench) Warm(ctx context.Context, mcpURL string, srv *config.Server, cpu func() (time.Duration, error), beforeLoad func() error) (*WarmResult, error) {
	const clients = 32
	seqCalls := b.n(2000, 200)
	perClient := b.n(200, 40)
	warmup := b.n(200, 50)

	clis, err := DialN(ctx, mcpURL, clients)
	if err != nil {
		return nil, err
	}
	defer CloseAll(clis)
	legacy, err := DialLegacy(ctx, mcpURL)
	if err != nil {
		return nil, err
	}
	defer legacy.Close()
	res := &WarmResult{Clients: clients, Protocol: clis[0].ProtocolVersion(), LegacyProtocol: legacy.ProtocolVersion()}

	if _, err := clis[0].MustCall(ctx, "hangar_warm", map[string]any{"mcp_servers": srv.ID}); err != nil {
		return nil, err
	}
	d, err := b.StartDirect(ctx, b.Owner("direct"), srv)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	res.ProviderProtocol = d.Conn.ProtocolVersion()
	rawURL, stopRaw, err := rawHTTP()
	if err != nil {
		return nil, err
	}
	defer stopRaw()
	floor, err := StartFloor(&floorProxy{Owner: b.Owner("proxy"), Spec: backend.SpecFor(srv, ""), Protocol: srv.Protocol})
	if err != nil {
		return nil, err
	}
	defer floor.Stop()
	floorClient, err := Dial(ctx, floor.URL)
	if err != nil {
		return nil, fmt.Errorf("floor server: %w", err)
	}
	defer floorClient.Close()
	floorClis, err := DialN(ctx, floor.URL, clients)
	if err != nil {
		return nil, fmt.Errorf("floor server: %w", err)
	}
	defer CloseAll(floorClis)

	// The front door lists the warm provider's tools within its refresh
	// tick; wait until its callable answers.
	frontDoor := frontDoorAdd(clis[0], srv.ID+"__add")
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := frontDoor(ctx, 0)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("front door: %s__add never answered: %w", srv.ID, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	gw := make([]callFn, clients)
	dw := make([]callFn, clients)
	fd := make([]callFn, clients)
	fl := make([]callFn, clients)
	px := make([]callFn, clients)
	for i, c := range clis {
		gw[i] = gatewayAdd(c, srv.ID)
		dw[i] = directAdd(d)
		fd[i] = frontDoorAdd(c, srv.ID+"__add")
		fl[i] = floorCall(floorClis[i])
		px[i] = proxyAdd(floorClis[i])
	}
	// The gateway's own account of a lone call's time, from its /metrics.
	ops, err := gatewayOps(mcpURL)
	if err == nil {
		_, err = ops(ctx)
	}
	if err != nil {
		res.OpsErr, ops = err.Error(), nil
	}
	one := []path{
		{workers: gw[:1], cpu: cpu, ops: ops},
		{workers: dw[:1]},
		{workers: []callFn{rawHTTPCall(rawURL)}},
		{workers: []callFn{gatewayTool(clis[0], "hangar_health")}, cpu: cpu, ops: ops},
		{workers: []callFn{gatewayAdd(legacy, srv.ID)}, cpu: cpu, ops: ops},
		{workers: []callFn{floorCall(floorClient)}, cpu: floor.CPU},
		{workers: []callFn{frontDoor}, cpu: cpu, ops: ops},
		{workers: px[:1], cpu: floor.CPU},
	}
	many := []path{{workers: gw, cpu: cpu}, {workers: dw}, {workers: fd, cpu: cpu}, {workers: fl, cpu: floor.CPU}, {workers: px, cpu: floor.CPU}}

	// Warm-up: connections, the gateway's and the provider's first
	// allocations, the CPU caches of all four processes.
	b.log.Info("figure 1: warm-up", "calls", warmup)
	if _, err := interleave(ctx, 1, warmup, one); err != nil {
		return nil, err
	}
	if _, err := interleave(ctx, 1, max(warmup/clients, 5), many); err != nil {
		return nil, err
	}

	const rounds = 10
	b.log.Info("figure 1: one client", "calls per path", seqCalls, "paths", len(one))
	r1, err := interleave(ctx, rounds, seqCalls/rounds, one)
	if err != nil {
		return nil, err
	}
	res.Gateway1, res.Direct1, res.RawHTTP1, res.Health1, res.Legacy1, res.Floor1, res.FrontDoor1, res.Proxy1 = r1[0], r1[1], r1[2], r1[3], r1[4], r1[5], r1[6], r1[7]
	b.log.Info("figure 1: concurrent clients", "clients", clients, "calls per client", perClient)
	if beforeLoad != nil {
		if err := beforeLoad(); err != nil {
			return nil, err
		}
	}
	r32, err := interleave(ctx, 4, perClient/4, many)
	if err != nil {
		return nil, err
	}
	res.Gateway32, res.Direct32, res.FrontDoor32, res.Floor32, res.Proxy32 = r32[0], r32[1], r32[2], r32[3], r32[4]
	return res, nil
}
