package provider

import (
	"context"
	"errors"
	"time"
)

// healthCheckTimeout bounds one tools/list health check (seed 002).
const healthCheckTimeout = 5 * time.Second

// dueForCheck reports whether the provider should be health-checked now,
// and returns the instance to check.
func (p *Provider) dueForCheck(now time.Time) (*instance, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inst == nil || p.checking {
		return nil, false
	}
	switch p.state {
	case Ready:
		interval := p.spec.HealthCheckInterval
		if interval <= 0 {
			interval = 60 * time.Second
		}
		last := p.health.LastCheck
		if last.IsZero() {
			last = p.inst.startedAt
		}
		if now.Sub(last) < interval {
			return nil, false
		}
	case Degraded:
		// A degraded provider gets one more chance once its backoff is
		// over: a success brings it back, a failure sends it to COLD.
		if now.Before(p.degradedUntil) {
			return nil, false
		}
	default:
		return nil, false
	}
	p.checking = true
	return p.inst, true
}

// CheckHealth runs one health check if one is due: tools/list with a 5 s
// timeout, which also refreshes the tool cache. It reports whether a check
// ran.
func (p *Provider) CheckHealth(ctx context.Context) bool {
	now := p.opts.Now()
	inst, due := p.dueForCheck(now)
	if !due {
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, healthCheckTimeout)
	tools, err := inst.b.ListTools(cctx)
	unknown := errors.Is(err, ErrToolsUnknown)
	if unknown {
		err = nil // alive; its tools come with its first caller
	}
	var q *Quarantine
	if err == nil && !unknown {
		q = p.vetTools(cctx, tools)
	}
	cancel()
	p.events().HealthChecked(p.id, err)

	now = p.opts.Now()
	var retire *instance
	p.mu.Lock()
	p.checking = false
	p.health.LastCheck = now
	if p.inst != inst {
		// Stopped or restarted while the check ran; the result is stale.
		p.mu.Unlock()
		return true
	}
	if err == nil {
		if !unknown {
			p.tools = tools
			p.applyVet(q, tools)
		}
		p.health.ConsecutiveFailures = 0
		p.health.LastSuccessAt = now
		p.degradations = 0
		if p.state == Degraded {
			p.setState(Ready)
			p.log.Info("recovered")
		}
		p.mu.Unlock()
		p.syncQuarantine(ctx)
		return true
	}
	p.health.ConsecutiveFailures++
	p.health.LastFailureAt = now
	limit := max(p.spec.MaxConsecutiveFailures, 1)
	switch {
	case p.state == Degraded:
		retire = inst
		p.inst = nil
		p.lastErr = Errorf(KindUnavailable, p.id, "health check failed after backoff: %v", err)
		p.setState(Cold)
	case p.health.ConsecutiveFailures >= limit:
		p.degradations++
		p.degradedUntil = now.Add(p.backoff(p.degradations))
		p.lastErr = Errorf(KindUnavailable, p.id, "%d health checks failed: %v", p.health.ConsecutiveFailures, err)
		p.setState(Degraded)
	}
	p.mu.Unlock()
	p.log.Warn("health check failed", "error", err, "consecutive_failures", p.health.ConsecutiveFailures)
	if retire != nil {
		retire.stopReason.Store(ptr("health_check_failed"))
		_ = retire.b.Stop(context.WithoutCancel(ctx))
	}
	return true
}

func ptr[T any](v T) *T { return &v }

// Demand is a mark for StopIfUnwanted: it changes whenever anyone asks
// for the backend (a call, a start, a warm, a read of its resources).
func (p *Provider) Demand() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.demand
}

// StopIfUnwanted stops a backend started for one purpose only (a catalog
// prefetch) unless someone else asked for the provider since mark (a
// warm, a call: they keep it, and the idle TTL stops it later). Work that
// asked nobody (a health check, a read of its lists) finishes first; if it
// does not before ctx ends, the provider is left to its idle TTL. Each
// check and the detach happen under one lock, so a call cannot slip in
// between.
func (p *Provider) StopIfUnwanted(ctx context.Context, reason string, mark uint64) bool {
	p.mu.Lock()
	for {
		if p.inst == nil || p.demand != mark || (p.state != Ready && p.state != Degraded) {
			p.mu.Unlock()
			return false
		}
		if p.inflight == 0 && !p.checking {
			break
		}
		p.mu.Unlock()
		sleep(ctx, 20*time.Millisecond)
		if ctx.Err() != nil {
			return false
		}
		p.mu.Lock()
	}
	inst := p.inst
	p.inst = nil
	p.crashes = 0
	p.setState(Cold)
	p.mu.Unlock()
	inst.stopReason.Store(&reason)
	p.log.Info("stopping", "reason", reason)
	_ = inst.b.Stop(context.WithoutCancel(ctx))
	return true
}

// StopIfIdle stops the provider when no call is in flight and it has not
// been used for its idle TTL. The check and the detach happen under one
// lock, so a call cannot slip in between.
func (p *Provider) StopIfIdle(ctx context.Context) bool {
	ttl := p.spec.IdleTTL
	if ttl <= 0 {
		return false
	}
	now := p.opts.Now()
	p.mu.Lock()
	if p.inst == nil || p.inflight > 0 || p.checking || (p.state != Ready && p.state != Degraded) || now.Sub(p.lastUsed) < ttl {
		p.mu.Unlock()
		return false
	}
	inst := p.inst
	p.inst = nil
	p.crashes = 0
	p.setState(Cold)
	p.mu.Unlock()
	inst.stopReason.Store(ptr("idle"))
	p.log.Info("stopping idle provider", "idle_ttl_s", ttl.Seconds())
	_ = inst.b.Stop(ctx)
	return true
}
