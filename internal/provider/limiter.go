package provider

import "context"

// Limiter is a counting semaphore whose Acquire gives up when ctx ends.
type Limiter struct{ slots chan struct{} }

// NewLimiter allows n holders at once.
func NewLimiter(n int) *Limiter { return &Limiter{slots: make(chan struct{}, n)} }

// Acquire takes a slot, waiting until ctx ends.
func (l *Limiter) Acquire(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		return nil
	default:
	}
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release frees a slot taken by Acquire.
func (l *Limiter) Release() { <-l.slots }

// Cap is the number of slots; InUse how many are taken.
func (l *Limiter) Cap() int   { return cap(l.slots) }
func (l *Limiter) InUse() int { return len(l.slots) }
