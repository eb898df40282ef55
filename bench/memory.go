package main

import (
	"context"
	"sync"
	"time"
)

// Figure 7: the gateway's resident memory (VmRSS of the bin/hangar process)
// idle with one provider, with 100 configured providers, and with 10 warm
// providers under load from 32 clients.

// MemoryResult is figure 7.
type MemoryResult struct {
	Idle1 int64 // one provider configured, cold, no client
	// Peak32 is the peak RSS (VmHWM) of that gateway under figure 1's 32
	// clients (reset when they start).
	Peak32  int64
	Idle100 int64 // 100 providers configured, cold, no load
	// Idle100File is the file-backed part of Idle100 (RssFile).
	Idle100File int64
	Warm10Idle  int64 // 100 configured, 10 warm, before the load
	LoadMedian  int64 // during the load
	LoadMax     int64
	LoadCalls   PathResult // the load itself
	LoadFor     time.Duration
}

// settleRSS lets a freshly started gateway finish its start-up work, then
// reads its RSS a few times.
func settleRSS(g *Gateway) (int64, error) {
	time.Sleep(2 * time.Second)
	return g.SettledRSS(5, 200*time.Millisecond)
}

// Load runs clients calling add round-robin over the warm providers for
// about d, sampling the gateway's RSS every 50 ms.
func (b *Bench) Load(ctx context.Context, g *Gateway, clis []*Client, warm []string, d time.Duration) (*MemoryResult, error) {
	res := &MemoryResult{LoadFor: d}
	stop := make(chan struct{})
	var samples []int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if r, err := g.RSS(); err == nil {
					samples = append(samples, r)
				}
			}
		}
	}()

	// Calls per client so the load lasts about d: estimate from a short
	// probe round.
	workers := make([]callFn, len(clis))
	for i, c := range clis {
		workers[i] = gatewayAdd(c, warm[i%len(warm)])
	}
	probe, wall, err := measure(ctx, workers, 5)
	if err != nil {
		close(stop)
		wg.Wait()
		return nil, err
	}
	perSec := float64(len(probe)) / wall.Seconds()
	n := max(int(perSec*d.Seconds())/len(clis), 20)
	lat, wall, err := measure(ctx, workers, n)
	close(stop)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	res.LoadCalls = pathResult(lat, wall)
	res.LoadMedian = MedianInt(samples)
	for _, s := range samples {
		res.LoadMax = max(res.LoadMax, s)
	}
	return res, nil
}
