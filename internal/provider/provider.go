package provider

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/redact"
	"github.com/mcp-hangar/hangar/internal/retry"
	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// Backend is a running provider (a container, a process, a remote session)
// with an MCP session to it.
type Backend interface {
	ListTools(ctx context.Context) ([]mcpconn.Tool, error)
	CallTool(ctx context.Context, name string, args any, o *mcpconn.CallOptions) (*mcp.CallToolResult, error)
	// Done is closed when the backend has ended, for whatever reason.
	Done() <-chan struct{}
	// Exit says how it ended ("exit 137, oom"); valid after Done.
	Exit() string
	// Stderr is the recent stderr output, "" if there is none.
	Stderr() string
	// Stop ends the backend and returns once it is gone.
	Stop(ctx context.Context) error
	// ContainerID is the container's ID, "" when there is none.
	ContainerID() string
}

// ToolsSource is a Backend whose tools change while it runs (one that
// learns them from its first caller's session): Learned gets a value at
// each change, and the provider reads ListTools again.
type ToolsSource interface {
	Learned() <-chan struct{}
}

// ErrToolsUnknown is a ToolsSource backend's ListTools before it learned
// any tools: the provider runs without tools (and pins none) until
// Learned.
var ErrToolsUnknown = errors.New("the tools are not known yet")

// MultiContainer is a Backend that runs several containers (one per
// caller): they are all the provider's, for the reaper.
type MultiContainer interface {
	ContainerIDs() []string
}

// Launcher starts backends.
type Launcher interface {
	Launch(ctx context.Context, spec *config.Server) (Backend, error)
}

// Preparer is an optional Launcher step run at the start of a start, before
// Launch (fetching an image). It is not bound by the start timeout but by
// the callers waiting: it gets the progress reporter of the call that
// caused the start, and its context (that call's trace, detached from its
// deadline) is cancelled once every caller waiting for the start has given
// up; the provider then goes back to COLD without counting a failure.
// Launch itself is never cut short by callers leaving.
type Preparer interface {
	Prepare(ctx context.Context, spec *config.Server, progress call.Progress) error
}

// Events receives state changes and lifecycle facts (metrics, logs).
type Events interface {
	// StateChanged reports a transition; from is "" when the provider was
	// just registered (COLD).
	StateChanged(id string, from, to State)
	ColdStart(id string, d time.Duration, err error)
	BackendExited(id string, exit string, oom bool)
	// CallDone reports a finished tool call; outcome is "success" or an
	// error kind.
	CallDone(id, tool, outcome string, d time.Duration)
	HealthChecked(id string, err error)
	// Removed says the provider is gone for good; per-provider series can
	// be dropped.
	Removed(id string)
	// QuarantineChanged says the provider's quarantine was set, changed or
	// lifted (Quarantined has it): what it serves changed without a
	// transition.
	QuarantineChanged(id string)
}

// NoEvents ignores everything.
type NoEvents struct{}

func (NoEvents) StateChanged(string, State, State)              {}
func (NoEvents) ColdStart(string, time.Duration, error)         {}
func (NoEvents) BackendExited(string, string, bool)             {}
func (NoEvents) CallDone(string, string, string, time.Duration) {}
func (NoEvents) HealthChecked(string, error)                    {}
func (NoEvents) Removed(string)                                 {}
func (NoEvents) QuarantineChanged(string)                       {}

// Health is the provider's health bookkeeping (hangar_details.health).
type Health struct {
	ConsecutiveFailures int       `json:"consecutive_failures"`
	LastCheck           time.Time `json:"-"`
	LastSuccessAt       time.Time `json:"-"`
	LastFailureAt       time.Time `json:"-"`
	TotalInvocations    int64     `json:"total_invocations"`
	TotalFailures       int64     `json:"total_failures"`
}

// instance is one backend incarnation; calls hold it so that an error can
// be blamed on the right incarnation even after a restart.
type instance struct {
	b          Backend
	startedAt  time.Time
	stopReason atomic.Pointer[string]
}

// Options tune a provider; zero values take defaults.
type Options struct {
	Now    func() time.Time
	Events Events
	Log    *slog.Logger
	// Global bounds calls across all providers (execution.max_concurrency).
	Global *Limiter
	// BackoffBase and BackoffMax shape restart backoff (1s doubling, 60s).
	BackoffBase, BackoffMax time.Duration
	// ToolGate vets every fresh tools/list against the tool pins; nil
	// serves tools unvetted (pinning.go).
	ToolGate ToolGate
	// Images approves a provider's new image when an image_changed or
	// signature_invalid quarantine is approved; nil: nothing to record.
	Images ImageApprover
	// Quarantines keeps quarantines across restarts; nil keeps them in
	// memory only.
	Quarantines QuarantineStore
	// Telemetry makes a CLIENT span per call (tracing.go); nil is off.
	Telemetry *telemetry.Telemetry
}

// Provider is one configured MCP server.
type Provider struct {
	id string
	// removed is set when the manager unregisters the provider: from then
	// on it reports nothing (events). Its stop comes after, and what
	// it would report is about no registered server: the metrics would
	// make again the series Removed dropped.
	removed  atomic.Bool
	spec     *config.Server
	launcher Launcher
	policy   *ToolPolicy
	// predefined are the config's tools the policy allows, built once:
	// the front door reads every provider's tools on each refresh.
	predefined []mcpconn.Tool
	limit      *Limiter
	opts       Options
	log        *slog.Logger

	// lifetime ends when the provider is removed; a start in progress is
	// cancelled with it.
	lifetime context.Context
	retire   context.CancelFunc

	mu            sync.Mutex
	state         State
	inst          *instance
	starting      chan struct{}      // closed when the start in progress ends
	startWaiters  int                // callers waiting for the start in progress
	abandon       context.CancelFunc // stops the start's preparation; nil when none runs
	lastErr       error
	tools         []mcpconn.Tool
	startFailures int       // consecutive failed starts
	crashes       int       // consecutive crashes without a good call between
	retryAt       time.Time // no automatic start before this
	demand        uint64    // Ensure calls so far: who asked for the backend (StopIfUnwanted)
	degradedUntil time.Time // a degraded provider is re-checked after this
	degradations  int       // consecutive degradations, for the backoff
	checking      bool      // a health check is running
	health        Health
	lastUsed      time.Time
	inflight      int
	lastStderr    string
	quarantine    *Quarantine // tools withheld, calls refused (pinning.go)

	// persistMu orders syncQuarantine's writes; savedQuarantine (under
	// persistMu) is what the QuarantineStore holds (persistKey).
	persistMu       sync.Mutex
	savedQuarantine string
	// toldQuarantine is the quarantine Events last heard of (under
	// persistMu), to tell each change once.
	toldQuarantine string
}

// New returns a COLD provider.
func New(spec *config.Server, launcher Launcher, opts Options) *Provider {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Events == nil {
		opts.Events = NoEvents{}
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.BackoffBase == 0 {
		opts.BackoffBase = time.Second
	}
	if opts.BackoffMax == 0 {
		opts.BackoffMax = 60 * time.Second
	}
	maxConc := spec.MaxConcurrency
	if maxConc <= 0 {
		maxConc = 10
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Provider{
		id:       spec.ID,
		spec:     spec,
		launcher: launcher,
		policy:   PolicyFor(spec.Tools),
		limit:    NewLimiter(maxConc),
		opts:     opts,
		log:      opts.Log.With("mcp_server", spec.ID),
		lifetime: ctx,
		retire:   cancel,
		state:    Cold,
	}
	if pre := spec.Tools.Predefined; len(pre) > 0 {
		p.predefined = make([]mcpconn.Tool, 0, len(pre))
		for _, t := range pre {
			if p.policy.Allowed(t.Name) {
				p.predefined = append(p.predefined, mcpconn.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
			}
		}
		p.predefined = slices.Clip(p.predefined)
	}
	p.restoreQuarantine()
	return p
}

// ID is the provider's ID.
func (p *Provider) ID() string { return p.id }

// Spec is the provider's configuration; it never changes (a reload replaces
// the provider).
func (p *Provider) Spec() *config.Server { return p.spec }

// Policy is the tool access policy.
func (p *Provider) Policy() *ToolPolicy { return p.policy }

// events is where the provider reports: its Events until it is removed,
// nothing after.
func (p *Provider) events() Events {
	if p.removed.Load() {
		return NoEvents{}
	}
	return p.opts.Events
}

// setState must be called with p.mu held.
func (p *Provider) setState(to State) {
	from := p.state
	if from == to {
		return
	}
	if !CanTransition(from, to) {
		p.log.Error("state machine violation", "error", errIllegal(p.id, from, to))
	}
	p.state = to
	p.events().StateChanged(p.id, from, to)
}

// backoff returns the delay before restart attempt n (n ≥ 1): base, 2×base,
// … capped at max.
func (p *Provider) backoff(n int) time.Duration {
	return retry.Restart(p.opts.BackoffBase, p.opts.BackoffMax, n)
}

// Ensure returns the READY backend, starting it if needed. Concurrent
// callers share one start (single-flight); none holds the lock across I/O.
// With force a DEAD provider past its failure limit is started anyway.
// With hold the call is counted in flight under the same lock that found
// the backend, so idle collection can never take it away in between; the
// caller must then call done. A start this caller begins reports its
// progress (an image pull) to progress.
func (p *Provider) Ensure(ctx context.Context, progress call.Progress, force, hold bool) (*instance, error) {
	p.mu.Lock()
	p.demand++
	// attempted: this caller started, or waited for, a start; if that start
	// failed, its failure is the answer, not a reason to start again.
	attempted := false
	for {
		switch p.state {
		case Ready:
			inst := p.inst
			if hold {
				p.inflight++
			}
			p.mu.Unlock()
			return inst, nil
		case Initializing:
			ch := p.starting
			p.startWaiters++
			p.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				p.mu.Lock()
				p.startWaiters--
				if p.startWaiters == 0 && p.starting == ch && p.abandon != nil {
					// Nobody waits for this start any more: stop its
					// preparation (a pull) if it is still running.
					p.abandon()
				}
				p.mu.Unlock()
				return nil, p.waitErr(ctx)
			}
			p.mu.Lock()
			p.startWaiters--
			attempted = true
			continue
		case Degraded:
			// A degraded provider keeps serving while it still answers;
			// the health worker decides when it goes back to COLD.
			if p.inst != nil {
				inst := p.inst
				if hold {
					p.inflight++
				}
				p.mu.Unlock()
				return inst, nil
			}
		case Dead:
			if attempted {
				err := p.lastErr
				p.mu.Unlock()
				return nil, err
			}
			now := p.opts.Now()
			if !force && p.startFailures >= p.spec.MaxConsecutiveFailures && p.spec.MaxConsecutiveFailures > 0 {
				err := p.unavailable("failed %d starts in a row, use hangar_start to retry: %v", p.startFailures, p.lastErr)
				p.mu.Unlock()
				return nil, err
			}
			if !force && now.Before(p.retryAt) {
				err := p.unavailable("restart backoff until %s: %v", p.retryAt.UTC().Format(time.RFC3339), p.lastErr)
				p.mu.Unlock()
				return nil, err
			}
		}
		if p.quarantine != nil && p.quarantine.blocksStart() {
			// Its image is not the approved one: not even hangar_start
			// runs it before hangar_approve.
			err := p.quarantineErrLocked()
			p.mu.Unlock()
			return nil, err
		}
		// COLD, or DEAD and eligible: start.
		ch := make(chan struct{})
		p.starting = ch
		prepCtx, abandon := context.WithCancel(context.WithoutCancel(ctx))
		p.abandon = abandon
		p.setState(Initializing)
		p.mu.Unlock()
		go p.startTraced(ch, prepCtx, abandon, progress)
		p.mu.Lock()
		attempted = true
	}
}

// prepare runs the launcher's Preparer, if it has one, on prepCtx, which
// ends when the provider is retired or abandon is called; abandoned says
// it failed because of that.
func (p *Provider) prepare(prepCtx context.Context, abandon context.CancelFunc, progress call.Progress) (abandoned bool, err error) {
	defer func() {
		p.mu.Lock()
		p.abandon = nil
		p.mu.Unlock()
		abandon()
	}()
	pr, ok := p.launcher.(Preparer)
	if !ok {
		return false, nil
	}
	stop := context.AfterFunc(p.lifetime, abandon)
	defer stop()
	err = pr.Prepare(prepCtx, p.spec, progress)
	return err != nil && prepCtx.Err() != nil, err
}

func (p *Provider) unavailable(format string, a ...any) error {
	e := Errorf(KindUnavailable, p.id, format, a...)
	e.Err = p.lastErr
	return e
}

func (p *Provider) waitErr(ctx context.Context) error {
	return &Error{Kind: KindTimeout, ID: p.id, Detail: "still starting when the call timed out", Err: ctx.Err()}
}

// start runs one start attempt on its own context: a caller giving up must
// not abort the start the other callers are waiting for.
func (p *Provider) start(done chan struct{}, prepCtx context.Context, abandon context.CancelFunc, progress call.Progress) {
	defer close(done)
	timeout := p.StartTimeout()
	began := p.opts.Now()
	abandoned, err := p.prepare(prepCtx, abandon, progress)
	if abandoned {
		// Every caller gave up (or the provider was retired) during the
		// preparation: nothing was started and nothing failed.
		p.mu.Lock()
		p.setState(Cold)
		p.mu.Unlock()
		p.log.InfoContext(prepCtx, "start abandoned by its callers", "error", err)
		return
	}
	ctx, cancel := context.WithTimeout(p.lifetime, timeout)
	defer cancel()

	if r, ok := errors.AsType[Refusal](err); ok {
		// The image gate refused the image: quarantined, not failed.
		p.events().ColdStart(p.id, p.opts.Now().Sub(began), err)
		p.mu.Lock()
		p.lastErr = p.refused(r)
		p.setState(Cold)
		p.mu.Unlock()
		p.syncQuarantine(prepCtx)
		return
	}
	var b Backend
	if err == nil {
		b, err = p.launcher.Launch(ctx, p.spec)
	}
	var tools []mcpconn.Tool
	unknown := false
	if err == nil {
		tools, err = b.ListTools(ctx)
		if errors.Is(err, ErrToolsUnknown) {
			tools, err, unknown = nil, nil, true
		}
		if err != nil {
			err = errors.Join(errors.New("tools/list after start"), err)
		}
	}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = errors.Join(errors.New("no answer within start timeout "+timeout.String()), err)
	}
	var q *Quarantine
	if err == nil && !unknown {
		q = p.vetTools(ctx, tools)
	}
	took := p.opts.Now().Sub(began)
	p.events().ColdStart(p.id, took, err)

	if err != nil {
		stderr := ""
		if b != nil {
			stderr = b.Stderr()
			_ = b.Stop(context.WithoutCancel(ctx))
		}
		p.mu.Lock()
		p.startFailures++
		attempt := p.startFailures
		p.retryAt = p.opts.Now().Add(p.backoff(p.startFailures))
		// A start error may quote the endpoint it failed on.
		p.lastErr = &Error{Kind: KindStartFailed, ID: p.id, Detail: redact.Text(err.Error()), Err: err}
		if stderr != "" {
			p.lastStderr = stderr
		}
		p.health.LastFailureAt = p.opts.Now()
		p.setState(Dead)
		p.mu.Unlock()
		p.log.WarnContext(prepCtx, "start failed", "error", redact.Text(err.Error()), "attempt", attempt, "took_ms", took.Milliseconds())
		return
	}

	inst := &instance{b: b, startedAt: p.opts.Now()}
	p.mu.Lock()
	if p.lifetime.Err() != nil {
		// Retired while starting: nobody will own this backend.
		p.setState(Cold)
		p.mu.Unlock()
		_ = b.Stop(context.Background())
		return
	}
	p.inst = inst
	if !unknown {
		// A backend that does not know its tools yet keeps the ones an
		// earlier incarnation learned (they come again with its first
		// caller).
		p.tools = tools
		p.applyVet(q, tools)
	}
	p.startFailures = 0
	p.lastErr = nil
	p.lastUsed = p.opts.Now()
	p.setState(Ready)
	p.mu.Unlock()
	p.syncQuarantine(ctx)
	p.log.InfoContext(prepCtx, "ready", "took_ms", took.Milliseconds(), "tools", len(tools))
	go p.supervise(inst)
}

// supervise learns of the backend's end at once (not at the next health
// check): the provider leaves READY and calls in flight fail with the cause.
func (p *Provider) supervise(inst *instance) {
	var learned <-chan struct{}
	if ts, ok := inst.b.(ToolsSource); ok {
		learned = ts.Learned()
	}
	for done := false; !done; {
		select {
		case <-inst.b.Done():
			done = true
		case <-learned:
			p.relist(inst)
		}
	}
	p.markExited(inst)
	// Kept after the backend is gone, for hangar_details and the next
	// start's error.
	if stderr := inst.b.Stderr(); stderr != "" {
		p.mu.Lock()
		p.lastStderr = stderr
		p.mu.Unlock()
	}
}

// relist reads the tools of a ToolsSource backend again, vetted as a
// health check's are.
func (p *Provider) relist(inst *instance) {
	ctx, cancel := context.WithTimeout(p.lifetime, healthCheckTimeout)
	defer cancel()
	tools, err := inst.b.ListTools(ctx)
	if err != nil {
		return
	}
	q := p.vetTools(ctx, tools)
	p.mu.Lock()
	if p.inst != inst {
		p.mu.Unlock()
		return
	}
	p.tools = tools
	p.applyVet(q, tools)
	p.mu.Unlock()
	p.syncQuarantine(ctx)
	// What the provider serves changed: listeners (the front door) hear
	// it as of a health check that read the tools again.
	p.events().HealthChecked(p.id, nil)
}

// TracksContainer reports whether id is one of the provider's
// containers.
func (p *Provider) TracksContainer(id string) bool {
	p.mu.Lock()
	inst := p.inst
	p.mu.Unlock()
	if inst == nil {
		return false
	}
	if inst.b.ContainerID() == id {
		return true
	}
	if mc, ok := inst.b.(MultiContainer); ok {
		return slices.Contains(mc.ContainerIDs(), id)
	}
	return false
}

// EngineBack gives a DEAD provider a fresh start after the container
// engine came back: the starts that failed and the crashes while it was
// out of reach (an attach stream cut, a create refused) said nothing about
// the provider, and must not leave it in a backoff, or refused past
// max_consecutive_failures until someone calls hangar_start. The next call
// starts it at once; a provider that fails on its own backs off again.
func (p *Provider) EngineBack() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != Dead {
		return
	}
	p.startFailures, p.crashes = 0, 0
	p.retryAt = time.Time{}
}

// markExited takes the provider out of READY after inst ended. It is
// idempotent, and called both by the supervisor and by a call that saw the
// end first, so that a retry of that call never meets the dead backend.
func (p *Provider) markExited(inst *instance) {
	exit := inst.b.Exit()
	p.mu.Lock()
	if p.inst != inst {
		// Already marked, or stopped on purpose.
		p.mu.Unlock()
		return
	}
	p.inst = nil
	p.crashes++
	p.lastErr = Errorf(KindCrashed, p.id, "%s", exit)
	p.health.ConsecutiveFailures++
	p.health.LastFailureAt = p.opts.Now()
	// The first crash restarts at once; a crash loop backs off.
	p.retryAt = p.opts.Now()
	if p.crashes > 1 {
		p.retryAt = p.retryAt.Add(p.backoff(p.crashes - 1))
	}
	p.setState(Dead)
	p.mu.Unlock()

	p.events().BackendExited(p.id, exit, containsOOM(exit))
	p.log.Warn("backend exited", "exit", exit)
}

func containsOOM(exit string) bool {
	for i := 0; i+3 <= len(exit); i++ {
		if exit[i:i+3] == "oom" {
			return true
		}
	}
	return false
}

// DefaultStartTimeout bounds a start whose spec sets no start_timeout.
const DefaultStartTimeout = 30 * time.Second

// StartTimeout is how long one start may take: the spec's start timeout,
// else DefaultStartTimeout.
func (p *Provider) StartTimeout() time.Duration {
	if t := p.spec.StartTimeout; t > 0 {
		return t
	}
	return DefaultStartTimeout
}

// StartWait is how long a caller waits for a start it asks for (a
// hangar_start, a group member's start, a prefetch): the start timeout
// plus a little for the handshake's tail.
func (p *Provider) StartWait() time.Duration { return p.StartTimeout() + 5*time.Second }

// Start brings the provider to READY (hangar_start): a DEAD provider past
// its failure limit is retried. Its image pull, if any, is reported to
// progress.
func (p *Provider) Start(ctx context.Context, progress call.Progress) ([]mcpconn.Tool, error) {
	if _, err := p.Ensure(ctx, progress, true, false); err != nil {
		return nil, err
	}
	return p.Tools(), nil
}

// Stop ends the backend and leaves the provider COLD. With graceful it
// first waits (until ctx ends) for calls in flight to finish.
func (p *Provider) Stop(ctx context.Context, reason string, graceful bool) error {
	p.mu.Lock()
	for p.state == Initializing {
		ch := p.starting
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		p.mu.Lock()
	}
	if graceful {
		for p.inflight > 0 && ctx.Err() == nil {
			p.mu.Unlock()
			sleep(ctx, 20*time.Millisecond)
			p.mu.Lock()
		}
	}
	inst := p.inst
	p.inst = nil
	p.crashes = 0
	p.startFailures = 0
	if p.state != Cold {
		p.setState(Cold)
	}
	p.mu.Unlock()
	if inst == nil {
		return nil
	}
	inst.stopReason.Store(&reason)
	p.log.Info("stopping", "reason", reason)
	return inst.b.Stop(ctx)
}

// Retire stops the provider for good (removal, shutdown).
func (p *Provider) Retire(ctx context.Context, reason string, graceful bool) error {
	err := p.Stop(ctx, reason, graceful)
	p.retire()
	return err
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Call invokes a tool for rq (nil: an in-process call). It waits for the
// concurrency limits and the start of a cold provider until ctx ends; the
// call is forwarded as rq says (its _meta, relay, progress).
func (p *Provider) Call(ctx context.Context, rq *call.Request, tool string, args any) (*mcp.CallToolResult, error) {
	if !p.policy.Allowed(tool) {
		return nil, Errorf(KindToolNotAllowed, p.id+"."+tool, "blocked by the tool access policy")
	}
	if err := p.quarantineErr(); err != nil {
		return nil, err
	}
	queued := p.queueWaitFrom(ctx)
	release, err := p.acquire(ctx)
	telemetry.StepSince(ctx, telemetry.StepQueueWait, queued, err)
	if err != nil {
		return nil, err
	}
	defer release()

	began := p.opts.Now()
	cold := p.coldNow()
	inst, err := p.Ensure(ctx, rq.ProgressOf(), false, true)
	if err == nil {
		// The start this call caused may have just quarantined the
		// provider (its tools changed): the call must not reach it.
		if err = p.quarantineErr(); err != nil {
			p.mu.Lock()
			p.inflight--
			p.mu.Unlock()
		}
	}
	if err != nil {
		p.events().CallDone(p.id, p.toolLabel(tool), KindOf(err), p.opts.Now().Sub(began))
		return nil, err
	}
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if p.spec.CallTimeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, p.spec.CallTimeout)
	}
	cctx, op := p.startClient(cctx, tool, cold)
	res, err := inst.b.CallTool(cctx, tool, args, rq.Options())
	endClient(op, res, err)
	if err != nil {
		err = p.classify(cctx, inst, err)
	}
	cancel()

	now := p.opts.Now()
	p.mu.Lock()
	p.inflight--
	p.lastUsed = now
	p.health.TotalInvocations++
	if err != nil {
		p.health.TotalFailures++
	} else if p.inst == inst {
		p.crashes = 0
	}
	p.mu.Unlock()
	outcome := "success"
	switch {
	case err != nil:
		outcome = KindOf(err)
	case res != nil && res.IsError:
		outcome = KindToolError
	}
	p.events().CallDone(p.id, p.toolLabel(tool), outcome, now.Sub(began))
	return res, err
}

// ToolOther is the tool a call's events name when the provider does not
// list the tool the caller asked for: a name anyone can make up must not
// become a metric series of its own.
const ToolOther = "_OTHER"

// toolLabel is tool when the provider lists it, else ToolOther.
func (p *Provider) toolLabel(tool string) string {
	if p.Predefined() {
		if slices.ContainsFunc(p.predefined, func(t mcpconn.Tool) bool { return t.Name == tool }) {
			return tool
		}
		return ToolOther
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.tools {
		if t.Name == tool {
			return tool
		}
	}
	return ToolOther
}

// acquire takes the provider's and the global concurrency slots.
func (p *Provider) acquire(ctx context.Context) (func(), error) {
	if err := p.limit.Acquire(ctx); err != nil {
		return nil, Errorf(KindBusy, p.id, "max_concurrency %d reached and no slot freed before the timeout", p.limit.Cap())
	}
	if p.opts.Global == nil {
		return p.limit.Release, nil
	}
	if err := p.opts.Global.Acquire(ctx); err != nil {
		p.limit.Release()
		return nil, Errorf(KindBusy, p.id, "execution.max_concurrency %d reached and no slot freed before the timeout", p.opts.Global.Cap())
	}
	return func() { p.opts.Global.Release(); p.limit.Release() }, nil
}

// crashWait is how long a failed call waits to learn whether the backend
// died; the transport sees EOF a moment before the engine reports the exit.
const crashWait = 500 * time.Millisecond

// classify turns a transport error into the wire error that says why.
func (p *Provider) classify(ctx context.Context, inst *instance, err error) error {
	if KindOf(err) == KindAuthRequired {
		// The backend is fine; the caller has to log in first.
		return err
	}
	if ctx.Err() != nil {
		select {
		case <-inst.b.Done():
		default:
			return &Error{Kind: KindTimeout, ID: p.id, Detail: "no answer before the call timeout", Err: err}
		}
	}
	t := time.NewTimer(crashWait)
	defer t.Stop()
	select {
	case <-inst.b.Done():
		if r := inst.stopReason.Load(); r != nil {
			return &Error{Kind: KindStopped, ID: p.id, Detail: *r, Err: err}
		}
		p.markExited(inst)
		return &Error{Kind: KindCrashed, ID: p.id, Detail: inst.b.Exit(), Err: err}
	case <-t.C:
		return &Error{Kind: KindCallFailed, ID: p.id, Detail: err.Error(), Err: err}
	}
}

// Tools returns the tools the policy allows: the predefined ones when the
// config has them, else the cache from the last tools/list. The slice may
// be shared: callers must not modify it.
func (p *Provider) Tools() []mcpconn.Tool {
	p.mu.Lock()
	quarantined := p.quarantine != nil
	src := p.tools
	p.mu.Unlock()
	if quarantined {
		return []mcpconn.Tool{}
	}
	if p.Predefined() {
		return p.predefined
	}
	out := make([]mcpconn.Tool, 0, len(src))
	for _, t := range src {
		if p.policy.Allowed(t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// Predefined reports whether tools come from config rather than the
// provider.
func (p *Provider) Predefined() bool { return len(p.spec.Tools.Predefined) > 0 }

// FilteredCount is how many known tools the policy hides.
func (p *Provider) FilteredCount() int {
	var names []string
	if pre := p.spec.Tools.Predefined; len(pre) > 0 {
		for _, t := range pre {
			names = append(names, t.Name)
		}
	} else {
		p.mu.Lock()
		for _, t := range p.tools {
			names = append(names, t.Name)
		}
		p.mu.Unlock()
	}
	n := 0
	for _, name := range names {
		if !p.policy.Allowed(name) {
			n++
		}
	}
	return n
}

// ToolsOrStart returns the tools, starting a cold provider to learn them
// unless they are predefined; that start reports its progress to progress.
func (p *Provider) ToolsOrStart(ctx context.Context, progress call.Progress) ([]mcpconn.Tool, error) {
	if p.Predefined() {
		return p.Tools(), nil
	}
	if _, err := p.Ensure(ctx, progress, false, false); err != nil {
		return nil, err
	}
	return p.Tools(), nil
}

// Snapshot is a consistent copy of the provider's observable state.
type Snapshot struct {
	ID          string
	State       State
	Mode        string
	Alive       bool
	ToolsCount  int
	Health      Health
	LastUsed    time.Time
	Inflight    int
	StartedAt   time.Time
	LastError   string
	Stderr      string
	ContainerID string
	// RetryAt is when an automatic restart is allowed again after a
	// failed start or a crash; zero when no backoff is running.
	RetryAt time.Time
}

// Snapshot returns the provider's state without any I/O.
func (p *Provider) Snapshot() Snapshot {
	p.mu.Lock()
	s := Snapshot{
		ID:       p.id,
		State:    p.state,
		Mode:     p.spec.Mode,
		Health:   p.health,
		LastUsed: p.lastUsed,
		Inflight: p.inflight,
		Stderr:   p.lastStderr,
	}
	if p.lastErr != nil {
		s.LastError = p.lastErr.Error()
	}
	if p.inst == nil && p.retryAt.After(p.opts.Now()) {
		s.RetryAt = p.retryAt
	}
	inst := p.inst
	p.mu.Unlock()
	if inst != nil {
		s.Alive = true
		s.StartedAt = inst.startedAt
		s.ContainerID = inst.b.ContainerID()
		if e := inst.b.Stderr(); e != "" {
			s.Stderr = e
		}
	}
	s.ToolsCount = len(p.Tools())
	return s
}

// State returns the current state.
func (p *Provider) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}
