package instance

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/volume"
	"github.com/moby/moby/client"
)

// fakeEngine models what the lease relies on: VolumeCreate is atomic per
// name and answers an existing volume with its first labels; containers
// are running or not.
type fakeEngine struct {
	mu         sync.Mutex
	volumes    map[string]map[string]string
	containers map[string]bool // id → running
	creates    int
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{volumes: map[string]map[string]string{}, containers: map[string]bool{}}
}

var _ API = (*fakeEngine)(nil)

func (f *fakeEngine) VolumeCreate(_ context.Context, o client.VolumeCreateOptions) (client.VolumeCreateResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creates++
	if l, ok := f.volumes[o.Name]; ok {
		return client.VolumeCreateResult{Volume: volume.Volume{Name: o.Name, Labels: clone(l)}}, nil
	}
	f.volumes[o.Name] = clone(o.Labels)
	return client.VolumeCreateResult{Volume: volume.Volume{Name: o.Name, Labels: clone(o.Labels)}}, nil
}

func (f *fakeEngine) VolumeInspect(_ context.Context, name string, _ client.VolumeInspectOptions) (client.VolumeInspectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.volumes[name]
	if !ok {
		return client.VolumeInspectResult{}, cerrdefs.ErrNotFound.WithMessage("no such volume")
	}
	return client.VolumeInspectResult{Volume: volume.Volume{Name: name, Labels: clone(l)}}, nil
}

func (f *fakeEngine) VolumeRemove(_ context.Context, name string, _ client.VolumeRemoveOptions) (client.VolumeRemoveResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.volumes[name]; !ok {
		return client.VolumeRemoveResult{}, cerrdefs.ErrNotFound.WithMessage("no such volume")
	}
	delete(f.volumes, name)
	return client.VolumeRemoveResult{}, nil
}

func (f *fakeEngine) ContainerInspect(_ context.Context, id string, _ client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	running, ok := f.containers[id]
	if !ok {
		return client.ContainerInspectResult{}, cerrdefs.ErrNotFound.WithMessage("no such container")
	}
	return client.ContainerInspectResult{Container: container.InspectResponse{ID: id, State: &container.State{Running: running}}}, nil
}

func (f *fakeEngine) volumeNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for n := range f.volumes {
		out = append(out, n)
	}
	return out
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// procs is a fake process table: pid → start time.
type procs struct {
	mu sync.Mutex
	m  map[int]uint64
}

func (p *procs) lookup(pid int) (uint64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.m[pid]
	return s, ok
}

func (p *procs) set(pid int, start uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m[pid] = start
}

const testNS = "boot-1/pid:[1]"

func holder(pid int, token string) Holder {
	return Holder{Instance: "prod", Token: token, Host: "hostA", PID: pid, PIDStart: uint64(pid) * 10,
		PIDNS: testNS, Listen: "127.0.0.1:8080", Since: time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC)}
}

// checker's Wait lets a losing starter wait for the event it waits for in
// real life, the dead holder's lease going away, instead of for time.
func checker(api API, self Holder, p *procs, probe func(context.Context, string) error) *Checker {
	wait := func(ctx context.Context, _ int) error {
		eng, ok := api.(*fakeEngine)
		for deadline := time.Now().Add(5 * time.Second); ok && time.Now().Before(deadline); runtime.Gosched() {
			eng.mu.Lock()
			tok := eng.volumes[VolumeName(self.Instance)][labelToken]
			_, takingOver := eng.volumes[VolumeName(self.Instance)+"-takeover-dead"]
			eng.mu.Unlock()
			if tok != "dead" || !takingOver {
				break
			}
		}
		return ctx.Err()
	}
	return &Checker{API: api, Self: self, Proc: p.lookup, Probe: probe, Wait: wait}
}

func noProbe(context.Context, string) error { return syscall.ECONNREFUSED }

func TestAcquireFreshAndRelease(t *testing.T) {
	t.Parallel()
	eng := newFakeEngine()
	p := &procs{m: map[int]uint64{100: 1000}}
	self := holder(100, "tok-a")
	l, err := Acquire(t.Context(), checker(eng, self, p, noProbe))
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if l.TookOver != nil {
		t.Errorf("TookOver = %v on a fresh engine", l.TookOver)
	}
	got, ok := holderFrom(eng.volumes[VolumeName("prod")])
	if !ok || got != self {
		t.Errorf("lease labels name %+v, want %+v", got, self)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if v := eng.volumeNames(); len(v) != 0 {
		t.Errorf("volumes after Release: %v", v)
	}
}

// A live holder is named in the error, whichever way it is found alive;
// a dead one is taken over and leaves no takeover volume behind.
func TestAcquireAgainstHolder(t *testing.T) {
	t.Parallel()
	inCtr := func(h Holder) Holder {
		h.Container, h.ContainerName, h.PIDNS = "c0ffee0000000000", "stack-hangar-1", "boot-1/pid:[9]"
		return h
	}
	wild := func(h Holder) Holder { h.Listen = "0.0.0.0:8080"; return h }
	otherHost := func(h Holder) Holder { h.Host, h.PIDNS = "hostB", "boot-2/pid:[1]"; return h }
	tests := []struct {
		name       string
		holder     Holder
		self       Holder // zero: a process on hostA, pid 100
		procs      map[int]uint64
		containers map[string]bool
		probe      error
		wantHeld   bool
		wantIn     []string // in the error
	}{
		{name: "same host, process running", holder: holder(7, "old"), procs: map[int]uint64{7: 70},
			wantHeld: true, wantIn: []string{"pid 7 on host hostA", "listening on 127.0.0.1:8080", "since 2026-11-23T18:00:00Z", "process 7 is running", "docker volume rm hangar-lease-prod"}},
		{name: "same host, process gone", holder: holder(7, "old"), procs: map[int]uint64{}},
		{name: "same host, pid reused", holder: holder(7, "old"), procs: map[int]uint64{7: 71}},
		{name: "in a running container", holder: inCtr(holder(1, "old")), containers: map[string]bool{"c0ffee0000000000": true},
			wantHeld: true, wantIn: []string{"container stack-hangar-1 (c0ffee000000)", "its container is running"}},
		{name: "in a stopped container", holder: inCtr(holder(1, "old")), containers: map[string]bool{"c0ffee0000000000": false}},
		{name: "in a removed container", holder: inCtr(holder(1, "old"))},
		{name: "in our container, before it restarted", holder: inCtr(holder(1, "old")),
			self:  func() Holder { h := inCtr(holder(1, "new")); h.PIDNS = "boot-1/pid:[10]"; return h }(),
			procs: map[int]uint64{1: 10}, containers: map[string]bool{"c0ffee0000000000": true}},
		{name: "in our container, running", holder: inCtr(holder(7, "old")), self: inCtr(holder(100, "new")),
			procs: map[int]uint64{7: 70}, containers: map[string]bool{"c0ffee0000000000": true},
			wantHeld: true, wantIn: []string{"process 7 is running"}},
		{name: "other host, answers", holder: otherHost(wild(holder(7, "old"))),
			wantHeld: true, wantIn: []string{"pid 7 on host hostB", "http://hostB:8080/healthz answers"}},
		{name: "other host, refused", holder: otherHost(wild(holder(7, "old"))), probe: fmt.Errorf("dial: %w", syscall.ECONNREFUSED)},
		{name: "other host, something else answers", holder: otherHost(wild(holder(7, "old"))), probe: errNotHealthy},
		{name: "other host, unreachable", holder: otherHost(wild(holder(7, "old"))), probe: errors.New("i/o timeout"),
			wantHeld: true, wantIn: []string{"cannot be reached to check (i/o timeout)"}},
		{name: "other host, loopback", holder: otherHost(holder(7, "old")), probe: syscall.ECONNREFUSED,
			wantHeld: true, wantIn: []string{"loopback interface of another host"}},
		{name: "other host, stdio", holder: func() Holder { h := otherHost(holder(7, "old")); h.Listen = ""; return h }(),
			wantHeld: true, wantIn: []string{"serving stdio", "serves no HTTP endpoint"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			eng := newFakeEngine()
			eng.volumes[VolumeName("prod")] = tt.holder.labels()
			for id, r := range tt.containers {
				eng.containers[id] = r
			}
			p := &procs{m: map[int]uint64{100: 1000}} // us
			for pid, start := range tt.procs {
				p.set(pid, start)
			}
			var probed string
			probe := func(_ context.Context, addr string) error { probed = addr; return tt.probe }
			self := tt.self
			if self.Token == "" {
				self = holder(100, "new")
			}
			l, err := Acquire(t.Context(), checker(eng, self, p, probe))
			if tt.wantHeld {
				var held *HeldError
				if !errors.As(err, &held) || !errors.Is(err, ErrHeld) {
					t.Fatalf("Acquire = %v, %v; want a HeldError", l, err)
				}
				for _, s := range tt.wantIn {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				if got, _ := holderFrom(eng.volumes[VolumeName("prod")]); got.Token != "old" {
					t.Errorf("the live holder's lease was replaced by %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			if l.TookOver == nil || l.TookOver.Token != "old" {
				t.Errorf("TookOver = %+v, want the dead holder", l.TookOver)
			}
			if got, _ := holderFrom(eng.volumes[VolumeName("prod")]); got.Token != "new" {
				t.Errorf("lease names %+v after takeover", got)
			}
			if v := eng.volumeNames(); len(v) != 1 {
				t.Errorf("volumes after takeover: %v, want the lease only", v)
			}
			if tt.holder.Host == "hostB" && tt.holder.Listen != "" && probed != "hostB:8080" {
				t.Errorf("probed %q", probed)
			}
		})
	}
}

// Of many simultaneous starters exactly one wins, both on a fresh engine
// and when they all find the same dead holder.
func TestAcquireRace(t *testing.T) {
	t.Parallel()
	for _, withDead := range []bool{false, true} {
		t.Run(fmt.Sprintf("dead_holder=%v", withDead), func(t *testing.T) {
			t.Parallel()
			for range 20 {
				eng := newFakeEngine()
				p := &procs{m: map[int]uint64{}}
				if withDead {
					eng.volumes[VolumeName("prod")] = holder(7, "dead").labels()
				}
				const n = 8
				var wg sync.WaitGroup
				errs := make([]error, n)
				for i := range n {
					self := holder(200+i, fmt.Sprintf("tok-%d", i))
					p.set(self.PID, self.PIDStart)
					wg.Go(func() { _, errs[i] = Acquire(t.Context(), checker(eng, self, p, noProbe)) })
				}
				wg.Wait()
				wins := 0
				for _, err := range errs {
					switch {
					case err == nil:
						wins++
					case errors.Is(err, ErrHeld):
					default:
						t.Fatalf("Acquire: %v", err)
					}
				}
				if wins != 1 {
					t.Fatalf("%d winners, want exactly 1 (errors %v)", wins, errs)
				}
				if v := eng.volumeNames(); len(v) != 1 {
					t.Fatalf("volumes after the race: %v, want the lease only", v)
				}
			}
		})
	}
}

// A starter that died halfway through a takeover does not block the next.
func TestAcquireStaleTakeover(t *testing.T) {
	t.Parallel()
	eng := newFakeEngine()
	dead := holder(7, "dead")
	eng.volumes[VolumeName("prod")] = dead.labels()
	halfway := holder(8, "halfway")
	tv := VolumeName("prod") + "-takeover-dead"
	eng.volumes[tv] = halfway.labels()
	p := &procs{m: map[int]uint64{100: 1000}}
	l, err := Acquire(t.Context(), checker(eng, holder(100, "new"), p, noProbe))
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if l.Holder().Token != "new" {
		t.Errorf("holder %+v", l.Holder())
	}
	if v := eng.volumeNames(); len(v) != 1 {
		t.Errorf("volumes: %v, want the lease only", v)
	}
}

func TestAcquireRefusesForeignVolume(t *testing.T) {
	t.Parallel()
	eng := newFakeEngine()
	eng.volumes[VolumeName("prod")] = map[string]string{"owner": "someone"}
	_, err := Acquire(t.Context(), checker(eng, holder(100, "new"), &procs{m: map[int]uint64{}}, noProbe))
	if err == nil || !strings.Contains(err.Error(), "is not a hangar lease") {
		t.Fatalf("Acquire = %v, want an error about the foreign volume", err)
	}
	if _, err := Acquire(t.Context(), checker(eng, Holder{Instance: "bad name", Token: "x"}, &procs{}, noProbe)); err == nil {
		t.Error("Acquire accepted an instance name with a space")
	}
}

func TestReleaseKeepsAnotherHoldersLease(t *testing.T) {
	t.Parallel()
	eng := newFakeEngine()
	l := &Lease{api: eng, holder: holder(100, "mine")}
	eng.volumes[VolumeName("prod")] = holder(7, "theirs").labels()
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, ok := eng.volumes[VolumeName("prod")]; !ok {
		t.Error("Release removed a lease it does not hold")
	}
}

func TestParseStatStart(t *testing.T) {
	t.Parallel()
	fields := func(comm string) string {
		// pid (comm) state ppid ... field 22 = 4242
		f := []string{"S", "1"}
		for i := 5; i <= 21; i++ {
			f = append(f, "0")
		}
		f = append(f, "4242", "99")
		return "123 (" + comm + ") " + strings.Join(f, " ")
	}
	tests := []struct {
		stat string
		want uint64
		ok   bool
	}{
		{fields("hangar"), 4242, true},
		{fields("a) b (c"), 4242, true},
		{"123 (x) S 1 2", 0, false},
		{"garbage", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseStatStart(tt.stat)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseStatStart(%q) = %d, %v; want %d, %v", tt.stat, got, ok, tt.want, tt.ok)
		}
	}
	if s, ok := procStart(1); !ok || s == 0 {
		t.Logf("procStart(1) = %d, %v (no /proc here?)", s, ok)
	}
}

func TestProbeAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		listen, want string
		ok           bool
	}{
		{"10.0.0.5:8080", "10.0.0.5:8080", true},
		{"0.0.0.0:8080", "hostB:8080", true},
		{"[::]:9000", "hostB:9000", true},
		{":7000", "hostB:7000", true},
		{"gw.example:80", "gw.example:80", true},
		{"127.0.0.1:8080", "", false},
		{"[::1]:8080", "", false},
		{"localhost:8080", "", false},
	}
	for _, tt := range tests {
		if got, ok := probeAddr(Holder{Host: "hostB", Listen: tt.listen}); got != tt.want || ok != tt.ok {
			t.Errorf("probeAddr(%q) = %q, %v; want %q, %v", tt.listen, got, ok, tt.want, tt.ok)
		}
	}
}

func TestCheckName(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{
		"default": true, "hangarit1a2b": true, "it-abc-x_y.z": true,
		"": false, "-x": false, "a b": false, "a/b": false, strings.Repeat("a", 101): false,
	} {
		if err := CheckName(name); (err == nil) != ok {
			t.Errorf("CheckName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

func TestProbeHealthz(t *testing.T) {
	t.Parallel()
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
		}
	}))
	defer healthy.Close()
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	if err := probeHealthz(t.Context(), strings.TrimPrefix(healthy.URL, "http://")); err != nil {
		t.Errorf("healthy gateway: %v", err)
	}
	if err := probeHealthz(t.Context(), strings.TrimPrefix(other.URL, "http://")); !errors.Is(err, errNotHealthy) {
		t.Errorf("another server: %v, want errNotHealthy", err)
	}
	if err := probeHealthz(t.Context(), closed); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("nothing listening: %v, want ECONNREFUSED", err)
	}
}
