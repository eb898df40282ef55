// Package discovery finds MCP servers that config.yaml does not list:
// running containers labelled mcp.hangar.enabled=true and provider files in
// a directory. Candidates wait for an operator's approval (hangar_approve)
// unless auto_register is on, or are rejected (the dashboard's Reject, a
// quarantine); approvals and quarantine decisions survive a restart.
//
// Sources only list and watch; the Service decides. Labels are decoded by a
// pure function (Decode), so every rule about them is tested without Docker.
package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/retry"
)

// Log field names.
const (
	FieldServer      = "mcp_server"
	FieldSource      = "source"
	FieldFingerprint = "fingerprint"
	FieldReason      = "reason"
	FieldPath        = "path"
	FieldError       = "error"
	FieldDurationMs  = "duration_ms"
)

// Source modes: an authoritative source deregisters the servers it
// registered once it no longer lists them; an additive one keeps them
// (a stopped container may start again) until the container or service
// they came from is removed (Removals).
const (
	ModeAdditive      = "additive"
	ModeAuthoritative = "authoritative"
)

// Wire strings of the discovery tools (seed 001).
const (
	// StatusRegistered is ApproveResult.Status on success.
	StatusRegistered = "registered"
	// ReasonHealthCheckFailed starts the reason of a quarantine.
	ReasonHealthCheckFailed = "health_check_failed"
	// ReasonRejected starts the reason of an operator's rejection; the
	// operator's identity follows.
	ReasonRejected = "rejected by operator "
)

// Errors of Approve and Reject, wrapped with the name asked for. The
// not-found text is the same whether the name is unknown, registered or
// being checked: a caller learns nothing beyond the two lists.
var (
	ErrNotFound           = errors.New("not found in pending or quarantine")
	ErrAlreadyQuarantined = errors.New("already quarantined")
)

const (
	// listLimit caps sources listed at once.
	listLimit = 4
	// checkLimit caps health checks run at once.
	checkLimit = 4
	// restartPause is how long a panicked loop waits before it restarts.
	restartPause = time.Second
	// defaultCheckGrace is how long a failing health check is retried
	// before the candidate is quarantined.
	defaultCheckGrace = 10 * time.Second
)

// Source finds candidates. List returns what is there now; Watch calls
// onChange when that may have changed, until ctx ends (it may return at
// once if the source cannot watch).
type Source interface {
	Type() string // SourceDocker | SourceSwarm | SourceFilesystem
	Mode() string // ModeAdditive | ModeAuthoritative
	List(ctx context.Context) (Listing, error)
	Watch(ctx context.Context, onChange func())
}

// Removals is a source whose candidates are engine objects (containers,
// services). Removed tells whether the object of id was removed for good:
// its server is deregistered whatever the source's mode and filters (the
// engine's remove events carry no labels a filter could match, and the
// object cannot come back). A scan asks about each registered server its
// listing lacks, so the periodic re-list catches a missed event.
type Removals interface {
	Removed(ctx context.Context, id string) (bool, error)
}

var (
	_ Removals = (*Docker)(nil)
	_ Removals = (*Swarm)(nil)
)

// Listing is one source's answer. An error of List means the source could
// not be read at all; a Problem is one item that could not be decoded.
type Listing struct {
	Candidates []Candidate
	Problems   []Problem
}

// Problem is one container or file that is not a valid candidate.
type Problem struct {
	Subject string // "container web (0123456789ab)", "file math.yaml"
	Err     error
}

func (p Problem) String() string { return p.Subject + ": " + p.Err.Error() }

// Registry is where discovered servers are claimed: the gateway's catalog
// (its discovery source), which decides whether a name is served. The
// service keeps no list of taken IDs of its own.
type Registry interface {
	// Register claims spec.ID. The claim is kept even when it is refused
	// (a group's ID, a config server's): the error says why it is not
	// served now, and it is served once what holds the ID goes away.
	Register(spec *config.Server) error
	// Deregister withdraws the claim, stopping the server if it was served.
	Deregister(ctx context.Context, id string) error
	// Refusal says why a discovered server named id is not served, or
	// would not be if claimed; nil when it is or would be.
	Refusal(id string) error
}

// Checker tells whether a candidate answers MCP (connect and tools/list).
type Checker func(ctx context.Context, spec *config.Server) error

// ScanResult is hangar_discover's answer.
type ScanResult struct {
	DiscoveredCount   int
	RegisteredCount   int
	UpdatedCount      int
	DeregisteredCount int
	QuarantinedCount  int
	ErrorCount        int
	Duration          time.Duration
	SourceResults     map[string]int // source type → candidates found
}

// PendingEntry is a candidate waiting for approval, or one that is
// refused its name.
type PendingEntry struct {
	Name         string
	Source       string
	Mode         string // the server mode it would get: remote, docker, ...
	DiscoveredAt time.Time
	Fingerprint  string
	// Status is StatusPending, or StatusRefused when the catalog does not
	// serve the name (Reason says why: a group's ID, a config server's).
	Status string
	Reason string
	// Approved: the candidate was approved (its claim stands) and is
	// listed only because its name is refused meanwhile. Approving it
	// again changes nothing; rejecting it revokes the approval.
	Approved bool
}

// Statuses of a PendingEntry.
const (
	StatusPending = "pending"
	StatusRefused = "refused"
)

// QuarantineEntry is a candidate that failed its health check.
type QuarantineEntry struct {
	Name           string
	Source         string
	Reason         string
	QuarantineTime time.Time
}

// ApproveResult is hangar_approve's answer.
type ApproveResult struct {
	Approved bool
	Server   string
	Status   string // StatusRegistered on success
	Error    string // on failure
}

// SourceStatus is one source in hangar_sources.
type SourceStatus struct {
	SourceType    string
	Mode          string
	IsHealthy     bool
	IsEnabled     bool
	LastDiscovery time.Time // zero before the first successful listing
	ServersCount  int
	// Servers are the names ServersCount counts.
	Servers []string
	// ErrorMessage is the source's error, else its items' problems joined;
	// "" when none.
	ErrorMessage string
}

type status int

const (
	pending status = iota
	quarantined
	// registered: the service claimed the name in the catalog (which may
	// still refuse to serve it).
	registered
	// refused: the catalog would refuse the name; the candidate is not
	// checked or claimed, and is decided afresh on every scan.
	refused
	// checking: a health check is in flight (entry.check); its result
	// decides.
	checking
)

// entry is the service's knowledge of one name. Entries are replaced, never
// modified, so readers may keep one after unlocking.
type entry struct {
	cand   Candidate
	source int // index in Service.sources
	status status
	since  time.Time // discovered, quarantined or registered at
	reason string    // quarantine or refusal reason
	check  *checkJob // status checking: the check in flight
}

type sourceState struct {
	healthy  bool
	last     time.Time
	count    int
	names    []string // the candidates' names, for callers limited to some servers
	err      string
	problems []string
}

// Service runs the sources and decides what gets registered.
type Service struct {
	cfg     config.Discovery
	reg     Registry
	check   Checker
	store   *Store
	sources []Source
	log     *slog.Logger
	now     func() time.Time
	// checkGrace bounds the retries of a failing health check.
	checkGrace time.Duration

	// sem serializes scans and approvals (a one-slot semaphore, so a
	// waiter can give up when its context ends).
	sem chan struct{}
	// kick asks the scan loop for a scan; one slot, so changes that arrive
	// during a scan coalesce into one more scan.
	kick chan struct{}

	// mu guards entries and status against readers. Only the holder of sem
	// writes them, so it may read them without mu.
	mu      sync.RWMutex
	entries map[string]*entry
	status  []sourceState

	startOnce sync.Once
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	// scanned is closed when the scan loop's first scan is over.
	scanned     chan struct{}
	scannedOnce sync.Once

	// life bounds the health checks, which outlive the scan that started
	// them; Close ends it. checkSem caps the checks in flight.
	life     context.Context
	endLife  context.CancelFunc
	checkSem chan struct{}

	// OnScan, when set before Start, sees every scan's result (metrics).
	OnScan func(ScanResult)
	// OnChange, when set before Start, is told the names whose place in
	// the pending or quarantine list changed (offered, quarantined,
	// rejected, approved, gone), once per scan, check or decision, after
	// the service is unlocked: those lists are not in the catalog, so its
	// change batches cannot tell a reader of them.
	OnChange func(names []string)
	// changed collects OnChange's names until unlock; guarded by mu.
	changed []string
}

// New returns a service over sources. A nil store keeps decisions in
// memory only; a nil check lets every candidate pass.
func New(cfg config.Discovery, reg Registry, check Checker, store *Store, log *slog.Logger, sources ...Source) *Service {
	if store == nil {
		store = NewMemoryStore()
	}
	if log == nil {
		log = slog.Default()
	}
	life, endLife := context.WithCancel(context.Background())
	return &Service{
		life:       life,
		endLife:    endLife,
		checkSem:   make(chan struct{}, checkLimit),
		cfg:        cfg,
		reg:        reg,
		check:      check,
		store:      store,
		sources:    sources,
		log:        log,
		now:        time.Now,
		checkGrace: defaultCheckGrace,
		sem:        make(chan struct{}, 1),
		kick:       make(chan struct{}, 1),
		scanned:    make(chan struct{}),
		entries:    map[string]*entry{},
		status:     make([]sourceState, len(sources)),
	}
}

// BuildSources makes the sources cfg lists. api may be nil when no source
// is of type docker or swarm.
func BuildSources(cfg config.Discovery, api DockerAPI, preferNetworks []string, log *slog.Logger) ([]Source, error) {
	var out []Source
	for i, src := range cfg.Sources {
		switch src.Type {
		case SourceDocker:
			if api == nil {
				return nil, fmt.Errorf("discovery.sources[%d]: docker source without a Docker engine", i)
			}
			out = append(out, NewDocker(api, src, preferNetworks, log))
		case SourceSwarm:
			sw, ok := api.(SwarmAPI)
			if !ok {
				return nil, fmt.Errorf("discovery.sources[%d]: swarm source without a Docker engine", i)
			}
			out = append(out, NewSwarm(sw, src, preferNetworks, log))
		case SourceFilesystem:
			out = append(out, NewFilesystem(src, log))
		default:
			return nil, fmt.Errorf("discovery.sources[%d]: unknown type %q", i, src.Type)
		}
	}
	return out, nil
}

// Start scans once, then rescans when a source reports a change and every
// refresh interval, until ctx ends or Close is called.
func (s *Service) Start(ctx context.Context) {
	s.startOnce.Do(func() {
		ctx, s.cancel = context.WithCancel(ctx)
		s.trigger()
		s.spawn(ctx, "scan loop", s.scanLoop)
		for _, src := range s.sources {
			s.spawn(ctx, src.Type()+" watch", func(ctx context.Context) { src.Watch(ctx, s.trigger) })
		}
		if s.cfg.RefreshInterval > 0 {
			s.spawn(ctx, "resync", s.resyncLoop)
		}
	})
}

// Close stops the loops and waits for them. Registered servers stay.
func (s *Service) Close() {
	if s.cancel != nil {
		s.cancel()
	}
	s.endLife()
	s.wg.Wait()
}

// trigger asks for a scan without waiting for it.
func (s *Service) trigger() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// spawn runs fn in a goroutine the service owns. A panic is logged and fn
// restarted after a pause; a normal return ends it.
func (s *Service) spawn(ctx context.Context, what string, fn func(context.Context)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for ctx.Err() == nil {
			if !s.panicked(what, func() { fn(ctx) }) {
				return
			}
			if !retry.Sleep(ctx, restartPause) {
				return
			}
		}
	}()
}

func (s *Service) panicked(what string, fn func()) (p bool) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("panic in discovery; recovered", "loop", what, FieldError, r)
			p = true
		}
	}()
	fn()
	return false
}

func (s *Service) scanLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		}
		// Checks finish on their own: the loop never waits for one.
		s.scan(ctx)
		s.scannedOnce.Do(func() { close(s.scanned) })
	}
}

// Scanned is closed once Start's first scan is over, whether its sources
// answered or not: what that listing decides without a health check (the
// servers approved earlier) is registered by then; health checks are not
// waited for.
func (s *Service) Scanned() <-chan struct{} { return s.scanned }

func (s *Service) resyncLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.trigger()
		}
	}
}

func (s *Service) lock(ctx context.Context) error {
	select {
	case s.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// unlock releases the scan lock, then tells OnChange what the holder
// changed.
func (s *Service) unlock() {
	s.mu.Lock()
	changed := s.changed
	s.changed = nil
	s.mu.Unlock()
	<-s.sem
	if len(changed) > 0 && s.OnChange != nil {
		slices.Sort(changed)
		s.OnChange(slices.Compact(changed))
	}
}

// listed is the list an entry shows in: "pending" (Pending, also when
// refused), "quarantined", or "" (none: registered, being checked, gone).
func listed(e *entry) string {
	if e == nil {
		return ""
	}
	switch e.status {
	case pending, refused:
		return "pending"
	case quarantined:
		return "quarantined"
	}
	return ""
}

func (s *Service) set(name string, e *entry) {
	s.mu.Lock()
	if listed(s.entries[name]) != listed(e) {
		s.changed = append(s.changed, name)
	}
	s.entries[name] = e
	s.mu.Unlock()
}

func (s *Service) drop(name string) {
	s.mu.Lock()
	if listed(s.entries[name]) != "" {
		s.changed = append(s.changed, name)
	}
	delete(s.entries, name)
	s.mu.Unlock()
}

// scan is the state of one Scan.
type scan struct {
	res      ScanResult
	problems [][]string // per source
	checks   []*checkJob
}

type checkJob struct {
	cand     Candidate
	source   int
	updated  bool // already counted as updated
	register bool // auto_register: register on success, else offer for approval
	// done is closed when the result is applied (or dropped); res then
	// holds what it changed.
	done chan struct{}
	res  ScanResult
}

func (sc *scan) problem(src int, subject string, err error) {
	sc.problems[src] = append(sc.problems[src], subject+": "+err.Error())
	sc.res.ErrorCount++
}

// Scan lists every source and brings registrations in line with what they
// found, and waits for the health checks it started (hangar_discover).
func (s *Service) Scan(ctx context.Context) ScanResult {
	r, jobs := s.scan(ctx)
	for _, j := range jobs {
		select {
		case <-j.done:
		case <-ctx.Done():
			return r
		}
		r.RegisteredCount += j.res.RegisteredCount
		r.QuarantinedCount += j.res.QuarantinedCount
		r.ErrorCount += j.res.ErrorCount
	}
	return r
}

// scan is Scan without waiting for the checks: their results are applied
// as they come, each under the scan lock.
func (s *Service) scan(ctx context.Context) (ScanResult, []*checkJob) {
	if err := s.lock(ctx); err != nil {
		return ScanResult{ErrorCount: 1, SourceResults: map[string]int{}}, nil
	}
	defer s.unlock()

	began := s.now()
	sc := &scan{res: ScanResult{SourceResults: map[string]int{}}, problems: make([][]string, len(s.sources))}
	listings, errs := s.listAll(ctx)

	type found struct {
		cand   Candidate
		source int
	}
	var order []string
	byName := map[string]found{}
	for i, l := range listings {
		typ := s.sources[i].Type()
		sc.res.SourceResults[typ] += len(l.Candidates)
		if errs[i] != nil {
			sc.res.ErrorCount++
			s.log.Warn("discovery source failed", FieldSource, typ, FieldError, errs[i])
			continue
		}
		sc.res.DiscoveredCount += len(l.Candidates)
		for _, p := range l.Problems {
			sc.problem(i, p.Subject, p.Err)
		}
		for _, c := range l.Candidates {
			if prev, dup := byName[c.Name]; dup {
				// The source that registered the name keeps it; otherwise
				// the first source listed wins.
				loser := i
				if e := s.entries[c.Name]; e != nil && e.status == registered && e.source == i && prev.source != i {
					byName[c.Name] = found{c, i}
					loser = prev.source
				}
				sc.problem(loser, c.Name, fmt.Errorf("name clash between two %s candidates",
					strings.Join(uniq(s.sources[prev.source].Type(), s.sources[i].Type()), " and ")))
				continue
			}
			byName[c.Name] = found{c, i}
			order = append(order, c.Name)
		}
	}

	for _, name := range order {
		f := byName[name]
		s.reconcile(ctx, sc, f.cand, f.source)
	}
	jobs := s.startChecks(sc.checks)
	// Checks an earlier scan (the watch loop's) started are still to wait
	// for: hangar_discover answers once every candidate it reports has
	// its verdict, whoever started the check. Their counts stay with the
	// scan that started them.
	for _, e := range s.entries {
		if e.status == checking && e.check != nil && !slices.Contains(jobs, e.check) {
			jobs = append(jobs, &checkJob{done: e.check.done})
		}
	}

	// What a source that answered no longer lists is gone.
	for _, name := range slices.Sorted(maps.Keys(s.entries)) {
		e := s.entries[name]
		if _, ok := byName[name]; ok || errs[e.source] != nil {
			continue
		}
		s.gone(ctx, sc, name, e)
	}

	if ctx.Err() == nil {
		var fresh [][2]string // source type, problem
		s.mu.Lock()
		for i := range s.sources {
			st := &s.status[i]
			if errs[i] != nil {
				st.healthy, st.err = false, errs[i].Error()
				continue
			}
			for _, p := range sc.problems[i] {
				if !slices.Contains(st.problems, p) {
					fresh = append(fresh, [2]string{s.sources[i].Type(), p})
				}
			}
			names := make([]string, 0, len(listings[i].Candidates))
			for _, c := range listings[i].Candidates {
				names = append(names, c.Name)
			}
			*st = sourceState{healthy: true, last: began, count: len(listings[i].Candidates), names: names, problems: sc.problems[i]}
		}
		s.mu.Unlock()
		// Each problem is logged once, not on every scan that finds it again.
		for _, p := range fresh {
			s.log.Warn("discovery candidate skipped", FieldSource, p[0], FieldError, p[1])
		}
	}

	sc.res.Duration = s.now().Sub(began)
	r := sc.res
	// A scan that only finds the same problems again is not news.
	level := slog.LevelDebug
	if r.RegisteredCount+r.UpdatedCount+r.DeregisteredCount+r.QuarantinedCount > 0 {
		level = slog.LevelInfo
	}
	s.log.Log(ctx, level, "discovery scan", "discovered", r.DiscoveredCount, "registered", r.RegisteredCount,
		"updated", r.UpdatedCount, "deregistered", r.DeregisteredCount, "quarantined", r.QuarantinedCount,
		"errors", r.ErrorCount, FieldDurationMs, float64(r.Duration.Microseconds())/1000)
	if s.OnScan != nil {
		s.OnScan(r)
	}
	return r, jobs
}

func (s *Service) listAll(ctx context.Context) ([]Listing, []error) {
	listings := make([]Listing, len(s.sources))
	errs := make([]error, len(s.sources))
	var g errgroup.Group
	g.SetLimit(listLimit)
	for i, src := range s.sources {
		g.Go(func() error {
			defer func() {
				if r := recover(); r != nil {
					errs[i] = fmt.Errorf("panic listing %s source: %v", src.Type(), r)
				}
			}()
			listings[i], errs[i] = src.List(ctx)
			return nil
		})
	}
	_ = g.Wait()
	return listings, errs
}

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

// sameAddress: the fingerprint leaves out where a container is reached (its
// IP, its ID), so a restarted container keeps its approval but must be
// re-registered at its new address.
func sameAddress(a, b *config.Server) bool {
	return a.Endpoint == b.Endpoint && a.AttachContainer == b.AttachContainer
}

func address(s *config.Server) string {
	if s.AttachContainer != "" {
		return "container " + s.AttachContainer
	}
	return s.Endpoint
}

// reconcile decides about one present candidate.
func (s *Service) reconcile(ctx context.Context, sc *scan, c Candidate, src int) {
	name := c.Name
	e := s.entries[name]
	prev := e
	updated := false
	if e != nil && e.status == refused {
		// A refusal is no decision: look again.
		e = nil
	}
	if e != nil && e.status == registered {
		if e.cand.Fingerprint == c.Fingerprint {
			if sameAddress(e.cand.Spec, c.Spec) {
				if e.source != src || e.cand.ContainerID != c.ContainerID {
					s.set(name, &entry{cand: c, source: src, status: registered, since: e.since})
				}
				return
			}
			if err := s.reg.Deregister(ctx, name); err != nil {
				sc.problem(src, name, fmt.Errorf("deregister before moving: %w", err))
				return
			}
			s.drop(name)
			sc.res.UpdatedCount++
			s.log.Info("discovered MCP server moved; re-registering", FieldServer, name,
				"from", address(e.cand.Spec), "to", address(c.Spec))
			s.register(sc, c, src, true)
			return
		}
		// Changed since it was registered: it must be decided afresh.
		if err := s.reg.Deregister(ctx, name); err != nil {
			sc.problem(src, name, fmt.Errorf("deregister changed server: %w", err))
			return
		}
		s.log.Info("discovered MCP server changed; deregistered", FieldServer, name, FieldFingerprint, c.Fingerprint)
		s.drop(name)
		sc.res.UpdatedCount++
		updated, e = true, nil
	}

	if e != nil && e.status == checking && (!sameAddress(e.cand.Spec, c.Spec) || e.cand.ContainerID != c.ContainerID) {
		// Moved while being checked: that check is of the old address.
		e = nil
	}
	if e != nil && e.cand.Fingerprint == c.Fingerprint {
		// Still pending, quarantined or being checked; keep the decision,
		// take the new address.
		if e.source != src || !sameAddress(e.cand.Spec, c.Spec) || e.cand.ContainerID != c.ContainerID {
			s.set(name, &entry{cand: c, source: src, status: e.status, since: e.since, reason: e.reason, check: e.check})
		}
		return
	}
	if e != nil && e.status == quarantined {
		if err := s.store.ClearQuarantine(name); err != nil {
			s.log.Error("discovery store", FieldServer, name, FieldError, err)
		}
	}

	if s.store.Approved(name, c.Fingerprint) {
		s.register(sc, c, src, updated)
		return
	}
	if q, ok := s.store.Quarantine(name); ok && q.Fingerprint == c.Fingerprint {
		s.set(name, &entry{cand: c, source: src, status: quarantined, since: q.QuarantinedAt, reason: q.Reason})
		return
	}
	if err := s.refusal(name); err != nil {
		// Not worth a health check: the name cannot be served.
		s.refuse(c, src, prev, err)
		sc.problem(src, name, err)
		return
	}
	// Checked before it is offered, so an operator approves only what
	// answers MCP: a running container's declared port and path. Other
	// candidates are checked only when they are registered at once: the
	// check would attach to a container's stdin (which a server may take
	// as its one session) or start an image nobody approved.
	if s.cfg.Security.RequireHealthCheck && s.check != nil && (s.cfg.AutoRegister || c.Spec.Mode == config.ModeRemote) {
		job := &checkJob{cand: c, source: src, updated: updated, register: s.cfg.AutoRegister, done: make(chan struct{})}
		s.set(name, &entry{cand: c, source: src, status: checking, since: s.now(), check: job})
		sc.checks = append(sc.checks, job)
		return
	}
	if s.cfg.AutoRegister {
		s.register(sc, c, src, updated)
		return
	}
	s.offer(c, src)
}

// refusal is why the catalog would not serve a discovered server named
// name (nil: it would).
func (s *Service) refusal(name string) error {
	if s.reg == nil {
		return nil
	}
	return s.reg.Refusal(name)
}

// refuse records a candidate whose name the catalog refuses (the scan's
// problem list logs it once). prev is the name's entry before this scan.
func (s *Service) refuse(c Candidate, src int, prev *entry, err error) {
	since := s.now()
	if prev != nil && prev.status == refused {
		since = prev.since
	}
	s.set(c.Name, &entry{cand: c, source: src, status: refused, since: since, reason: err.Error()})
}

// offer makes c a candidate pending approval.
func (s *Service) offer(c Candidate, src int) {
	s.set(c.Name, &entry{cand: c, source: src, status: pending, since: s.now()})
	s.log.Info("discovered MCP server pending approval", FieldServer, c.Name, FieldSource, c.Source,
		FieldFingerprint, c.Fingerprint)
}

func (s *Service) register(sc *scan, c Candidate, src int, updated bool) {
	spec := *c.Spec
	if err := s.reg.Register(&spec); err != nil {
		// The claim stands (it is served once the name is free) and the
		// refusal shows in hangar_discovered and hangar_sources.
		s.set(c.Name, &entry{cand: c, source: src, status: registered, since: s.now()})
		sc.problem(src, c.Name, fmt.Errorf("register: %w", err))
		return
	}
	s.set(c.Name, &entry{cand: c, source: src, status: registered, since: s.now()})
	if !updated {
		sc.res.RegisteredCount++
	}
	s.log.Info("registered discovered MCP server", FieldServer, c.Name, FieldSource, c.Source,
		FieldFingerprint, c.Fingerprint)
}

// startChecks runs each job's health check in a goroutine the service
// owns, at most checkLimit at once, and applies its result under the scan
// lock when it is done: a scan never waits for a check.
func (s *Service) startChecks(jobs []*checkJob) []*checkJob {
	for _, job := range jobs {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer close(job.done)
			select {
			case s.checkSem <- struct{}{}:
			case <-s.life.Done():
				return
			}
			err := s.healthCheck(s.life, job.cand.Spec)
			<-s.checkSem
			if s.life.Err() != nil {
				return // closing: no verdict
			}
			s.finishCheck(job, err)
		}()
	}
	return jobs
}

// finishCheck applies a check's result, unless the candidate changed or
// went away meanwhile (then the job's result is dropped).
func (s *Service) finishCheck(job *checkJob, checkErr error) {
	if err := s.lock(s.life); err != nil {
		return
	}
	defer s.unlock()
	e := s.entries[job.cand.Name]
	if e == nil || e.status != checking || e.check != job {
		return
	}
	c, src := e.cand, e.source
	sc := &scan{res: ScanResult{}, problems: make([][]string, len(s.sources))}
	switch {
	case checkErr == nil && (job.register || s.store.Approved(c.Name, c.Fingerprint)):
		// Approved while it was checked (on another replica: Decided
		// leaves a candidate being checked to its check).
		s.register(sc, c, src, job.updated)
	case checkErr == nil:
		s.offer(c, src)
	case s.cfg.Security.QuarantineOnFailure:
		now := s.now()
		reason := ReasonHealthCheckFailed + ": " + checkErr.Error()
		s.set(c.Name, &entry{cand: c, source: src, status: quarantined, since: now, reason: reason})
		if err := s.store.SetQuarantine(c.Name, QuarantineRecord{Fingerprint: c.Fingerprint, Source: c.Source,
			Reason: reason, QuarantinedAt: now}); err != nil {
			s.log.Error("quarantine not saved; it will not survive a restart", FieldServer, c.Name, FieldError, err)
		}
		sc.res.QuarantinedCount++
		s.log.Warn("quarantined discovered MCP server", FieldServer, c.Name, FieldSource, c.Source, FieldReason, reason)
	default:
		s.drop(c.Name)
		sc.problem(src, c.Name, fmt.Errorf("%s: %w", ReasonHealthCheckFailed, checkErr))
		s.log.Warn("discovered MCP server failed its health check; not registered", FieldServer, c.Name, FieldError, checkErr)
	}
	// Problems found here show in hangar_sources until the next scan.
	s.mu.Lock()
	for i, ps := range sc.problems {
		s.status[i].problems = append(slices.Clone(s.status[i].problems), ps...)
	}
	s.mu.Unlock()
	job.res = sc.res
}

// healthCheck retries the check for a short grace: a container is seen the
// moment it starts, usually before its server listens, and must not be
// quarantined for that.
func (s *Service) healthCheck(ctx context.Context, spec *config.Server) error {
	timeout := spec.StartTimeout
	if timeout <= 0 {
		timeout = defaultStartTimeout
	}
	deadline := time.Now().Add(min(timeout, s.checkGrace))
	wait := retry.Check()
	for {
		// Each attempt gets at least the time it would get alone, so a slow
		// but healthy server is not cut short by the grace.
		actx, cancel := context.WithTimeout(ctx, max(time.Until(deadline), timeout/3))
		err := s.checkOnce(actx, spec)
		cancel()
		next := wait.NextBackOff()
		if err == nil || ctx.Err() != nil || time.Until(deadline) < next {
			return err
		}
		if !retry.Sleep(ctx, next) {
			return err
		}
	}
}

func (s *Service) checkOnce(ctx context.Context, spec *config.Server) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in health check: %v", r)
		}
	}()
	sp := *spec
	return s.check(ctx, &sp)
}

// gone handles a name its source no longer lists.
func (s *Service) gone(ctx context.Context, sc *scan, name string, e *entry) {
	if e.status != registered {
		// The stored quarantine decision stays: if the same container
		// comes back, it is still quarantined.
		s.drop(name)
		return
	}
	why := "no longer listed by an authoritative source"
	if s.sources[e.source].Mode() != ModeAuthoritative {
		if !s.removed(ctx, e) {
			return
		}
		why = "its container or service was removed"
	}
	if err := s.reg.Deregister(ctx, name); err != nil {
		sc.problem(e.source, name, fmt.Errorf("deregister: %w", err))
		return
	}
	sc.res.DeregisteredCount++
	s.log.Info("deregistered discovered MCP server that is gone", FieldServer, name, FieldSource, e.cand.Source, FieldReason, why)
	s.drop(name)
}

// removed tells whether the container or service e was registered from
// is gone for good (Removals); a source that cannot tell says no.
func (s *Service) removed(ctx context.Context, e *entry) bool {
	r, ok := s.sources[e.source].(Removals)
	id := e.cand.ContainerID
	if id == "" {
		id = e.cand.ServiceID
	}
	if !ok || id == "" {
		return false
	}
	gone, err := r.Removed(ctx, id)
	if err != nil {
		s.log.Warn("cannot tell whether a discovered server's container or service was removed; kept", FieldServer, e.cand.Name, FieldError, err)
	}
	return gone
}

// Pending lists the candidates waiting for approval, by name.
func (s *Service) Pending() []PendingEntry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := []PendingEntry{}
	for _, name := range slices.Sorted(maps.Keys(s.entries)) {
		e := s.entries[name]
		p := PendingEntry{Name: name, Source: e.cand.Source, Mode: e.cand.Spec.Mode,
			DiscoveredAt: e.since.UTC(), Fingerprint: e.cand.Fingerprint, Status: StatusPending}
		switch e.status {
		case pending:
			// A name taken since it was offered (a reload added a group).
			if err := s.refusal(name); err != nil {
				p.Status, p.Reason = StatusRefused, err.Error()
			}
		case refused:
			p.Status, p.Reason = StatusRefused, e.reason
		case registered:
			// Claimed, but a source of higher precedence holds the name.
			err := s.refusal(name)
			if err == nil {
				continue
			}
			p.Status, p.Reason, p.Approved = StatusRefused, err.Error(), true
		default:
			continue
		}
		out = append(out, p)
	}
	return out
}

// Quarantined lists the quarantined candidates, by name.
func (s *Service) Quarantined() []QuarantineEntry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := []QuarantineEntry{}
	for _, name := range slices.Sorted(maps.Keys(s.entries)) {
		if e := s.entries[name]; e.status == quarantined {
			out = append(out, QuarantineEntry{Name: name, Source: e.cand.Source, Reason: e.reason,
				QuarantineTime: e.since.UTC()})
		}
	}
	return out
}

// Approve registers a pending or quarantined candidate (COLD) and records
// the approval of its fingerprint (hangar_approve).
func (s *Service) Approve(ctx context.Context, name string) ApproveResult {
	fail := func(err error) ApproveResult { return ApproveResult{Server: name, Error: err.Error()} }
	if err := s.lock(ctx); err != nil {
		return fail(err)
	}
	defer s.unlock()

	e := s.entries[name]
	if e != nil && e.status == registered {
		// Claimed already; listed as refused while something else holds
		// the name.
		if err := s.refusal(name); err != nil {
			return fail(fmt.Errorf("refused: %w", err))
		}
	}
	if e == nil || e.status == registered || e.status == checking {
		return fail(fmt.Errorf("%w: %s", ErrNotFound, name))
	}
	if err := s.refusal(name); err != nil {
		return fail(fmt.Errorf("refused: %w", err))
	}
	// The approval is stored before anything changes: success is answered
	// only for an approval a restart will find.
	now := s.now()
	if err := s.store.Approve(name, e.cand.Fingerprint, now); err != nil {
		s.log.Error("approval not saved; nothing changed", FieldServer, name, FieldError, err)
		return fail(fmt.Errorf("approval not saved, nothing changed: %w", err))
	}
	spec := *e.cand.Spec
	if err := s.reg.Register(&spec); err != nil {
		if rerr := s.store.Revoke(name); rerr != nil {
			s.log.Error("approval of a server that failed to register not revoked", FieldServer, name, FieldError, rerr)
		}
		// Taken meanwhile: an approval that failed leaves no claim.
		_ = s.reg.Deregister(context.WithoutCancel(ctx), name)
		return fail(fmt.Errorf("register: %w", err))
	}
	s.set(name, &entry{cand: e.cand, source: e.source, status: registered, since: now})
	if err := s.store.ClearQuarantine(name); err != nil {
		// Harmless: the approval outranks the stale record after a restart.
		s.log.Warn("stale quarantine record not removed", FieldServer, name, FieldError, err)
	}
	s.log.Info("approved discovered MCP server", FieldServer, name, FieldSource, e.cand.Source,
		FieldFingerprint, e.cand.Fingerprint)
	return ApproveResult{Approved: true, Server: name, Status: StatusRegistered}
}

// Reject moves a pending or approved candidate to the quarantine list (the
// dashboard's Reject): a quarantine decision bound to the candidate's
// fingerprint, as a failed health check's is, so it survives a restart and
// a changed container is decided afresh. by names the operator in the
// reason. An approved candidate (served, or refused its name meanwhile)
// loses its approval and its claim first: the catalog stops serving it.
// Approve lifts the quarantine. A name discovery does not know, or one
// being health-checked, answers ErrNotFound; one quarantined already
// ErrAlreadyQuarantined.
func (s *Service) Reject(ctx context.Context, name, by string) (QuarantineEntry, error) {
	if err := s.lock(ctx); err != nil {
		return QuarantineEntry{}, err
	}
	defer s.unlock()

	e := s.entries[name]
	switch {
	case e != nil && e.status == quarantined:
		return QuarantineEntry{}, fmt.Errorf("%w: %s", ErrAlreadyQuarantined, name)
	case e == nil || (e.status != pending && e.status != refused && e.status != registered):
		return QuarantineEntry{}, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	now := s.now()
	reason := ReasonRejected + by
	if e.status == registered {
		// The approval goes first: should the quarantine record fail
		// after it, a restart finds the candidate pending, never approved.
		if err := s.store.Revoke(name); err != nil {
			s.log.Error("approval not revoked; nothing changed", FieldServer, name, FieldError, err)
			return QuarantineEntry{}, fmt.Errorf("approval not revoked, nothing changed: %w", err)
		}
		if err := s.reg.Deregister(ctx, name); err != nil {
			// Revoked: the claim is withdrawn at the next scan at the
			// latest, and the candidate is pending until it is decided.
			s.set(name, &entry{cand: e.cand, source: e.source, status: pending, since: now})
			return QuarantineEntry{}, fmt.Errorf("approval revoked, but the server is still served: %w", err)
		}
		s.log.Info("approval of discovered MCP server revoked", FieldServer, name, FieldReason, reason)
	}
	// Stored before the entry changes: success is answered only for a
	// decision a restart will find.
	if err := s.store.SetQuarantine(name, QuarantineRecord{Fingerprint: e.cand.Fingerprint, Source: e.cand.Source,
		Reason: reason, QuarantinedAt: now}); err != nil {
		s.log.Error("rejection not saved", FieldServer, name, FieldError, err)
		if e.status == registered {
			s.set(name, &entry{cand: e.cand, source: e.source, status: pending, since: now})
			return QuarantineEntry{}, fmt.Errorf("approval revoked (pending again), but the rejection was not saved: %w", err)
		}
		return QuarantineEntry{}, fmt.Errorf("rejection not saved, nothing changed: %w", err)
	}
	s.set(name, &entry{cand: e.cand, source: e.source, status: quarantined, since: now, reason: reason})
	s.log.Warn("quarantined discovered MCP server", FieldServer, name, FieldSource, e.cand.Source, FieldReason, reason,
		FieldFingerprint, e.cand.Fingerprint)
	return QuarantineEntry{Name: name, Source: e.cand.Source, Reason: reason, QuarantineTime: now.UTC()}, nil
}

// Sources reports each source as of its last listing (hangar_sources).
func (s *Service) Sources() []SourceStatus {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]SourceStatus, len(s.sources))
	for i, src := range s.sources {
		st := s.status[i]
		msg := st.err
		if msg == "" {
			msg = strings.Join(st.problems, "; ")
		}
		out[i] = SourceStatus{
			SourceType:    src.Type(),
			Mode:          src.Mode(),
			IsHealthy:     st.healthy,
			IsEnabled:     true,
			LastDiscovery: st.last,
			ServersCount:  st.count,
			Servers:       slices.Clone(st.names),
			ErrorMessage:  msg,
		}
	}
	return out
}

// Decided applies the decisions about name that another gateway replica
// stored: they are read again, and a candidate waiting here for approval
// whose fingerprint is now approved is registered (as hangar_approve on
// this replica would), one whose fingerprint is now quarantined is listed
// as quarantined, and a registered one whose approval was withdrawn is
// offered for approval again (unless auto_register serves it anyway).
func (s *Service) Decided(ctx context.Context, name string) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	if err := s.store.Reload(ctx, name); err != nil {
		return err
	}
	return s.decided(ctx, name)
}

// Resync reads every decision again and applies it as Decided does, for
// a replica that may have missed notices (its feed was down, or it
// started while another replica decided).
func (s *Service) Resync(ctx context.Context) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	if err := s.store.ReloadAll(ctx); err != nil {
		return err
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(s.entries)) {
		errs = append(errs, s.decided(ctx, name))
	}
	return errors.Join(errs...)
}

// decided applies the decisions read about name; the caller holds the
// scan lock.
func (s *Service) decided(ctx context.Context, name string) error {
	e := s.entries[name]
	if e == nil || e.status == checking || e.status == refused {
		return nil // the next scan or check decides it with the decisions read now
	}
	fp := e.cand.Fingerprint
	switch {
	case e.status != registered && s.store.Approved(name, fp):
		spec := *e.cand.Spec
		err := s.reg.Register(&spec)
		// A refused claim stands, as in a scan: served once the name is free.
		s.set(name, &entry{cand: e.cand, source: e.source, status: registered, since: s.now()})
		s.log.Info("discovered MCP server approved on another replica; registered", FieldServer, name,
			FieldFingerprint, fp)
		return err
	case e.status == registered && !s.store.Approved(name, fp) && !s.cfg.AutoRegister:
		if err := s.reg.Deregister(ctx, name); err != nil {
			return err
		}
		s.offer(e.cand, e.source)
	case e.status == pending:
		if q, ok := s.store.Quarantine(name); ok && q.Fingerprint == fp {
			s.set(name, &entry{cand: e.cand, source: e.source, status: quarantined, since: q.QuarantinedAt, reason: q.Reason})
		}
	}
	return nil
}
