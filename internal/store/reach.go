package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrUnavailable is the kind of every error of a call that could not reach
// the database (a PostgreSQL server that is down or cut off).
var ErrUnavailable = errors.New("store: database unavailable")

// unavailableError names the database (without secrets) and the cause.
type unavailableError struct {
	where string
	err   error
}

func (e *unavailableError) Error() string {
	return fmt.Sprintf("database %s is unreachable (%v); retrying in the background", e.where, e.err)
}

func (e *unavailableError) Unwrap() []error { return []error{ErrUnavailable, e.err} }

// Bounds of the reconnect backoff, and of one probe.
const (
	reconnectFirst = 100 * time.Millisecond
	reconnectMax   = 5 * time.Second
	probeTimeout   = 5 * time.Second
)

// reachability knows whether a database that can go away is reachable.
// The first call that fails for want of a connection marks it down; from
// then on calls fail at once with an *unavailableError instead of each
// waiting for a connect to fail, and one goroutine pings with exponential
// backoff until the database answers. A nil *reachability is always up.
type reachability struct {
	where string
	ping  func(ctx context.Context) error
	// drop closes pooled connections, which died with the server.
	drop func()
	log  *slog.Logger

	ctx  context.Context // ends at Close
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu    sync.Mutex
	down  error // the *unavailableError while down
	since time.Time
}

func newReachability(where string, ping func(context.Context) error, drop func(), log *slog.Logger) *reachability {
	ctx, stop := context.WithCancel(context.Background())
	return &reachability{where: where, ping: ping, drop: drop, log: log, ctx: ctx, stop: stop}
}

// ready is nil while the database is reachable, else why not.
func (r *reachability) ready() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.down
}

// Unreachable is ready for hangar_health: nil, or why the database cannot
// be reached.
func (r *reachability) Unreachable() error { return r.ready() }

// observe passes err on; an error that says the connection is gone marks
// the database down and comes back as an *unavailableError.
func (r *reachability) observe(err error) error {
	if r == nil || err == nil || !connectionLost(err) {
		return err
	}
	ue := &unavailableError{where: r.where, err: err}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down != nil {
		return ue
	}
	if r.ctx.Err() != nil { // closed: nothing will reconnect
		return ue
	}
	r.down, r.since = ue, time.Now()
	r.log.Error("store unreachable: its reads and writes fail until it is back; reconnecting with backoff",
		"path", r.where, "error", err)
	r.wg.Go(r.reconnect)
	return ue
}

// reconnect pings with exponential backoff until the database answers or
// the store is closed.
func (r *reachability) reconnect() {
	if r.drop != nil {
		r.drop()
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = reconnectFirst, reconnectMax
	b.Reset()
	t := time.NewTimer(b.NextBackOff())
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(r.ctx, probeTimeout)
		err := r.ping(ctx)
		cancel()
		if err == nil {
			r.mu.Lock()
			down := time.Since(r.since)
			r.down = nil
			r.mu.Unlock()
			r.log.Info("store reachable again", "path", r.where, "down_for", down.Round(time.Millisecond).String())
			return
		}
		r.mu.Lock()
		r.down = &unavailableError{where: r.where, err: err}
		r.mu.Unlock()
		t.Reset(b.NextBackOff())
	}
}

// close stops reconnecting and waits for the goroutine.
func (r *reachability) close() {
	if r == nil {
		return
	}
	// Under mu: observe checks ctx and starts the goroutine under it too,
	// so none starts after this.
	r.mu.Lock()
	r.stop()
	r.mu.Unlock()
	r.wg.Wait()
}

// connectionLost reports errors that mean the server cannot be talked to,
// as opposed to an answer from it (a constraint, a syntax error) or the
// caller's own cancellation.
func connectionLost(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// 08: connection exceptions; 57P01-3: the server is shutting
		// down, was shut down, or cannot take connections yet.
		switch {
		case len(pe.Code) == 5 && pe.Code[:2] == "08",
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03":
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, pgconn.ErrConnClosed),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	return false
}
