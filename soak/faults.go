package soak

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// The faults, injected in this order, round after round.
const (
	faultReplicaKill = "replica SIGKILLed and restarted"
	faultPGRestart   = "PostgreSQL restarted"
	faultEngineCut   = "Docker engine socket cut"
	faultCrashLoop   = "provider in a crash loop"
	faultHang        = "provider that hangs"
	faultDisconnect  = "client disconnects mid-stream"
)

var faultOrder = []string{faultReplicaKill, faultPGRestart, faultEngineCut, faultCrashLoop, faultHang, faultDisconnect}

// faultRecord is one injected fault.
type faultRecord struct {
	Name  string
	Start time.Time
	// Cleared is when the harness undid the fault (the replica ready
	// again, PostgreSQL accepting connections, the socket back, the
	// faulty provider no longer called); Start for an instant fault.
	Cleared time.Time
	Detail  string
	Err     error
}

// injector injects one fault at a time.
type injector struct {
	o     Options
	st    *stack
	ld    *load
	bal   *balancer
	round int
	wg    sync.WaitGroup
}

func (in *injector) inject(ctx context.Context, name string) *faultRecord {
	f := &faultRecord{Name: name, Start: time.Now()}
	switch name {
	case faultReplicaKill:
		r := in.st.gws[in.round%len(in.st.gws)]
		f.Detail = r.name
		f.Err = in.killReplica(ctx, r)
	case faultPGRestart:
		_, f.Err = docker(ctx, "restart", "-t", "5", in.st.pg)
		if f.Err == nil {
			f.Err = waitPG(ctx, in.st.pgURL(), 60*time.Second)
		}
	case faultEngineCut:
		f.Detail = in.o.EngineCut.String()
		in.st.proxy.Cut(in.o.EngineCut)
		sleep(ctx, in.o.EngineCut)
	case faultCrashLoop:
		f.Detail = "crashy (testkit --exit-on-start 3) called by every client kind for " + in.o.ProviderFault.String()
		in.hammer(ctx, "fault:crashy", "crashy")
	case faultHang:
		f.Detail = "hangy (testkit --hang, start_timeout_s 5) called by every client kind for " + in.o.ProviderFault.String()
		in.hammer(ctx, "fault:hangy", "hangy")
	case faultDisconnect:
		f.Detail, f.Err = in.disconnect(ctx)
	}
	f.Cleared = time.Now()
	if name == faultReplicaKill || name == faultDisconnect {
		in.round++
	}
	return f
}

// killReplica SIGKILLs a gateway container and starts it again; the
// fault is cleared once the replica is ready.
func (in *injector) killReplica(ctx context.Context, r *replica) error {
	if _, err := docker(ctx, "kill", "-s", "KILL", r.name); err != nil {
		return err
	}
	_, _ = docker(ctx, "wait", r.name)
	sleep(ctx, 2*time.Second)
	if _, err := docker(ctx, "start", r.name); err != nil {
		return err
	}
	if err := in.st.refreshURL(ctx, r); err != nil {
		return err
	}
	return in.st.waitReady(ctx, r, 90*time.Second)
}

// hammer calls a faulty server from every client kind until the
// provider fault's time is over.
func (in *injector) hammer(ctx context.Context, op, server string) {
	hctx, cancel := context.WithTimeout(ctx, in.o.ProviderFault)
	defer cancel()
	var wg sync.WaitGroup
	for _, k := range clientKinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &worker{ld: in.ld, kind: k}
			defer w.drop()
			for hctx.Err() == nil {
				w.call(hctx, op, "hangar_call", hangarCall(server, "echo", map[string]any{"text": "x"}))
				sleep(hctx, 200*time.Millisecond)
			}
		}()
	}
	wg.Wait()
}

// disconnect starts a streaming call (testkit's progress tool by its
// front-door name, 10 s of steps) from every client kind and drops each
// once its stream is open: at the first progress notification, or after a
// second.
func (in *injector) disconnect(ctx context.Context) (string, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var notes []string
	for _, k := range clientKinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			s, err := dial(dctx, k, in.ld.url, in.ld.token)
			if err != nil {
				mu.Lock()
				notes = append(notes, fmt.Sprintf("%s: dial: %v", k.Label(), err))
				mu.Unlock()
				return
			}
			defer s.Close()
			cctx, drop := context.WithCancel(dctx)
			progressed := make(chan struct{})
			var once sync.Once
			go func() {
				select {
				case <-progressed:
				case <-time.After(time.Second):
				case <-cctx.Done():
				}
				drop()
			}()
			began := time.Now()
			err = s.CallStreaming(cctx, frontDoorProgress, map[string]any{"steps": 100, "delay_ms": 100},
				func() { once.Do(func() { close(progressed) }) })
			how := "after 1 s"
			select {
			case <-progressed:
				how = "at the first progress notification"
			default:
			}
			mu.Lock()
			notes = append(notes, fmt.Sprintf("%s dropped %s (%s in)", k.Label(), how, time.Since(began).Round(time.Millisecond)))
			mu.Unlock()
			_ = err
		}()
	}
	wg.Wait()
	return fmt.Sprint(notes), nil
}
