package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Returning memory once the gateway goes idle.
//
// tuneGC lets the heap grow to four times what is live before the
// collector runs, and Go's scavenger returns free pages only down to about
// that goal. That is right under load (fewer collections, cheaper calls)
// but it means a gateway that did some work and then went quiet keeps the
// garbage of that work resident for good: after start-up with 1,000
// configured providers the live heap is about 20 MiB and the RSS was about
// 160 MB, because parsing the config and building the first tool list
// allocate hundreds of MB and nothing collects an idle process.
//
// So a watcher reads the runtime's count of bytes allocated (no hook on
// the request path: allocation is what any work does) and, once the
// gateway has allocated reclaimWorth since the last return and then
// allocates almost nothing for reclaimQuietTicks ticks in a row, collects
// and returns the free pages to the OS (debug.FreeOSMemory), and drops its
// mappings of the binary's read-only pages (releaseBinaryPages). Such a
// return gets one more ten seconds into its quiet period, or at the first
// quiet tick after that when small work came between: what the work left
// behind without allocating since (a continuation expiring, sessions
// ended by their TTL) is garbage only then.
//
// The trade-off: one forced collection per quiet period after real work
// (about 10 ms of CPU with a 20 MiB heap, on an otherwise idle process), and the next burst of work faults its pages back in and starts
// from a small heap goal, so it collects a little sooner at first. It
// never runs under steady load (that is never quiet), and at a trickle of
// calls it runs at most once per reclaimWorth allocated. The warm call
// path is not touched; a second of quiet is asked for so that a pause
// between bursts of calls does not cost the next burst its pages.
const (
	reclaimTick       = 500 * time.Millisecond
	reclaimQuietTicks = 2
	// reclaimQuiet is what an idle gateway may allocate in a tick and
	// still count as quiet: its own workers look at every provider each
	// second (about 60 kB a second with 1,000 providers); a call through
	// it allocates tens of kB.
	reclaimQuiet = 256 << 10
	// reclaimWorth is how much must have been allocated since the last
	// return for another to be worth a forced collection: with GOGC=200
	// even a small gateway's heap grows to 8 MiB before it is first
	// collected (the runtime's 4 MiB minimum, scaled), and collecting a
	// small heap costs a few ms of CPU.
	reclaimWorth = 4 << 20
	// reclaimSettleTicks: a return of work gets one more this many ticks
	// into its quiet period (10 s), or at the first quiet tick after, for
	// what became garbage without any allocation meanwhile (a
	// continuation expiring, sessions closed by their TTL) and for the
	// code the work mapped in again.
	reclaimSettleTicks = 20
)

// idleReclaim decides when to return memory from the cumulative bytes
// allocated, read once a tick.
type idleReclaim struct {
	last, since uint64 // allocated at the last tick and at the last return
	quiet       int    // quiet ticks in a row
	// settle: the last return was one of work, and gets one more at the
	// first quiet tick reclaimSettleTicks into its quiet period; a burst
	// of small work in between delays it, and cannot cancel it.
	settle      bool
	sinceReturn int // ticks since that return
	started     bool
}

// observe takes the bytes allocated so far and reports whether to return
// memory now.
func (r *idleReclaim) observe(allocated uint64) bool {
	if !r.started {
		r.started, r.last = true, allocated
		return false
	}
	tick := allocated - r.last
	r.last = allocated
	r.sinceReturn++
	if tick >= reclaimQuiet {
		r.quiet = 0
		return false
	}
	r.quiet++
	if r.quiet < reclaimQuietTicks {
		return false
	}
	if r.settle && r.sinceReturn >= reclaimSettleTicks-reclaimQuietTicks {
		// What the work left behind without allocating since (an
		// expired continuation, closed sessions) is garbage only now.
		r.settle, r.since = false, allocated
		return true
	}
	if allocated-r.since < reclaimWorth {
		return false
	}
	r.since, r.settle, r.sinceReturn = allocated, true, 0
	return true
}

// reclaimWhenIdle returns memory to the OS each time the gateway goes
// quiet after work, until ctx ends.
func reclaimWhenIdle(ctx context.Context) {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	var r idleReclaim
	tick := time.NewTicker(reclaimTick)
	defer tick.Stop()
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 && r.observe(sample[0].Value.Uint64()) {
			debug.FreeOSMemory()
			releaseBinaryPages()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
