package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/backend"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

// Figure 2: cold start COLD → READY through the gateway (hangar_start)
// against the floor: the same Docker API calls and MCP handshake done
// directly, with nothing else.

// Floor phases, in order.
var floorPhases = []string{"image inspect", "create", "attach", "start", "initialize", "tools/list"}

// ColdResult is figure 2.
type ColdResult struct {
	Gateway Summary // hangar_start, client-observed
	// FloorFull is inspect + create + attach + start + initialize +
	// tools/list: everything hangar's start does, so the comparable floor.
	FloorFull Summary
	// FloorInit stops at initialize (no tools/list), FloorBare also leaves
	// out the image inspect: the floor as the issue words it.
	FloorInit, FloorBare Summary
	Phases               map[string]Summary
}

// stdinCloser closes only the write half of an attach, so the server sees
// EOF.
type stdinCloser struct{ h *client.HijackedResponse }

func (s stdinCloser) Write(p []byte) (int, error) { return s.h.Conn.Write(p) }
func (s stdinCloser) Close() error                { return s.h.CloseWrite() }

// floorStart starts one container the shortest way there is and returns the
// duration of each phase, and a function that removes the container.
func (b *Bench) floorStart(ctx context.Context, owner string, srv *config.Server) ([]time.Duration, func() error, error) {
	spec := backend.SpecFor(srv, "")
	spec.Owner = owner
	cfg, host, netCfg, err := dockerrt.Build(spec)
	if err != nil {
		return nil, nil, err
	}
	var id string
	var att *client.HijackedResponse
	var conn *mcpconn.Conn
	cleanup := func() error {
		if conn != nil {
			_ = conn.Close()
		}
		if att != nil {
			att.Close()
		}
		if id == "" {
			return nil
		}
		if err := b.RemoveContainer(context.Background(), id); err != nil {
			return err
		}
		return b.WaitGone(context.Background(), 20*time.Second, owner)
	}
	fail := func(err error) ([]time.Duration, func() error, error) {
		_ = cleanup()
		return nil, nil, err
	}

	phases := make([]time.Duration, 0, len(floorPhases))
	t := time.Now()
	lap := func() {
		now := time.Now()
		phases = append(phases, now.Sub(t))
		t = now
	}
	if _, err := b.docker.ImageInspect(ctx, spec.Image); err != nil {
		return fail(err)
	}
	lap()
	created, err := b.docker.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host, NetworkingConfig: netCfg})
	if err != nil {
		return fail(err)
	}
	id = created.ID
	lap()
	a, err := b.docker.ContainerAttach(ctx, id, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return fail(err)
	}
	att = &a.HijackedResponse
	lap()
	if _, err := b.docker.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return fail(err)
	}
	lap()
	pr, pw := io.Pipe()
	go func() {
		// However the stream ends (the bench closes it after each
		// sample), the session just sees EOF: mcp-go logs anything else.
		_, _ = stdcopy.StdCopy(pw, io.Discard, a.Reader)
		pw.Close()
	}()
	conn, err = mcpconn.Connect(ctx, mcpconn.Stdio(pr, stdinCloser{att}), srv.Protocol)
	if err != nil {
		return fail(err)
	}
	lap()
	if _, err := conn.ListTools(ctx); err != nil {
		return fail(err)
	}
	lap()
	return phases, cleanup, nil
}

func sum(ds []time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s
}

// gatewayColdStart starts server id through hangar_start and returns the
// client-observed time, then stops it again and waits for its container
// to be gone.
func (b *Bench) gatewayColdStart(ctx context.Context, g *Gateway, c *Client, id string) (time.Duration, error) {
	t := time.Now()
	m, err := c.MustCall(ctx, "hangar_start", map[string]any{"mcp_server": id})
	d := time.Since(t)
	if err != nil {
		return 0, err
	}
	if st, _ := m["state"].(string); st != "ready" {
		return 0, fmt.Errorf("hangar_start %s: state %q, want ready", id, st)
	}
	if _, err := c.MustCall(ctx, "hangar_stop", map[string]any{"mcp_server": id}); err != nil {
		return 0, err
	}
	return d, b.WaitGone(ctx, 20*time.Second, g.Instance, dockerrt.LabelServer+"="+id)
}

// Cold measures figure 2 on gateway g, whose server id is a cold math
// provider. Gateway and floor samples alternate.
func (b *Bench) Cold(ctx context.Context, g *Gateway, c *Client, id string) (*ColdResult, error) {
	srv := g.Config.Servers[id]
	owner := b.Owner("floor")
	samples := b.n(20, 5)

	one := func(gateway bool) (time.Duration, []time.Duration, error) {
		if gateway {
			d, err := b.gatewayColdStart(ctx, g, c, id)
			return d, nil, err
		}
		ph, cleanup, err := b.floorStart(ctx, owner, srv)
		if err != nil {
			return 0, nil, fmt.Errorf("floor: %w", err)
		}
		return 0, ph, cleanup()
	}
	// One untimed start of each warms the engine's caches for the image.
	for _, gw := range []bool{true, false} {
		if _, _, err := one(gw); err != nil {
			return nil, err
		}
	}

	var gws, full, init, bare []time.Duration
	phases := make([][]time.Duration, len(floorPhases))
	for i := range samples {
		b.log.Info("figure 2: cold start", "sample", i+1, "of", samples)
		order := []bool{true, false}
		if i%2 == 1 {
			order = []bool{false, true}
		}
		for _, gw := range order {
			d, ph, err := one(gw)
			if err != nil {
				return nil, err
			}
			if gw {
				gws = append(gws, d)
				continue
			}
			full = append(full, sum(ph))
			init = append(init, sum(ph[:5]))
			bare = append(bare, sum(ph[1:5]))
			for k := range ph {
				phases[k] = append(phases[k], ph[k])
			}
		}
	}
	res := &ColdResult{
		Gateway: Summarize(gws), FloorFull: Summarize(full), FloorInit: Summarize(init), FloorBare: Summarize(bare),
		Phases: map[string]Summary{},
	}
	for k, name := range floorPhases {
		res.Phases[name] = Summarize(phases[k])
	}
	return res, nil
}

// ---------------------------------------------------------------------------
// Figure 3: 32 simultaneous first calls to a cold provider.

// BurstResult is figure 3.
type BurstResult struct {
	Clients     int
	Created     []int // containers created per trial (docker events)
	AllAnswered Summary
	PerCall     Summary
}

// Burst fires len(clis) simultaneous hangar_call's at each cold provider in
// ids, one trial per provider, counting the containers created.
func (b *Bench) Burst(ctx context.Context, g *Gateway, clis []*Client, ids []string) (*BurstResult, error) {
	res := &BurstResult{Clients: len(clis)}
	var all, per []time.Duration
	for trial, id := range ids {
		b.log.Info("figure 3: burst", "trial", trial+1, "of", len(ids), "clients", len(clis))
		ectx, stopEvents := context.WithCancel(ctx)
		ev := b.docker.Events(ectx, client.EventsListOptions{Filters: make(client.Filters).
			Add("type", "container").
			Add("event", "create").
			Add("label", dockerrt.LabelOwner+"="+g.Instance).
			Add("label", dockerrt.LabelServer+"="+id)})
		var created atomic.Int32
		evDone := make(chan error, 1)
		go func() {
			for {
				select {
				case <-ev.Messages:
					created.Add(1)
				case err := <-ev.Err:
					if ectx.Err() != nil {
						err = nil // the bench ended the stream
					}
					evDone <- err
					return
				case <-ectx.Done():
					evDone <- nil
					return
				}
			}
		}()
		// Let the event subscription reach the engine before the burst.
		time.Sleep(250 * time.Millisecond)

		lat := make([]time.Duration, len(clis))
		errs := make([]error, len(clis))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, c := range clis {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				t := time.Now()
				errs[i] = checkBatch(c.Call(ctx, "hangar_call", oneCall(id, "add", map[string]any{"a": i, "b": 1})))
				lat[i] = time.Since(t)
			}()
		}
		began := time.Now()
		close(start)
		wg.Wait()
		allDone := time.Since(began)
		// Any second container would have been created well before now;
		// leave the engine a moment to report it.
		time.Sleep(500 * time.Millisecond)
		stopEvents()
		if err := <-evDone; err != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("docker events: %w", err)
		}
		for i, err := range errs {
			if err != nil {
				return nil, fmt.Errorf("burst on %s, client %d: %w", id, i, err)
			}
		}
		res.Created = append(res.Created, int(created.Load()))
		all = append(all, allDone)
		per = append(per, lat...)
		if _, err := clis[0].MustCall(ctx, "hangar_stop", map[string]any{"mcp_server": id}); err != nil {
			return nil, err
		}
		if err := b.WaitGone(ctx, 20*time.Second, g.Instance, dockerrt.LabelServer+"="+id); err != nil {
			return nil, err
		}
	}
	res.AllAnswered = Summarize(all)
	res.PerCall = Summarize(per)
	return res, nil
}
