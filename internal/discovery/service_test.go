package discovery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
)

// fakeSource returns whatever it was last given.
type fakeSource struct {
	typ, mode string

	mu      sync.Mutex
	listing Listing
	err     error
	panics  bool
	lists   atomic.Int32
	changes chan struct{} // Watch forwards each to onChange
}

func newFakeSource(typ, mode string) *fakeSource {
	return &fakeSource{typ: typ, mode: mode, changes: make(chan struct{}, 16)}
}

func (f *fakeSource) Type() string { return f.typ }
func (f *fakeSource) Mode() string { return f.mode }

func (f *fakeSource) set(err error, problems []Problem, cands ...Candidate) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listing = Listing{Candidates: cands, Problems: problems}
	f.err = err
}

func (f *fakeSource) List(context.Context) (Listing, error) {
	f.lists.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.panics {
		panic("source exploded")
	}
	return f.listing, f.err
}

func (f *fakeSource) Watch(ctx context.Context, onChange func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.changes:
			onChange()
		}
	}
}

// fakeRegistry is the catalog as discovery sees it: servers of the config
// file (origin "") take precedence over discovery's claims, which are kept
// even when refused.
type fakeRegistry struct {
	mu      sync.Mutex
	servers map[string]*config.Server // served: config servers and served claims
	claims  map[string]*config.Server // discovery's claims
	calls   []string
	failReg error
}

func newFakeRegistry(configIDs ...string) *fakeRegistry {
	r := &fakeRegistry{servers: map[string]*config.Server{}, claims: map[string]*config.Server{}}
	for _, id := range configIDs {
		r.servers[id] = &config.Server{ID: id}
	}
	return r
}

func (r *fakeRegistry) refusal(id string) error {
	if s, ok := r.servers[id]; ok && s.Origin == "" {
		return fmt.Errorf("mcp server id %s is served from config, which takes precedence over discovery", id)
	}
	return nil
}

func (r *fakeRegistry) Register(spec *config.Server) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failReg != nil {
		return r.failReg
	}
	if _, ok := r.claims[spec.ID]; ok {
		return fmt.Errorf("%s already claimed", spec.ID)
	}
	r.claims[spec.ID] = spec
	r.calls = append(r.calls, "register "+spec.ID)
	if err := r.refusal(spec.ID); err != nil {
		return err
	}
	r.servers[spec.ID] = spec
	return nil
}

func (r *fakeRegistry) Deregister(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.claims[id]
	if !ok {
		return fmt.Errorf("%s not claimed", id)
	}
	delete(r.claims, id)
	if r.servers[id] == c {
		delete(r.servers, id)
	}
	r.calls = append(r.calls, "deregister "+id)
	return nil
}

func (r *fakeRegistry) Refusal(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.servers[id]; ok && r.claims[id] == r.servers[id] {
		return nil
	}
	return r.refusal(id)
}

// Registered reports whether id is served (config servers included).
func (r *fakeRegistry) Registered(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.servers[id]
	return ok
}

func (r *fakeRegistry) Origin(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.servers[id]; ok {
		return s.Origin
	}
	return ""
}

func (r *fakeRegistry) spec(id string) *config.Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.servers[id]
}

func (r *fakeRegistry) takeCalls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

// cand is an http container candidate; fp stands for image and labels.
func cand(name, fp, ip string) Candidate {
	spec := baseSpec(name, SourceDocker, "")
	spec.Mode, spec.Transport = config.ModeRemote, config.TransportHTTP
	spec.Endpoint = "http://" + ip + ":8080/mcp"
	return Candidate{Name: name, Source: SourceDocker, Mode: ModeHTTP, ContainerID: "id-" + name + "-" + ip,
		Image: "img", Fingerprint: fp, Spec: spec}
}

func fileCand(name, fp string) Candidate {
	spec := baseSpec(name, SourceFilesystem, "")
	spec.Mode, spec.Transport, spec.Image = config.ModeDocker, config.TransportStdio, "img"
	return Candidate{Name: name, Source: SourceFilesystem, Mode: config.TransportStdio, Fingerprint: fp, Spec: spec}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func discCfg(mut ...func(*config.Discovery)) config.Discovery {
	d := config.Default().Discovery
	d.Enabled = true
	for _, m := range mut {
		m(&d)
	}
	return d
}

func autoRegister(d *config.Discovery)  { d.AutoRegister = true }
func healthChecked(d *config.Discovery) { d.AutoRegister, d.Security.RequireHealthCheck = true, true }

func wantResult(t *testing.T, got ScanResult, want ScanResult) {
	t.Helper()
	got.Duration = 0
	if want.SourceResults == nil {
		got.SourceResults = nil
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("scan result\n got %+v\nwant %+v", got, want)
	}
}

func pendingNames(s *Service) []string {
	var out []string
	for _, p := range s.Pending() {
		out = append(out, p.Name)
	}
	return out
}

func TestPendingThenApprove(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	src := newFakeSource(SourceDocker, ModeAdditive)
	src.set(nil, nil, cand("api", "f1", "10.0.0.1"))
	reg := newFakeRegistry()
	now := time.Date(2026, 1, 15, 10, 30, 0, 0, time.UTC)
	s := New(discCfg(), reg, nil, nil, quietLog(), src)
	s.now = func() time.Time { return now }

	wantResult(t, s.Scan(ctx), ScanResult{DiscoveredCount: 1, SourceResults: map[string]int{"docker": 1}})
	p := s.Pending()
	if len(p) != 1 || p[0] != (PendingEntry{Name: "api", Source: "docker", Mode: "remote", DiscoveredAt: now, Fingerprint: "f1", Status: StatusPending}) {
		t.Fatalf("pending = %+v", p)
	}
	if reg.Registered("api") {
		t.Fatal("pending candidate was registered")
	}
	// A second scan changes nothing and keeps discovered_at.
	now = now.Add(time.Minute)
	wantResult(t, s.Scan(ctx), ScanResult{DiscoveredCount: 1})
	if got := s.Pending()[0].DiscoveredAt; !got.Equal(now.Add(-time.Minute)) {
		t.Errorf("discovered_at moved to %v", got)
	}

	if r := s.Approve(ctx, "nope"); r.Approved || r.Error != "not found in pending or quarantine: nope" || r.Server != "nope" {
		t.Errorf("approve unknown = %+v", r)
	}
	if r := s.Approve(ctx, "api"); r != (ApproveResult{Approved: true, Server: "api", Status: "registered"}) {
		t.Fatalf("approve = %+v", r)
	}
	if sp := reg.spec("api"); sp == nil || sp.Origin != "docker" || sp.Endpoint != "http://10.0.0.1:8080/mcp" {
		t.Fatalf("registered spec %+v", sp)
	}
	if len(s.Pending()) != 0 {
		t.Error("still pending after approval")
	}
	if r := s.Approve(ctx, "api"); r.Approved {
		t.Error("approved twice")
	}
	wantResult(t, s.Scan(ctx), ScanResult{DiscoveredCount: 1})
	if c := reg.takeCalls(); !slices.Equal(c, []string{"register api"}) {
		t.Errorf("registry calls %v", c)
	}
}

func TestAutoRegister(t *testing.T) {
	t.Parallel()
	src := newFakeSource(SourceDocker, ModeAdditive)
	src.set(nil, nil, cand("a", "f1", "10.0.0.1"), cand("b", "f2", "10.0.0.2"))
	reg := newFakeRegistry()
	s := New(discCfg(autoRegister), reg, nil, nil, quietLog(), src)
	wantResult(t, s.Scan(t.Context()), ScanResult{DiscoveredCount: 2, RegisteredCount: 2})
	if !reg.Registered("a") || !reg.Registered("b") || len(s.Pending()) != 0 {
		t.Error("not auto-registered")
	}
}

func TestHealthCheckFailureQuarantines(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	src := newFakeSource(SourceDocker, ModeAdditive)
	src.set(nil, nil, cand("bad", "f1", "10.0.0.1"), cand("good", "f2", "10.0.0.2"))
	reg := newFakeRegistry()
	var checks atomic.Int32
	check := func(_ context.Context, spec *config.Server) error {
		checks.Add(1)
		if spec.ID == "bad" {
			return errors.New("connection refused")
		}
		return nil
	}
	store := NewMemoryStore()
	s := New(discCfg(healthChecked), reg, check, store, quietLog(), src)
	s.checkGrace = 0

	wantResult(t, s.Scan(ctx), ScanResult{DiscoveredCount: 2, RegisteredCount: 1, QuarantinedCount: 1})
	q := s.Quarantined()
	if len(q) != 1 || q[0].Name != "bad" || q[0].Source != "docker" || q[0].Reason != "health_check_failed: connection refused" ||
		q[0].QuarantineTime.IsZero() || q[0].QuarantineTime.Location() != time.UTC {
		t.Fatalf("quarantined = %+v", q)
	}
	if reg.Registered("bad") || !reg.Registered("good") {
		t.Fatal("registration")
	}

	// It stays quarantined without being checked again.
	wantResult(t, s.Scan(ctx), ScanResult{DiscoveredCount: 2})
	if checks.Load() != 2 || len(s.Quarantined()) != 1 {
		t.Errorf("checks = %d, quarantined %v", checks.Load(), s.Quarantined())
	}

	// An operator overrides the check.
	if r := s.Approve(ctx, "bad"); !r.Approved {
		t.Fatalf("approve from quarantine: %+v", r)
	}
	if !reg.Registered("bad") || len(s.Quarantined()) != 0 {
		t.Error("not registered out of quarantine")
	}
	if _, ok := store.Quarantine("bad"); ok {
		t.Error("store still holds the quarantine")
	}
	wantResult(t, s.Scan(ctx), ScanResult{DiscoveredCount: 2})
}

func TestHealthCheckRetriesWhileStarting(t *testing.T) {
	t.Parallel()
	src := newFakeSource(SourceDocker, ModeAdditive)
	src.set(nil, nil, cand("slow", "f1", "10.0.0.1"))
	reg := newFakeRegistry()
	var attempts atomic.Int32
	check := func(context.Context, *config.Server) error {
		if attempts.Add(1) < 3 {
			return errors.New("connection refused")
		}
		return nil
	}
	s := New(discCfg(healthChecked), reg, check, nil, quietLog(), src)
	s.checkGrace = 5 * time.Second
	wantResult(t, s.Scan(t.Context()), ScanResult{DiscoveredCount: 1, RegisteredCount: 1})
	if attempts.Load() != 3 || !reg.Registered("slow") {
		t.Errorf("%d attempts", attempts.Load())
	}
}

func TestQuarantineLiftedByFingerprintChange(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	src := newFakeSource(SourceDocker, ModeAdditive)
	src.set(nil, nil, cand("x", "f1", "10.0.0.1"))
	reg := newFakeRegistry()
	fail := atomic.Bool{}
	fail.Store(true)
	check := func(context.Context, *config.Server) error {
		if fail.Load() {
			return errors.New("no")
		}
		return nil
	}
	s := New(discCfg(healthChecked), reg, check, nil, quietLog(), src)
	s.checkGrace = 0
	s.Scan(ctx)
	if len(s.Quarantined()) != 1 {
		t.Fatal("not quarantined")
	}
	fail.Store(false)
	src.set(nil, nil, cand("x", "f2", "10.0.0.1")) // a fixed image
	wantResult(t, s.Scan(ctx), ScanResult{DiscoveredCount: 1, RegisteredCount: 1})
	if len(s.Quarantined()) != 0 || !reg.Registered("x") {
		t.Error("new fingerprint still quarantined")
	}
}

func TestHealthCheckFailureWithoutQuarantineDrops(t *testing.T) {
	t.Parallel()
	src := newFakeSource(SourceDocker, ModeAdditive)
	src.set(nil, nil, cand("bad", "f1", "10.0.0.1"))
	reg := newFakeRegistry()
	cfg := discCfg(healthChecked, func(d *config.Discovery) { d.Security.QuarantineOnFailure = false })
	s := New(cfg, reg, func(context.Context, *config.Server) error { return errors.New("boom") }, nil, quietLog(), src)
	s.checkGrace = 0
	wantResult(t, s.Scan(t.Context()), ScanResult{DiscoveredCount: 1, ErrorCount: 1})
	if reg.Registered("bad") || len(s.Quarantined()) != 0 || len(s.Pending()) != 0 {
		t.Error("failed candidate kept")
	}
	if msg := s.Sources()[0].ErrorMessage; msg != "bad: health_check_failed: boom" {
		t.Errorf("error_message %q", msg)
	}
}

func TestHealthCheckPanicIsAFailure(t *testing.T) {
	t.Parallel()
	src := newFakeSource(SourceDocker, ModeAdditive)
	src.set(nil, nil, cand("p", "f1", "10.0.0.1"))
	s := New(discCfg(healthChecked), newFakeRegistry(), func(context.Context, *config.Server) error { panic("checker bug") },
		nil, quietLog(), src)
	s.checkGrace = 0
	wantResult(t, s.Scan(t.Context()), ScanResult{DiscoveredCount: 1, QuarantinedCount: 1})
	if q := s.Quarantined(); len(q) != 1 || !strings.Contains(q[0].Reason, "panic in health check: checker bug") {
		t.Errorf("quarantined = %+v", q)
	}
}

func TestFingerprintChangeAfterApproval(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	src := newFakeSource(SourceDocker, ModeAdditive)
	src.set(nil, nil, cand("api", "f1", "10.0.0.1"))
	reg := newFakeRegistry()
	s := New(discCfg(), reg, nil, nil, quietLog(), src)
	s.Scan(ctx)
	s.Approve(ctx, "api")
	reg.takeCalls()

	// Same name, new image: the approval does not carry over.
	src.set(nil, nil, cand("api", "f2", "10.0.0.1"))
	wantResult(t, s.Scan(ctx), ScanResult{DiscoveredCount: 1, UpdatedCount: 1})
	if reg.Registered("api") {
		t.Error("changed server still registered")
	}
	if p := s.Pending(); len(p) != 1 || p[0].Fingerprint != "f2" {
		t.Errorf("pending = %+v", p)
	}
	if c := reg.takeCalls(); !slices.Equal(c, []string{"deregister api"}) {
		t.Errorf("registry calls %v", c)
	}

	// Going back to the approved image re-registers without asking.
	src.set(nil, nil, cand("api", "f1", "10.0.0.1"))
	wantResult(t, s.Scan(ctx), ScanResult{DiscoveredCount: 1, RegisteredCount: 1})
	if !reg.Registered("api") || len(s.Pending()) != 0 {
		t.Error("approved fingerprint not re-registered")
	}
}

func TestRestartedContainerMovesRegistration(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	src := newFakeSource(SourceDocker, ModeAdditive)
	src.set(nil, nil, cand("api", "f1", "10.0.0.1"))
	reg := newFakeRegistry()
	s := New(discCfg(autoRegister), reg, nil, nil, quietLog(), src)
	s.Scan(ctx)

	src.set(nil, nil, cand("api", "f1", "10.0.0.9"))
	wantResult(t, s.Scan(ctx), ScanResult{DiscoveredCount: 1, UpdatedCount: 1})
	if sp := reg.spec("api"); sp == nil || sp.Endpoint != "http://10.0.0.9:8080/mcp" {
		t.Errorf("registered spec %+v", sp)
	}
	wantResult(t, s.Scan(ctx), ScanResult{DiscoveredCount: 1})
}

func TestRemoval(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{ModeAdditive, ModeAuthoritative} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			src := newFakeSource(SourceDocker, mode)
			src.set(nil, nil, cand("a", "f1", "10.0.0.1"), cand("p", "f2", "10.0.0.2"))
			reg := newFakeRegistry()
			s := New(discCfg(), reg, nil, nil, quietLog(), src)
			s.Scan(ctx)
			s.Approve(ctx, "a")

			// A source that cannot be read removes nothing.
			src.set(errors.New("engine down"), nil)
			wantResult(t, s.Scan(ctx), ScanResult{ErrorCount: 1})
			if !reg.Registered("a") || !slices.Equal(pendingNames(s), []string{"p"}) {
				t.Fatal("a failed listing removed servers")
			}
			st := s.Sources()[0]
			if st.IsHealthy || st.ErrorMessage != "engine down" || st.LastDiscovery.IsZero() || st.ServersCount != 2 {
				t.Errorf("source status %+v", st)
			}

			src.set(nil, nil)
			res := s.Scan(ctx)
			if len(s.Pending()) != 0 {
				t.Error("vanished candidate still pending")
			}
			if mode == ModeAuthoritative {
				wantResult(t, res, ScanResult{DeregisteredCount: 1})
				if reg.Registered("a") {
					t.Error("authoritative source kept a vanished server")
				}
			} else {
				wantResult(t, res, ScanResult{})
				if !reg.Registered("a") {
					t.Error("additive source deregistered a server")
				}
			}
			// Coming back: still approved.
			src.set(nil, nil, cand("a", "f1", "10.0.0.3"))
			s.Scan(ctx)
			if sp := reg.spec("a"); sp == nil || sp.Endpoint != "http://10.0.0.3:8080/mcp" {
				t.Errorf("after return: %+v", sp)
			}
		})
	}
}

func TestConfigServersAreNeverTouched(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	src := newFakeSource(SourceDocker, ModeAuthoritative)
	src.set(nil, nil, cand("math", "f1", "10.0.0.1"), cand("ok", "f2", "10.0.0.2"))
	reg := newFakeRegistry("math", "fetch")
	s := New(discCfg(autoRegister), reg, nil, nil, quietLog(), src)
	wantResult(t, s.Scan(ctx), ScanResult{DiscoveredCount: 2, RegisteredCount: 1, ErrorCount: 1})
	if sp := reg.spec("math"); sp.Origin != "" || sp.Endpoint != "" {
		t.Error("config server replaced")
	}
	if msg := s.Sources()[0].ErrorMessage; msg != "math: mcp server id math is served from config, which takes precedence over discovery" {
		t.Errorf("error_message %q", msg)
	}
	src.set(nil, nil)
	wantResult(t, s.Scan(ctx), ScanResult{DeregisteredCount: 1})
	if !reg.Registered("math") || !reg.Registered("fetch") || reg.Registered("ok") {
		t.Error("authoritative removal touched config servers")
	}
	if r := s.Approve(ctx, "math"); r.Approved {
		t.Error("approved a config server name")
	}
}

func TestApprovalsSurviveRestart(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	src := newFakeSource(SourceDocker, ModeAdditive)
	src.set(nil, nil, cand("api", "f1", "10.0.0.1"), cand("bad", "f2", "10.0.0.2"))
	failing := func(_ context.Context, spec *config.Server) error {
		if spec.ID == "bad" {
			return errors.New("refused")
		}
		return nil
	}

	db := openDB(t, dir)
	store, err := OpenStore(ctx, db, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	s := New(discCfg(), newFakeRegistry(), failing, store, quietLog(), src)
	s.checkGrace = 0
	s.Scan(ctx)
	if r := s.Approve(ctx, "api"); !r.Approved {
		t.Fatal(r.Error)
	}
	// Quarantine "bad" through an auto-registering service on the same store.
	s2 := New(discCfg(healthChecked), newFakeRegistry(), failing, store, quietLog(), src)
	s2.checkGrace = 0
	s2.Scan(ctx)

	// A new process: a fresh registry, the database reopened.
	_ = db.Close()
	store2, err := OpenStore(ctx, openDB(t, dir), quietLog())
	if err != nil {
		t.Fatal(err)
	}
	reg := newFakeRegistry()
	var checks atomic.Int32
	s3 := New(discCfg(healthChecked), reg, func(context.Context, *config.Server) error { checks.Add(1); return nil }, store2, quietLog(), src)
	wantResult(t, s3.Scan(ctx), ScanResult{DiscoveredCount: 2, RegisteredCount: 1})
	if !reg.Registered("api") {
		t.Error("approval lost over restart")
	}
	if q := s3.Quarantined(); len(q) != 1 || q[0].Name != "bad" || q[0].Reason != "health_check_failed: refused" {
		t.Errorf("quarantine lost over restart: %+v", q)
	}
	if checks.Load() != 0 {
		t.Error("restored decisions were re-checked")
	}
}

func TestProblemsAndClashes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	docker := newFakeSource(SourceDocker, ModeAdditive)
	files := newFakeSource(SourceFilesystem, ModeAuthoritative)
	docker.set(nil, []Problem{{Subject: "container bad (0123)", Err: errors.New("label mcp.hangar.port: must be 1..65535 (got \"abc\")")}},
		cand("good", "f1", "10.0.0.1"), cand("same", "f2", "10.0.0.2"))
	files.set(nil, nil, fileCand("same", "f3"), fileCand("file", "f4"))
	s := New(discCfg(), newFakeRegistry(), nil, nil, quietLog(), docker, files)

	wantResult(t, s.Scan(ctx), ScanResult{DiscoveredCount: 4, ErrorCount: 2, SourceResults: map[string]int{"docker": 2, "filesystem": 2}})
	if got := pendingNames(s); !slices.Equal(got, []string{"file", "good", "same"}) {
		t.Errorf("pending %v", got)
	}
	for _, p := range s.Pending() {
		if p.Name == "same" && p.Source != "docker" {
			t.Errorf("clash winner %+v", p)
		}
		if p.Name == "file" && p.Mode != "docker" {
			t.Errorf("file mode %q", p.Mode)
		}
	}
	st := s.Sources()
	if len(st) != 2 {
		t.Fatalf("sources %+v", st)
	}
	if st[0].SourceType != "docker" || st[0].Mode != "additive" || !st[0].IsHealthy || !st[0].IsEnabled ||
		st[0].ServersCount != 2 || st[0].LastDiscovery.IsZero() ||
		st[0].ErrorMessage != `container bad (0123): label mcp.hangar.port: must be 1..65535 (got "abc")` {
		t.Errorf("docker status %+v", st[0])
	}
	if st[1].SourceType != "filesystem" || st[1].Mode != "authoritative" ||
		st[1].ErrorMessage != "same: name clash between two docker and filesystem candidates" {
		t.Errorf("filesystem status %+v", st[1])
	}

	// Once the problems are fixed, the message clears.
	docker.set(nil, nil, cand("good", "f1", "10.0.0.1"))
	s.Scan(ctx)
	if msg := s.Sources()[0].ErrorMessage; msg != "" {
		t.Errorf("stale error_message %q", msg)
	}
}

func TestRegisteredOwnerKeepsClashedName(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	docker := newFakeSource(SourceDocker, ModeAdditive)
	files := newFakeSource(SourceFilesystem, ModeAdditive)
	files.set(nil, nil, fileCand("same", "f3"))
	reg := newFakeRegistry()
	s := New(discCfg(autoRegister), reg, nil, nil, quietLog(), docker, files)
	s.Scan(ctx)
	docker.set(nil, nil, cand("same", "f1", "10.0.0.1"))
	wantResult(t, s.Scan(ctx), ScanResult{DiscoveredCount: 2, ErrorCount: 1})
	if reg.Origin("same") != SourceFilesystem {
		t.Error("a newcomer displaced the registered server")
	}
	if msg := s.Sources()[0].ErrorMessage; !strings.Contains(msg, "name clash") {
		t.Errorf("newcomer's source message %q", msg)
	}
}

func TestRegisterFailureIsAnError(t *testing.T) {
	t.Parallel()
	src := newFakeSource(SourceDocker, ModeAdditive)
	src.set(nil, nil, cand("a", "f1", "10.0.0.1"))
	reg := newFakeRegistry()
	reg.failReg = errors.New("full")
	s := New(discCfg(autoRegister), reg, nil, nil, quietLog(), src)
	wantResult(t, s.Scan(t.Context()), ScanResult{DiscoveredCount: 1, ErrorCount: 1})

	s2 := New(discCfg(), reg, nil, nil, quietLog(), src)
	s2.Scan(t.Context())
	if r := s2.Approve(t.Context(), "a"); r.Approved || r.Error != "register: full" {
		t.Errorf("approve = %+v", r)
	}
	if len(s2.Pending()) != 1 {
		t.Error("failed approval lost the candidate")
	}
	if s2.store.Approved("a", "f1") {
		t.Error("the approval of a server that did not register was kept")
	}
}

// An approval that cannot be stored is not answered as a success, and
// changes nothing.
func TestApproveWriteFailureIsAnError(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	src := newFakeSource(SourceDocker, ModeAdditive)
	src.set(nil, nil, cand("a", "f1", "10.0.0.1"))
	db := &fakeDecisions{failPut: errors.New("disk I/O error")}
	st, err := OpenStore(ctx, db, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	reg := newFakeRegistry()
	s := New(discCfg(), reg, nil, st, quietLog(), src)
	s.Scan(ctx)
	r := s.Approve(ctx, "a")
	if r.Approved || r.Error != "approval not saved, nothing changed: disk I/O error" {
		t.Errorf("approve = %+v", r)
	}
	if reg.Registered("a") || len(s.Pending()) != 1 || st.Approved("a", "f1") {
		t.Error("a failed approval changed something")
	}
	// Once the store works again, so does the approval.
	db.setFail(nil)
	if r := s.Approve(ctx, "a"); !r.Approved || !reg.Registered("a") {
		t.Errorf("approve after recovery = %+v", r)
	}
}

func TestSourcePanicIsASourceError(t *testing.T) {
	t.Parallel()
	src := newFakeSource(SourceDocker, ModeAuthoritative)
	src.panics = true
	s := New(discCfg(), newFakeRegistry(), nil, nil, quietLog(), src)
	wantResult(t, s.Scan(t.Context()), ScanResult{ErrorCount: 1})
	if st := s.Sources()[0]; st.IsHealthy || !strings.Contains(st.ErrorMessage, "source exploded") {
		t.Errorf("status %+v", st)
	}
}

func TestStartWatchesAndClose(t *testing.T) {
	t.Parallel()
	src := newFakeSource(SourceDocker, ModeAdditive)
	s := New(discCfg(func(d *config.Discovery) { d.RefreshInterval = time.Hour }), newFakeRegistry(), nil, nil, quietLog(), src)
	s.Start(t.Context())
	defer s.Close()

	waitFor(t, "initial scan", func() bool { return src.lists.Load() >= 1 })
	src.set(nil, nil, cand("new", "f1", "10.0.0.1"))
	src.changes <- struct{}{}
	waitFor(t, "candidate after a change", func() bool { return slices.Equal(pendingNames(s), []string{"new"}) })

}

// gatedSource blocks each List until released.
type gatedSource struct {
	*fakeSource
	entered chan struct{}
	release chan struct{}
}

func (g *gatedSource) List(ctx context.Context) (Listing, error) {
	g.entered <- struct{}{}
	<-g.release
	return g.fakeSource.List(ctx)
}

func TestChangesDuringAScanCoalesce(t *testing.T) {
	t.Parallel()
	src := &gatedSource{fakeSource: newFakeSource(SourceDocker, ModeAdditive),
		entered: make(chan struct{}, 16), release: make(chan struct{})}
	s := New(discCfg(func(d *config.Discovery) { d.RefreshInterval = 0 }), newFakeRegistry(), nil, nil, quietLog(), src)
	s.Start(t.Context())
	defer func() { close(src.release); s.Close() }()

	<-src.entered // the initial scan is running
	for range 10 {
		s.trigger()
	}
	src.release <- struct{}{}
	<-src.entered // exactly one more scan
	src.release <- struct{}{}
	time.Sleep(50 * time.Millisecond)
	if n := len(src.entered); n != 0 {
		t.Errorf("%d extra scans after a burst of changes during a scan", n)
	}
}

func TestManualScansAreSerialized(t *testing.T) {
	t.Parallel()
	src := &slowSource{fakeSource: newFakeSource(SourceDocker, ModeAdditive)}
	s := New(discCfg(), newFakeRegistry(), nil, nil, quietLog(), src)
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() { s.Scan(t.Context()) })
	}
	wg.Wait()
	if src.max.Load() != 1 {
		t.Errorf("%d scans ran at once", src.max.Load())
	}

	// A scan waiting for the lock gives up with its context.
	s.sem <- struct{}{}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if r := s.Scan(ctx); r.ErrorCount != 1 {
		t.Errorf("cancelled scan = %+v", r)
	}
	if r := s.Approve(ctx, "x"); r.Approved || r.Error == "" {
		t.Errorf("cancelled approve = %+v", r)
	}
	<-s.sem
}

type slowSource struct {
	*fakeSource
	cur, max atomic.Int32
}

func (s *slowSource) List(ctx context.Context) (Listing, error) {
	n := s.cur.Add(1)
	defer s.cur.Add(-1)
	for {
		m := s.max.Load()
		if n <= m || s.max.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(10 * time.Millisecond)
	return s.fakeSource.List(ctx)
}

func TestPanickingWatchIsRestarted(t *testing.T) {
	t.Parallel()
	src := &panicWatch{fakeSource: newFakeSource(SourceDocker, ModeAdditive)}
	s := New(discCfg(), newFakeRegistry(), nil, nil, quietLog(), src)
	s.Start(t.Context())
	waitFor(t, "watch restarted", func() bool { return src.calls.Load() >= 2 })
	s.Close()
}

type panicWatch struct {
	*fakeSource
	calls atomic.Int32
}

func (p *panicWatch) Watch(ctx context.Context, onChange func()) {
	if p.calls.Add(1) == 1 {
		panic("watch bug")
	}
	<-ctx.Done()
}

func TestBuildSources(t *testing.T) {
	t.Parallel()
	cfg := discCfg(func(d *config.Discovery) {
		d.Sources = []config.Source{{Type: "docker"}, {Type: "filesystem", Path: "/x", Mode: "authoritative"}}
	})
	if _, err := BuildSources(cfg, nil, nil, quietLog()); err == nil {
		t.Error("docker source without an engine: no error")
	}
	srcs, err := BuildSources(cfg, fakeDocker{}, nil, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range srcs {
		got[s.Type()] = s.Mode()
	}
	if !maps.Equal(got, map[string]string{"docker": "additive", "filesystem": "authoritative"}) {
		t.Errorf("sources %v", got)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A candidate is checked before it is offered for approval: one that
// answers is pending, one that does not is quarantined with its reason,
// also without auto_register.
func TestPendingCandidatesAreCheckedFirst(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cases := []struct {
		name        string
		cfg         func(*config.Discovery)
		wantPending []string
		wantQuar    []string
		wantResult  ScanResult
	}{
		{"quarantine on failure", func(*config.Discovery) {}, []string{"good"}, []string{"bad"},
			ScanResult{DiscoveredCount: 2, QuarantinedCount: 1}},
		{"no quarantine: the failure is a source problem", func(d *config.Discovery) { d.Security.QuarantineOnFailure = false },
			[]string{"good"}, nil, ScanResult{DiscoveredCount: 2, ErrorCount: 1}},
		{"checks off: both offered", func(d *config.Discovery) { d.Security.RequireHealthCheck = false },
			[]string{"bad", "good"}, nil, ScanResult{DiscoveredCount: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := newFakeSource(SourceDocker, ModeAdditive)
			src.set(nil, nil, cand("good", "f1", "10.0.0.1"), cand("bad", "f2", "10.0.0.2"))
			var checked atomic.Int32
			check := func(_ context.Context, spec *config.Server) error {
				checked.Add(1)
				if spec.ID == "bad" {
					return errors.New("initialize: connection refused")
				}
				return nil
			}
			reg := newFakeRegistry()
			s := New(discCfg(tc.cfg), reg, check, nil, quietLog(), src)
			s.checkGrace = 0
			wantResult(t, s.Scan(ctx), tc.wantResult)
			if got := pendingNames(s); !slices.Equal(got, tc.wantPending) {
				t.Errorf("pending = %v, want %v", got, tc.wantPending)
			}
			var quar []string
			for _, q := range s.Quarantined() {
				quar = append(quar, q.Name)
				if q.Reason != "health_check_failed: initialize: connection refused" {
					t.Errorf("quarantine reason %q", q.Reason)
				}
			}
			if !slices.Equal(quar, tc.wantQuar) {
				t.Errorf("quarantined = %v, want %v", quar, tc.wantQuar)
			}
			if reg.Registered("good") || reg.Registered("bad") {
				t.Error("a candidate was registered without approval")
			}
			// A second scan keeps the decisions without checking again.
			n := checked.Load()
			s.Scan(ctx)
			if tc.wantQuar != nil && checked.Load() != n {
				t.Errorf("checked again: %d checks, then %d", n, checked.Load())
			}
		})
	}
}

// A candidate whose name the catalog refuses (a config server's, a
// group's) is listed as refused with the reason, is never checked or
// registered, cannot be approved, and is offered once the name is free.
func TestRefusedCandidates(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	src := newFakeSource(SourceDocker, ModeAdditive)
	src.set(nil, nil, cand("math", "f1", "10.0.0.1"))
	reg := newFakeRegistry("math")
	var checked atomic.Int32
	s := New(discCfg(), reg, func(context.Context, *config.Server) error { checked.Add(1); return nil }, nil, quietLog(), src)
	wantResult(t, s.Scan(ctx), ScanResult{DiscoveredCount: 1, ErrorCount: 1})
	p := s.Pending()
	const reason = "mcp server id math is served from config, which takes precedence over discovery"
	if len(p) != 1 || p[0].Status != StatusRefused || p[0].Reason != reason {
		t.Fatalf("pending = %+v", p)
	}
	if checked.Load() != 0 {
		t.Error("a refused candidate was health-checked")
	}
	if r := s.Approve(ctx, "math"); r.Approved || r.Error != "refused: "+reason {
		t.Errorf("approve = %+v", r)
	}
	if calls := reg.takeCalls(); len(calls) != 0 {
		t.Errorf("registry calls %v", calls)
	}

	// The config server goes away: the name is free, the candidate is
	// checked and offered.
	reg.mu.Lock()
	delete(reg.servers, "math")
	reg.mu.Unlock()
	s.Scan(ctx)
	if p := s.Pending(); len(p) != 1 || p[0].Status != StatusPending || checked.Load() != 1 {
		t.Fatalf("pending = %+v, checks %d", p, checked.Load())
	}
	if r := s.Approve(ctx, "math"); !r.Approved {
		t.Fatalf("approve = %+v", r)
	}

	// The name is taken again (a reload): the claim stays, refused.
	reg.mu.Lock()
	delete(reg.servers, "math")
	reg.servers["math"] = &config.Server{ID: "math"}
	reg.mu.Unlock()
	if p := s.Pending(); len(p) != 1 || p[0].Status != StatusRefused || p[0].Reason != reason {
		t.Errorf("shadowed claim: pending = %+v", p)
	}
	if r := s.Approve(ctx, "math"); r.Approved || r.Error != "refused: "+reason {
		t.Errorf("approve of a shadowed claim = %+v", r)
	}
}

// Without auto_register, only candidates reachable where they run (HTTP
// labels) are checked before they are offered: a file's image is not
// started, a stdio container's stdin not taken.
func TestOnlyRunningHTTPCandidatesArePreChecked(t *testing.T) {
	t.Parallel()
	src := newFakeSource(SourceFilesystem, ModeAdditive)
	attach := cand("attached", "f3", "10.0.0.3")
	attach.Spec.Mode, attach.Spec.Transport, attach.Spec.Endpoint, attach.Spec.AttachContainer =
		config.ModeDocker, config.TransportStdio, "", "c0ffee"
	src.set(nil, nil, fileCand("file", "f1"), cand("web", "f2", "10.0.0.2"), attach)
	var checked []string
	var mu sync.Mutex
	check := func(_ context.Context, spec *config.Server) error {
		mu.Lock()
		checked = append(checked, spec.ID)
		mu.Unlock()
		return nil
	}
	s := New(discCfg(), newFakeRegistry(), check, nil, quietLog(), src)
	s.Scan(t.Context())
	if !slices.Equal(checked, []string{"web"}) {
		t.Errorf("checked %v, want only web", checked)
	}
	if got := pendingNames(s); !slices.Equal(got, []string{"attached", "file", "web"}) {
		t.Errorf("pending %v", got)
	}
}

// A check in flight holds no scan: a container that appears meanwhile is
// offered at once; the slow one is decided when its check ends.
func TestChecksDoNotBlockTheScanLoop(t *testing.T) {
	t.Parallel()
	src := newFakeSource(SourceDocker, ModeAdditive)
	src.set(nil, nil, cand("slow", "f1", "10.0.0.1"))
	started, release := make(chan struct{}), make(chan struct{})
	check := func(ctx context.Context, spec *config.Server) error {
		if spec.ID == "slow" {
			close(started)
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	}
	s := New(discCfg(), newFakeRegistry(), check, nil, quietLog(), src)
	s.Start(t.Context())
	defer s.Close()
	<-started

	src.set(nil, nil, cand("slow", "f1", "10.0.0.1"), cand("quick", "f2", "10.0.0.2"))
	src.changes <- struct{}{}
	waitFor(t, "quick offered while slow is checked", func() bool { return slices.Equal(pendingNames(s), []string{"quick"}) })
	close(release)
	waitFor(t, "slow offered after its check", func() bool { return slices.Equal(pendingNames(s), []string{"quick", "slow"}) })
}

// TestDecidedOnAnotherReplica: an approval stored by another replica
// (another service on the same store) registers the candidate waiting
// here once Decided is told; a withdrawn approval offers it again.
func TestDecidedOnAnotherReplica(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := openDB(t, t.TempDir())
	src := newFakeSource(SourceDocker, ModeAdditive)
	src.set(nil, nil, cand("api", "f1", "10.0.0.1"), cand("web", "f2", "10.0.0.2"))
	open := func() (*Service, *Store, *fakeRegistry) {
		st, err := OpenStore(ctx, db, quietLog())
		if err != nil {
			t.Fatal(err)
		}
		reg := newFakeRegistry()
		s := New(discCfg(), reg, nil, st, quietLog(), src)
		s.Scan(ctx)
		return s, st, reg
	}
	s1, st1, _ := open()
	s2, _, reg2 := open()

	if r := s1.Approve(ctx, "api"); !r.Approved {
		t.Fatal(r.Error)
	}
	if reg2.Registered("api") {
		t.Fatal("registered before being told")
	}
	for _, name := range []string{"api", "web", "gone"} {
		if err := s2.Decided(ctx, name); err != nil {
			t.Fatalf("Decided(%s): %v", name, err)
		}
	}
	if !reg2.Registered("api") || !slices.Equal(pendingNames(s2), []string{"web"}) {
		t.Fatalf("after the other replica's approval: registered %v, pending %v", reg2.Registered("api"), pendingNames(s2))
	}
	// A scan keeps it: the approval is this replica's now too.
	s2.Scan(ctx)
	if !reg2.Registered("api") {
		t.Fatal("a scan deregistered the approved server")
	}

	if err := st1.Revoke("api"); err != nil {
		t.Fatal(err)
	}
	if err := s2.Decided(ctx, "api"); err != nil {
		t.Fatal(err)
	}
	if reg2.Registered("api") || !slices.Equal(pendingNames(s2), []string{"api", "web"}) {
		t.Errorf("after the approval was withdrawn: registered %v, pending %v", reg2.Registered("api"), pendingNames(s2))
	}
}

// TestApprovedWhileChecked: a candidate that another replica approves
// while this one still checks it (Decided leaves it to the check) is
// registered when the check passes, not offered for approval again.
func TestApprovedWhileChecked(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := openDB(t, t.TempDir())
	src := newFakeSource(SourceDocker, ModeAdditive)
	src.set(nil, nil, cand("api", "f1", "10.0.0.1"))
	st1, err := OpenStore(ctx, db, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	s1 := New(discCfg(), newFakeRegistry(), nil, st1, quietLog(), src)
	s1.Scan(ctx)

	started, release := make(chan struct{}), make(chan struct{})
	check := func(ctx context.Context, _ *config.Server) error {
		close(started)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}
	st2, err := OpenStore(ctx, db, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	reg2 := newFakeRegistry()
	s2 := New(discCfg(), reg2, check, st2, quietLog(), src)
	s2.Start(ctx)
	defer s2.Close()
	<-started

	if r := s1.Approve(ctx, "api"); !r.Approved {
		t.Fatal(r.Error)
	}
	if err := s2.Decided(ctx, "api"); err != nil {
		t.Fatal(err)
	}
	close(release)
	waitFor(t, "api registered after its check", func() bool { return reg2.Registered("api") })
	if got := pendingNames(s2); len(got) != 0 {
		t.Errorf("pending %v after the approval elsewhere", got)
	}
}
