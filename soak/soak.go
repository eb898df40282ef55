// Package soak is hangar's reliability harness: two gateway replicas (the
// project's gateway image) on one PostgreSQL (its postgres image), the
// real Docker engine reached through a socket proxy the harness can cut,
// and a round-robin balancer in front. Clients of mcp-go and of the
// official go-sdk, on protocol versions 2025-11-25 and 2026-07-28, call
// tools, install, uninstall, approve and hot-load through the balancer
// while a fault is injected every FaultEvery: a replica SIGKILLed and
// restarted, PostgreSQL restarted, the engine's socket cut, a provider in
// a crash loop, a provider that hangs, clients that disconnect in the
// middle of a stream. At the end it checks that every acknowledged write
// is in the store, that nothing leaked (containers, goroutines, file
// descriptors, sessions), and writes the report (RELIABILITY.md).
//
// `make soak` runs an hour of it (SOAK_DURATION); integration's
// TestSoakShort runs every fault once in under three minutes.
package soak

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Options of a run.
type Options struct {
	Duration   time.Duration // of the load, faults included
	FaultEvery time.Duration // between fault starts; the first after one FaultEvery of baseline
	EngineCut  time.Duration // how long the engine's socket stays cut
	// ProviderFault is how long the crash-looping and the hanging
	// providers are called.
	ProviderFault time.Duration
	HungAfter     time.Duration // a call without an answer by then is hung
	// SessionIdleTTL is the replicas' server.session_idle_ttl (at least
	// 10 s): a session whose client went away unannounced ends after it.
	SessionIdleTTL time.Duration
	CallersPerKind int
	CallPause      time.Duration // between a caller's calls
	WritePause     time.Duration // between a writer's writes
	Replicas       int

	GatewayImage, PostgresImage, ProviderImage string
	DockerSocket                               string
	// AcceptBridge adds an iptables rule letting the stack's bridge
	// forward to itself: for an engine run with iptables off (one's own
	// dockerd beside a shared one).
	AcceptBridge bool
	// Command is the command line the report says ran it.
	Command string
	Log     func(format string, args ...any)
}

// Defaults fills what is unset: an hour, a fault every three minutes.
func (o Options) Defaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Duration, time.Hour)
	def(&o.FaultEvery, 3*time.Minute)
	def(&o.EngineCut, 30*time.Second)
	def(&o.ProviderFault, 30*time.Second)
	def(&o.HungAfter, 60*time.Second)
	def(&o.SessionIdleTTL, 30*time.Second)
	def(&o.CallPause, 50*time.Millisecond)
	def(&o.WritePause, 2*time.Second)
	if o.CallersPerKind <= 0 {
		o.CallersPerKind = 1
	}
	if o.Replicas <= 0 {
		o.Replicas = 2
	}
	str := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	str(&o.GatewayImage, "mcp-hangar/gateway:dev")
	str(&o.PostgresImage, "mcp-hangar/postgres:dev")
	str(&o.ProviderImage, "mcp-hangar/testkit:dev")
	str(&o.DockerSocket, "/var/run/docker.sock")
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	return o
}

// Report is what a run found.
type Report struct {
	Options   Options
	Began     time.Time
	LoadStart time.Time
	LoadEnd   time.Time
	Instance  string
	Windows   []*window
	Faults    []*faultRecord
	Before    map[string]sample // per replica, after warm-up
	After     map[string]sample // per replica, after the clients left
	Peak      map[string]sample // highest of the periodic samples
	Store     storeCheck
	// Examples is the first error text seen per op and error kind.
	Examples   map[string]string
	Containers []string // the gateways' containers when the load stopped
	Leaked     []string // the gateways' containers left after they stopped
	StopErr    error
	StopTook   time.Duration // how long the replicas took to stop
	// Problems are what make the run a failure; the report lists them
	// first.
	Problems []string
}

// Run runs the harness; the error is for a run that could not be made
// (the stack would not start), the Report's Problems for what it found.
func Run(ctx context.Context, o Options) (*Report, error) {
	o = o.Defaults()
	rep := &Report{Options: o, Began: time.Now(), Before: map[string]sample{}, After: map[string]sample{}, Peak: map[string]sample{}}
	o.Log("starting PostgreSQL and %d gateway replicas", o.Replicas)
	st, err := startStack(ctx, o)
	if err != nil {
		return nil, err
	}
	defer st.remove(context.WithoutCancel(ctx))
	rep.Instance = st.instance
	bal, err := startBalancer(st.urls)
	if err != nil {
		return nil, err
	}
	defer bal.Close()
	led := newLedger()
	ld := &load{o: o, url: bal.URL(), token: st.token, led: led, st: st}

	if err := warmUp(ctx, ld); err != nil {
		return nil, err
	}
	for _, r := range st.gws {
		rep.Before[r.name] = readSample(ctx, st.urls()[index(st, r)], st.token)
	}
	o.Log("warm: %d replicas serve every client kind; load and faults for %s", len(st.gws), o.Duration)

	loadCtx, stopLoad := context.WithCancel(ctx)
	rep.LoadStart = time.Now()
	ld.start(loadCtx)
	in := &injector{o: o, st: st, ld: ld, bal: bal}
	end := rep.LoadStart.Add(o.Duration)
	nextFault := rep.LoadStart.Add(o.FaultEvery)
	nextSample := time.Now()
	for i := 0; ctx.Err() == nil && time.Now().Before(end); {
		if !time.Now().Before(nextSample) {
			for _, r := range st.gws {
				s := readSample(ctx, st.urls()[index(st, r)], st.token)
				if p, ok := rep.Peak[r.name]; s.Err == nil && (!ok || s.Goroutines > p.Goroutines) {
					rep.Peak[r.name] = s
				}
			}
			nextSample = time.Now().Add(15 * time.Second)
		}
		if !time.Now().Before(nextFault) && time.Until(end) > o.FaultEvery/3 {
			name := faultOrder[i%len(faultOrder)]
			o.Log("fault %d: %s", i+1, name)
			f := in.inject(ctx, name)
			if f.Err != nil {
				o.Log("fault %d (%s) could not be injected: %v", i+1, name, f.Err)
			}
			rep.Faults = append(rep.Faults, f)
			i++
			nextFault = f.Start.Add(o.FaultEvery)
			continue
		}
		sleep(ctx, time.Second)
	}
	stopLoad()
	ld.wait()
	rep.LoadEnd = time.Now()
	o.Log("load stopped; checking the store and what is left")

	// Sessions of clients that closed go at once; those of clients whose
	// DELETE was lost with a replica end after session_idle_ttl.
	deadline := time.Now().Add(o.SessionIdleTTL + 45*time.Second)
	for {
		all := true
		for _, r := range st.gws {
			s := readSample(ctx, st.urls()[index(st, r)], st.token)
			rep.After[r.name] = s
			if s.Err != nil || s.Sessions != 0 {
				all = false
			}
		}
		if all || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		sleep(ctx, 2*time.Second)
	}
	rep.Containers, _ = st.gatewayContainers(ctx)
	rep.Store = checkStore(ctx, st.pgURL(), led)
	o.Log("stopping the replicas (SIGTERM)")
	stopping := time.Now()
	rep.StopErr = st.stopGateways(ctx)
	rep.StopTook = time.Since(stopping)
	o.Log("replicas stopped in %s", rep.StopTook.Round(100*time.Millisecond))
	deadline = time.Now().Add(30 * time.Second)
	for {
		rep.Leaked, _ = st.gatewayContainers(ctx)
		if len(rep.Leaked) == 0 || time.Now().After(deadline) {
			break
		}
		sleep(ctx, time.Second)
	}
	rep.Windows = led.windows(rep.LoadStart, rep.LoadEnd, rep.Faults)
	rep.Examples = led.examples
	rep.judge()
	return rep, ctx.Err()
}

func index(st *stack, r *replica) int {
	for i, g := range st.gws {
		if g == r {
			return i
		}
	}
	return 0
}

// warmUp waits until every client kind has had an echo call answered
// through the balancer (the first start of the echo containers
// included).
func warmUp(ctx context.Context, ld *load) error {
	for _, k := range clientKinds {
		deadline := time.Now().Add(90 * time.Second)
		var last error
		for {
			if last = warmOne(ctx, ld, k); last == nil {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("warm-up: %s never had an echo answered through the balancer: %w", k.Label(), last)
			}
			sleep(ctx, 500*time.Millisecond)
		}
	}
	return nil
}

func warmOne(ctx context.Context, ld *load, k clientKind) error {
	cctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	s, err := dial(cctx, k, ld.url, ld.token)
	if err != nil {
		return err
	}
	defer s.Close()
	text, isErr, err := s.Call(cctx, "hangar_call", hangarCall("echo", "echo", map[string]any{"text": "warm"}))
	if err != nil {
		return err
	}
	if r, kind := callResult(text); isErr || r != "warm" {
		return fmt.Errorf("echo answered %q (%s)", firstWords(text, 20), kind)
	}
	return nil
}

// Limits of the judgement: a replica's goroutines and file descriptors
// after the run may exceed the highest figure before it by this much (the
// providers it runs are not all the same ones), and every fault must be
// recovered from before the next.
const (
	goroutineSlack = 100
	fdSlack        = 30
)

// judge fills Problems.
func (r *Report) judge() {
	p := func(f string, a ...any) { r.Problems = append(r.Problems, fmt.Sprintf(f, a...)) }
	for _, w := range r.Windows {
		if w.fault == nil && w.Failed+w.Hung > 0 {
			p("%d calls failed and %d hung with no fault injected (%v)", w.Failed, w.Hung, w.ErrKinds)
		}
		if w.Hung > 0 && w.fault != nil {
			p("%s: %d client calls hung (no answer in %s)", w.Name, w.Hung, r.Options.HungAfter)
		}
		if w.FaultHung > 0 {
			p("%s: %d calls of the faulty provider hung (no answer in %s)", w.Name, w.FaultHung, r.Options.HungAfter)
		}
		if w.fault != nil && w.Recovered > 0 && w.End.Sub(w.Start)-w.Recovered < min(10*time.Second, w.End.Sub(w.Start)/10) {
			p("%s: still failing %s before the next fault (not recovered)", w.Name, (w.End.Sub(w.Start) - w.Recovered).Round(time.Second))
		}
		if w.Sent == 0 {
			p("%s: no client call was sent", w.Name)
		}
	}
	for _, f := range r.Faults {
		if f.Err != nil {
			p("%s at %s: could not be injected or undone: %v", f.Name, f.Start.Format(time.TimeOnly), f.Err)
		}
	}
	kinds := map[string]bool{}
	for _, f := range r.Faults {
		kinds[f.Name] = true
	}
	for _, k := range faultOrder {
		if !kinds[k] {
			p("fault %q never injected (the run was too short for it)", k)
		}
	}
	if r.Store.Err != nil {
		p("store check failed: %v", r.Store.Err)
	}
	for _, l := range r.Store.Lost {
		p("lost acknowledged write: %s", l)
	}
	if r.Store.Installs+r.Store.Approvals+r.Store.HotCalls == 0 {
		p("no write was acknowledged: the store check checked nothing")
	}
	if len(r.Leaked) > 0 {
		p("containers left after the gateways stopped: %s", strings.Join(r.Leaked, "; "))
	}
	if r.StopErr != nil {
		p("gateways did not stop cleanly: %v", r.StopErr)
	}
	if r.StopTook >= stopGrace-time.Second {
		p("the replicas did not stop within %s of SIGTERM (docker stop killed them after %s)", stopGrace, r.StopTook.Round(time.Second))
	}
	var maxG, maxFD float64
	for _, s := range r.Before {
		maxG, maxFD = max(maxG, s.Goroutines), max(maxFD, s.FDs)
	}
	for _, name := range sortedKeys(r.After) {
		s := r.After[name]
		switch {
		case s.Err != nil:
			p("%s: no figures after the run: %v", name, s.Err)
		case s.Sessions != 0:
			p("%s: %v sessions still open after every client left", name, s.Sessions)
		}
		if s.Err == nil && s.Goroutines > maxG+goroutineSlack {
			p("%s: %v goroutines after the run, %v at most before (leak?)", name, s.Goroutines, maxG)
		}
		if s.Err == nil && s.FDs > maxFD+fdSlack {
			p("%s: %v open file descriptors after the run, %v at most before (leak?)", name, s.FDs, maxFD)
		}
	}
}

// ErrProblems is Run's caller's error for a report with problems.
var ErrProblems = errors.New("soak: the run found problems")
