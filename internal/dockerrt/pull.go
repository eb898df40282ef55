package dockerrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// PullAPI is the part of the engine client pulls use.
type PullAPI interface {
	ImagePull(ctx context.Context, ref string, opts client.ImagePullOptions) (client.ImagePullResponse, error)
}

var _ PullAPI = (*client.Client)(nil)

// progressEvery bounds how often a pull logs and reports progress.
const progressEvery = time.Second

// Progress of one pull: bytes downloaded of the layers whose size the
// registry has announced so far.
type Progress struct {
	Ref     string
	Current int64
	Total   int64
	Done    bool
}

// Percent is 0..100, or -1 while no layer size is known.
func (p Progress) Percent() float64 {
	if p.Total <= 0 {
		return -1
	}
	return min(100, float64(p.Current)*100/float64(p.Total))
}

// Puller pulls images through the engine, once per reference however many
// callers want it at the same time. A pull ends early only when every
// caller waiting for it has given up.
type Puller struct {
	api PullAPI
	log *slog.Logger
	// Pulled, when set before the first pull, is told of every pull's end
	// (metrics).
	Pulled func(err error)

	mu      sync.Mutex
	flights map[string]*flight
	wg      sync.WaitGroup
}

// NewPuller returns a Puller using api.
func NewPuller(api PullAPI, log *slog.Logger) *Puller {
	if log == nil {
		log = slog.Default()
	}
	return &Puller{api: api, log: log, flights: map[string]*flight{}}
}

// flight is one pull in progress and the callers waiting for it.
type flight struct {
	ref     string
	done    chan struct{}
	err     error
	cancel  context.CancelFunc
	waiters int
	watch   map[int]func(Progress)
	nextW   int
	last    Progress
}

// PullRequest is what to pull and how.
type PullRequest struct {
	Ref  string // normalised reference, e.g. 127.0.0.1:5000/team/math:1
	Auth string // X-Registry-Auth value, "" for anonymous
	// OnProgress, if set, is called at most once a second while the pull
	// runs, and once at the end; it must not block.
	OnProgress func(Progress)
}

// Pull pulls req.Ref and returns when the image is there, the pull failed,
// or ctx ended. It joins a pull of the same reference already running.
func (p *Puller) Pull(ctx context.Context, req PullRequest) (err error) {
	ctx, end := telemetry.Step(ctx, telemetry.StepImagePull, telemetry.AttrImage.String(req.Ref))
	defer func() { end(err) }()
	p.mu.Lock()
	f, joined := p.flights[req.Ref]
	if !joined {
		fctx, cancel := context.WithCancel(context.Background())
		f = &flight{ref: req.Ref, done: make(chan struct{}), cancel: cancel, watch: map[int]func(Progress){}}
		p.flights[req.Ref] = f
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.run(fctx, f, req.Auth)
		}()
	}
	f.waiters++
	w := f.nextW
	f.nextW++
	var first Progress
	var announced sync.Mutex // held until first is out: nothing overtakes it
	if req.OnProgress != nil {
		announced.Lock()
		f.watch[w] = func(pr Progress) {
			announced.Lock()
			defer announced.Unlock()
			req.OnProgress(pr)
		}
		first = f.last
		first.Ref = f.ref
	}
	p.mu.Unlock()
	if req.OnProgress != nil {
		// At once, so a caller (and hangar_status) knows a pull is under
		// way before the registry sends its first byte.
		req.OnProgress(first)
		announced.Unlock()
	}

	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		p.mu.Lock()
		delete(f.watch, w)
		f.waiters--
		if f.waiters == 0 {
			// Nobody wants it any more: stop the download, and let the
			// next caller start afresh instead of joining a dying pull.
			f.cancel()
			if p.flights[req.Ref] == f {
				delete(p.flights, req.Ref)
			}
		}
		p.mu.Unlock()
		return fmt.Errorf("pull %s: %w", req.Ref, ctx.Err())
	}
}

// Pulling reports the progress of a pull of ref in progress.
func (p *Puller) Pulling(ref string) (Progress, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.flights[ref]
	if !ok {
		return Progress{}, false
	}
	return f.last, true
}

// Wait returns once every pull goroutine has ended (after their callers
// gave up or they finished).
func (p *Puller) Wait() { p.wg.Wait() }

// Close cancels every pull in progress and waits for their goroutines.
func (p *Puller) Close() {
	p.mu.Lock()
	for ref, f := range p.flights {
		f.cancel()
		delete(p.flights, ref)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Puller) run(ctx context.Context, f *flight, auth string) {
	began := time.Now()
	p.log.Info("pulling image", "image", f.ref)
	err := p.pull(ctx, f, auth)
	if p.Pulled != nil {
		p.Pulled(err)
	}
	p.mu.Lock()
	f.err = err
	if p.flights[f.ref] == f {
		delete(p.flights, f.ref)
	}
	final := f.last
	final.Ref, final.Done = f.ref, true
	watchers := make([]func(Progress), 0, len(f.watch))
	for _, w := range f.watch {
		watchers = append(watchers, w)
	}
	p.mu.Unlock()
	f.cancel()
	if err == nil {
		if final.Total > 0 {
			final.Current = final.Total
		}
		for _, w := range watchers {
			w(final)
		}
		p.log.Info("pulled image", "image", f.ref, "bytes", final.Total, "took_ms", time.Since(began).Milliseconds())
	}
	// A failure is logged by the caller, after classifying it and
	// redacting any credential the engine may have echoed.
	close(f.done)
}

// pull runs one engine pull and follows its progress stream; an error in
// the stream is the pull's error.
func (p *Puller) pull(ctx context.Context, f *flight, auth string) error {
	resp, err := p.api.ImagePull(ctx, f.ref, client.ImagePullOptions{RegistryAuth: auth})
	if err != nil {
		return err
	}
	defer resp.Close()
	// Closing the stream is what stops the engine's pull when the caller
	// gives up: the engine aborts a pull whose client went away.
	stop := context.AfterFunc(ctx, func() { _ = resp.Close() })
	defer stop()

	agg := newProgressAgg(f.ref)
	var lastReport time.Time
	dec := json.NewDecoder(resp)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("reading pull progress: %w", err)
		}
		if m.Error != nil {
			return errors.New(m.Error.Message)
		}
		if !agg.add(m) {
			continue
		}
		now := time.Now()
		if !lastReport.IsZero() && now.Sub(lastReport) < progressEvery {
			continue
		}
		lastReport = now
		pr := agg.progress()
		p.mu.Lock()
		f.last = pr
		watchers := make([]func(Progress), 0, len(f.watch))
		for _, w := range f.watch {
			watchers = append(watchers, w)
		}
		p.mu.Unlock()
		p.log.Info("pull progress", "image", f.ref, "bytes", pr.Current, "total_bytes", pr.Total, "percent", roundPercent(pr.Percent()))
		for _, w := range watchers {
			w(pr)
		}
	}
}

func roundPercent(p float64) float64 {
	return float64(int(p*10)) / 10
}

// progressAgg sums the per-layer progress the engine streams.
type progressAgg struct {
	ref    string
	layers map[string]*[2]int64 // id → current, total
	order  []string
}

func newProgressAgg(ref string) *progressAgg {
	return &progressAgg{ref: ref, layers: map[string]*[2]int64{}}
}

// add folds m in and reports whether the byte counts changed.
func (a *progressAgg) add(m jsonstream.Message) bool {
	if m.ID == "" {
		return false
	}
	l := a.layers[m.ID]
	switch m.Status {
	case "Downloading":
		if m.Progress == nil {
			return false
		}
		if l == nil {
			l = &[2]int64{}
			a.layers[m.ID] = l
			a.order = append(a.order, m.ID)
		}
		l[0], l[1] = m.Progress.Current, max(m.Progress.Total, l[1])
		return true
	case "Download complete", "Pull complete", "Already exists":
		if l != nil && l[0] != l[1] {
			l[0] = l[1]
			return true
		}
	}
	return false
}

func (a *progressAgg) progress() Progress {
	pr := Progress{Ref: a.ref}
	for _, id := range a.order {
		pr.Current += a.layers[id][0]
		pr.Total += a.layers[id][1]
	}
	return pr
}
