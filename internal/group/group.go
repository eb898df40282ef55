// Package group serves MCP server groups: a group spreads the calls made to
// its ID over member providers by a strategy, takes failing members out of
// rotation and puts recovered ones back, fails over once when the way to a
// member fails, and stops calling its members at all for a while (circuit
// breaker) when calls through it keep failing.
//
// Each member is an ordinary provider registered in the provider.Manager
// under the member's ID: it can be called directly and shows its own state.
// The group owns the members' lifecycle (registration and retirement) and
// their rotation; the provider owns starts, restarts and health checks.
package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// KindCircuitOpen is the wire kind of a call refused by a group's open
// breaker; the wire strings live in the provider package.
const KindCircuitOpen = provider.KindCircuitOpen

// memberParallelism bounds the members started, stopped or checked at once
// by one group operation.
const memberParallelism = 4

// Options tune groups; zero values take defaults.
type Options struct {
	// Now is the breaker's clock.
	Now func() time.Time
	// Rand returns a number in [0, n) for the random strategy.
	Rand func(n int) int
	Log  *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.IntN
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return o
}

// prober runs an immediate health check of a member (provider.Manager).
type prober interface {
	Probe(ctx context.Context, id string) error
}

var _ prober = (*provider.Manager)(nil)

// member is one member of a group. p, weight and priority never change;
// the rest is guarded by the group's lock.
type member struct {
	p        *provider.Provider
	weight   int
	priority int

	inRotation bool
	failures   int // consecutive, as the group counts them
	successes  int // consecutive
	inflight   int // calls through the group
	current    int // smooth weighted round robin's current weight
}

// Group is one configured group.
type Group struct {
	id      string
	spec    *config.Server
	opts    Options
	log     *slog.Logger
	probe   prober
	members []*member // in configuration order; the slice never changes
	unhlth  int       // health.unhealthy_threshold
	hlth    int       // health.healthy_threshold

	// mu guards what follows and the members' mutable fields. It is never
	// held while calling into a provider, and providers report outcomes
	// (observe) without holding their own lock: the two never nest.
	mu      sync.Mutex
	cursor  int // round robin position in members
	breaker breaker
	retired bool
}

// newGroup builds a group with no providers yet; the registry attaches
// them.
func newGroup(spec *config.Server, probe prober, opts Options) *Group {
	g := &Group{
		id:      spec.ID,
		spec:    spec,
		opts:    opts,
		log:     opts.Log.With("group", spec.ID),
		probe:   probe,
		unhlth:  max(spec.Health.UnhealthyThreshold, 1),
		hlth:    max(spec.Health.HealthyThreshold, 1),
		breaker: newBreaker(spec.CircuitBreaker.FailureThreshold, spec.CircuitBreaker.ResetTimeout),
	}
	for _, ms := range spec.Members {
		m := &member{weight: max(ms.Weight, 1), priority: max(ms.Priority, 1), inRotation: true}
		g.members = append(g.members, m)
	}
	return g
}

// ID is the group's ID.
func (g *Group) ID() string { return g.id }

// Spec is the group's configuration; a reload replaces the group whole.
func (g *Group) Spec() *config.Server { return g.spec }

// Members returns the member providers in configuration order.
func (g *Group) Members() []*provider.Provider {
	out := make([]*provider.Provider, len(g.members))
	for i, m := range g.members {
		out[i] = m.p
	}
	return out
}

// observe moves a member's rotation counters by one outcome.
func (g *Group) observe(m *member, o outcome) {
	if o == neutral {
		return
	}
	g.mu.Lock()
	var change string
	switch o {
	case success:
		m.failures = 0
		m.successes++
		if !m.inRotation && m.successes >= g.hlth {
			m.inRotation, m.current = true, 0
			change = "member rejoined rotation"
		}
	case failure:
		m.successes = 0
		m.failures++
		if m.inRotation && m.failures >= g.unhlth {
			m.inRotation = false
			change = "member left rotation"
		}
	}
	n := m.failures
	g.mu.Unlock()
	if change != "" {
		g.log.Info(change, "member", m.p.ID(), "consecutive_failures", n)
	}
}

func (g *Group) unknown() error { return &provider.Error{Kind: provider.KindUnknownGroup, ID: g.id} }

func (g *Group) noHealthy() error {
	return &provider.Error{Kind: provider.KindNoHealthyMember, ID: g.id}
}

// Call invokes a tool on a member chosen by the strategy. When the way to
// that member fails (crash, transport, unavailable, busy, failed start) the
// call is tried once more on another member in rotation; a tool error or a
// timeout is the answer. rq (nil: an in-process call) goes on to the
// member, and its attempt budget bounds the failover.
func (g *Group) Call(ctx context.Context, rq *call.Request, tool string, args any) (*mcp.CallToolResult, error) {
	g.mu.Lock()
	if g.retired {
		g.mu.Unlock()
		return nil, g.unknown()
	}
	t, ok := g.breaker.allow(g.opts.Now())
	if !ok {
		at := g.breaker.retryAt()
		g.mu.Unlock()
		return nil, provider.Errorf(KindCircuitOpen, g.id, "%d consecutive calls failed; a trial call is let through after %s",
			g.breaker.threshold, at.UTC().Format(time.RFC3339))
	}
	m := g.take(nil)
	g.mu.Unlock()

	var res *mcp.CallToolResult
	err := g.noHealthy()
	if m != nil {
		res, err = g.callMember(ctx, rq, m, tool, args)
		// The failover is one more member call: it is made only when the
		// caller's attempt budget (hangar_call's max_attempts) allows.
		if err != nil && failover(err) && ctx.Err() == nil && rq.Take() {
			g.mu.Lock()
			next := g.take(m)
			g.mu.Unlock()
			if next != nil {
				g.log.Debug("failing over", "from", m.p.ID(), "to", next.p.ID(), "error", err)
				telemetry.Event(ctx, telemetry.EventRetry, telemetry.AttrMember.String(next.p.ID()))
				res, err = g.callMember(ctx, rq, next, tool, args)
			}
		}
	}

	g.mu.Lock()
	opened, closed := g.breaker.done(g.opts.Now(), callOutcome(err), t)
	g.mu.Unlock()
	switch {
	case opened:
		g.log.Warn("circuit breaker opened", "failure_threshold", g.breaker.threshold, "reset_timeout_s", g.breaker.timeout.Seconds(), "error", err)
	case closed:
		g.log.Info("circuit breaker closed")
	}
	return res, err
}

// take picks a member and counts the call in flight on it; the caller holds
// g.mu.
func (g *Group) take(skip *member) *member {
	m := g.pick(skip)
	if m != nil {
		m.inflight++
	}
	return m
}

func (g *Group) callMember(ctx context.Context, rq *call.Request, m *member, tool string, args any) (*mcp.CallToolResult, error) {
	defer func() {
		g.mu.Lock()
		m.inflight--
		g.mu.Unlock()
	}()
	return m.p.Call(ctx, rq, tool, args)
}

// Status is a group's observable state.
type Status struct {
	ID           string
	Description  string
	State        State
	Strategy     string
	MinHealthy   int
	HealthyCount int
	TotalMembers int
	// Available: the group accepts calls (its state is not unavailable).
	Available bool
	// CircuitOpen: the breaker is not closed (open, or half-open waiting
	// for its trial call to succeed).
	CircuitOpen bool
	// Circuit is the breaker's state: "closed", "open" or "half_open".
	Circuit string
	Members []MemberStatus
	// InRotation lists the IDs of the members in rotation.
	InRotation []string
}

// Status returns the group's state without any I/O.
func (g *Group) Status() Status {
	// Provider states are read before taking the group's lock.
	states := make([]provider.State, len(g.members))
	for i, m := range g.members {
		states[i] = m.p.State()
	}
	now := g.opts.Now()
	g.mu.Lock()
	ms := make([]MemberStatus, len(g.members))
	inRot := []string{}
	for i, m := range g.members {
		ms[i] = MemberStatus{
			ID:                  m.p.ID(),
			State:               states[i],
			InRotation:          m.inRotation,
			Weight:              m.weight,
			Priority:            m.priority,
			ConsecutiveFailures: m.failures,
		}
		if m.inRotation {
			inRot = append(inRot, m.p.ID())
		}
	}
	refusing := g.breaker.refusing(now)
	circuit := g.breaker.status(now)
	g.mu.Unlock()
	st, healthy := stateOf(ms, g.spec.MinHealthy, refusing)
	return Status{
		ID:           g.id,
		Description:  g.spec.Description,
		State:        st,
		Strategy:     g.spec.Strategy,
		MinHealthy:   g.spec.MinHealthy,
		HealthyCount: healthy,
		TotalMembers: len(ms),
		Available:    st != Unavailable,
		CircuitOpen:  circuit != circuitClosed,
		Circuit:      circuit,
		Members:      ms,
		InRotation:   inRot,
	}
}

// State is Status().State.
func (g *Group) State() State { return g.Status().State }

// eachMember runs f for every member, a few at once, and waits.
func (g *Group) eachMember(f func(m *member)) {
	var eg errgroup.Group
	eg.SetLimit(memberParallelism)
	for _, m := range g.members {
		eg.Go(func() error {
			f(m)
			return nil
		})
	}
	_ = eg.Wait()
}

// Start starts every member (hangar_start), retrying failed ones, and
// returns how many run. It fails only when none does. The members' image
// pulls are reported to progress.
func (g *Group) Start(ctx context.Context, progress call.Progress) (int, error) {
	if g.isRetired() {
		return 0, g.unknown()
	}
	var mu sync.Mutex
	started := 0
	var errs []string
	g.eachMember(func(m *member) {
		sctx, cancel := context.WithTimeout(ctx, m.p.StartWait())
		defer cancel()
		_, err := m.p.Start(sctx, progress)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err.Error())
			return
		}
		started++
	})
	if started == 0 && len(errs) > 0 {
		return 0, provider.Errorf(provider.KindStartFailed, g.id, "no member started: %s", joinSorted(errs))
	}
	return started, nil
}

// Stop stops every member (hangar_stop).
func (g *Group) Stop(ctx context.Context, reason string) error {
	if g.isRetired() {
		return g.unknown()
	}
	var mu sync.Mutex
	var errs []string
	g.eachMember(func(m *member) {
		if err := m.p.Stop(ctx, reason, false); err != nil {
			mu.Lock()
			errs = append(errs, fmt.Sprintf("%s: %v", m.p.ID(), err))
			mu.Unlock()
		}
	})
	if len(errs) > 0 {
		return fmt.Errorf("stop group %s: %s", g.id, joinSorted(errs))
	}
	return nil
}

// Tools returns the tools of a member in rotation (hangar_tools): a running
// one when there is one, else the first that starts (its pull reported to
// progress).
func (g *Group) Tools(ctx context.Context, progress call.Progress) ([]mcpconn.Tool, error) {
	if g.isRetired() {
		return nil, g.unknown()
	}
	var ready, rest []*provider.Provider
	for _, p := range g.inRotation() {
		if p.State() == provider.Ready {
			ready = append(ready, p)
		} else {
			rest = append(rest, p)
		}
	}
	err := g.noHealthy()
	for _, p := range append(ready, rest...) {
		sctx, cancel := context.WithTimeout(ctx, p.StartWait())
		var tools []mcpconn.Tool
		tools, err = p.ToolsOrStart(sctx, progress)
		cancel()
		if err == nil {
			return tools, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

// Rebalance re-checks every member (hangar_group_rebalance): a running
// member gets a health check now, a failed one (DEAD, or out of rotation)
// a start attempt; COLD members in rotation are left to start on demand.
// A success counts like any other, so a recovered member rejoins once it
// has healthy_threshold in a row (at once by default); a member that fails
// its check leaves rotation at once, whatever unhealthy_threshold says: a
// rebalance is asked for to drop what is broken now. Then the circuit
// breaker is reset. The pulls of the starts it makes are reported to
// progress.
func (g *Group) Rebalance(ctx context.Context, progress call.Progress) (Status, error) {
	if g.isRetired() {
		return Status{}, g.unknown()
	}
	g.eachMember(func(m *member) {
		g.mu.Lock()
		inRot := m.inRotation
		g.mu.Unlock()
		cctx, cancel := context.WithTimeout(ctx, m.p.StartWait())
		defer cancel()
		var err error
		switch st := m.p.State(); {
		case st == provider.Ready || st == provider.Degraded:
			err = g.probe.Probe(cctx, m.p.ID())
			if errors.Is(err, provider.ErrNotRunning) {
				// Stopped meanwhile: nothing was checked.
				return
			}
		case st == provider.Dead || st == provider.Initializing || !inRot:
			_, err = m.p.Start(cctx, progress)
		default:
			return
		}
		if err != nil && ctx.Err() == nil {
			g.eject(m, err)
		}
	})
	g.mu.Lock()
	g.breaker.reset()
	g.mu.Unlock()
	return g.Status(), nil
}

// eject takes a member that failed a rebalance check out of rotation.
func (g *Group) eject(m *member, cause error) {
	g.mu.Lock()
	was := m.inRotation
	m.inRotation = false
	g.mu.Unlock()
	if was {
		g.log.Info("member left rotation", "member", m.p.ID(), "reason", "rebalance check failed", "error", cause)
	}
}

// inRotation returns the member providers in rotation.
func (g *Group) inRotation() []*provider.Provider {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*provider.Provider
	for _, m := range g.members {
		if m.inRotation {
			out = append(out, m.p)
		}
	}
	return out
}

func joinSorted(s []string) string {
	slices.Sort(s)
	return strings.Join(s, "; ")
}

// retire marks the group gone: later operations answer unknown_group.
func (g *Group) retire() {
	g.mu.Lock()
	g.retired = true
	g.mu.Unlock()
}

func (g *Group) isRetired() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.retired
}
