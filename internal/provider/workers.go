package provider

import (
	"context"
	"runtime/debug"
	"time"

	"golang.org/x/sync/errgroup"
)

// workerParallelism bounds health checks and idle stops run at once.
const workerParallelism = 8

// RunWorkers runs the health and idle-collection workers until ctx ends.
// Each tick looks at every provider: health checks that are due run in
// parallel (bounded), then providers idle past their TTL are stopped.
func (m *Manager) RunWorkers(ctx context.Context, tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.sweep(ctx)
		}
	}
}

// sweep is one pass of the workers; a panic is logged, never fatal.
func (m *Manager) sweep(ctx context.Context) {
	defer func() {
		if r := recover(); r != nil {
			m.opts.Log.Error("worker panic", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	var g errgroup.Group
	g.SetLimit(workerParallelism)
	for _, p := range m.List() {
		g.Go(func() error {
			p.CheckHealth(ctx)
			p.StopIfIdle(ctx)
			return nil
		})
	}
	_ = g.Wait()
}
