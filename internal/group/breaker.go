package group

import "time"

// Circuit breaker states, as reported.
const (
	circuitClosed   = "closed"
	circuitOpen     = "open"
	circuitHalfOpen = "half_open"
)

// breaker is a group's circuit breaker. failure_threshold consecutive
// failed calls open it; while open every call is refused. Once
// reset_timeout has passed one trial call is let through (half-open): its
// success closes the breaker, its failure opens it again for another
// reset_timeout. It is not safe for concurrent use: the group's lock
// guards it.
type breaker struct {
	threshold int
	timeout   time.Duration

	failures int       // consecutive failed calls while closed
	openedAt time.Time // zero while closed
	trial    bool      // the half-open trial call is in flight
	epoch    int       // bumped by reset: calls let through before it no longer count
}

// ticket is what allow gives a call it lets through, for done.
type ticket struct {
	trial bool
	epoch int
}

func newBreaker(threshold int, timeout time.Duration) breaker {
	return breaker{threshold: max(threshold, 1), timeout: timeout}
}

// allow reports whether a call may go through now; the caller must report
// the outcome of a call let through with done and its ticket.
func (b *breaker) allow(now time.Time) (ticket, bool) {
	switch {
	case b.openedAt.IsZero():
		return ticket{epoch: b.epoch}, true
	case now.Before(b.openedAt.Add(b.timeout)) || b.trial:
		return ticket{}, false
	}
	b.trial = true
	return ticket{trial: true, epoch: b.epoch}, true
}

// outcome of a call, for the breaker.
type outcome int

const (
	neutral outcome = iota // the call says nothing about the group's health
	success
	failure
)

// done records a call's outcome and says whether it opened or closed the
// breaker.
func (b *breaker) done(now time.Time, o outcome, t ticket) (opened, closed bool) {
	if t.epoch != b.epoch {
		return false, false
	}
	if t.trial {
		b.trial = false
		switch o {
		case success:
			b.openedAt, b.failures = time.Time{}, 0
			return false, true
		case failure:
			b.openedAt = now
			return true, false
		}
		// A trial that proves nothing leaves the next call to be the trial.
		return false, false
	}
	if !b.openedAt.IsZero() {
		// Let through before the breaker opened; too late to matter.
		return false, false
	}
	switch o {
	case success:
		b.failures = 0
	case failure:
		b.failures++
		if b.failures >= b.threshold {
			b.openedAt = now
			return true, false
		}
	}
	return false, false
}

// status is closed, open or half_open.
func (b *breaker) status(now time.Time) string {
	switch {
	case b.openedAt.IsZero():
		return circuitClosed
	case now.Before(b.openedAt.Add(b.timeout)):
		return circuitOpen
	}
	return circuitHalfOpen
}

// refusing reports whether a call made now would be refused.
func (b *breaker) refusing(now time.Time) bool {
	return !b.openedAt.IsZero() && (now.Before(b.openedAt.Add(b.timeout)) || b.trial)
}

// retryAt is when an open breaker lets a trial through.
func (b *breaker) retryAt() time.Time { return b.openedAt.Add(b.timeout) }

// reset closes the breaker (a rebalance); calls in flight no longer count.
func (b *breaker) reset() {
	b.failures, b.openedAt, b.trial = 0, time.Time{}, false
	b.epoch++
}
