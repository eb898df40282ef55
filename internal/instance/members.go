package instance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcp-hangar/hangar/internal/store"
)

// # Replicas on a shared store
//
// With a shared store (PostgreSQL) several gateways of one instance run at
// once, each a replica with a name of its own, and the lease's rule "one
// gateway per instance" becomes "one process per replica name". Each
// replica keeps a membership row alive with heartbeats; a row whose
// heartbeat stopped names a replica that is gone, and any live replica may
// remove what it left (its containers carry its name) and then the row.

// Defaults of Membership.
const (
	DefaultHeartbeat = 5 * time.Second
	// heartbeatsLost is how many heartbeats a replica may miss before the
	// others count it gone (TTL = heartbeatsLost × Every).
	heartbeatsLost = 3
)

// ErrReplicaTaken matches a *ReplicaTakenError with errors.Is.
var ErrReplicaTaken = errors.New("replica name in use")

// ReplicaTakenError: a live replica of the instance already uses the name.
type ReplicaTakenError struct {
	Member store.Member
}

func (e *ReplicaTakenError) Error() string {
	return fmt.Sprintf("replica %q of instance %q is already running (advertised at %q, heartbeat at %s): "+
		"give this gateway another --replica name (or $HANGAR_REPLICA)",
		e.Member.Replica, e.Member.Instance, e.Member.AdvertiseURL, e.Member.HeartbeatAt.Format(time.RFC3339))
}

func (e *ReplicaTakenError) Is(target error) bool { return target == ErrReplicaTaken }

// Membership is this replica's row in the shared store.
type Membership struct {
	Store store.Members
	// Self names the replica: Instance, Replica, AdvertiseURL, Engine.
	Self store.Member
	// Every is the heartbeat interval (DefaultHeartbeat); a replica is
	// gone once its heartbeat is 3 × Every old.
	Every time.Duration
	Log   *slog.Logger
}

func (m *Membership) every() time.Duration {
	if m.Every > 0 {
		return m.Every
	}
	return DefaultHeartbeat
}

// ttl is how old a heartbeat may be before its replica counts as gone.
func (m *Membership) ttl() time.Duration { return heartbeatsLost * m.every() }

// TTL is how old a heartbeat may be before its replica counts as gone.
func (m *Membership) TTL() time.Duration { return m.ttl() }

func (m *Membership) log() *slog.Logger {
	if m.Log != nil {
		return m.Log
	}
	return slog.Default()
}

// Join makes this process the replica: it refuses a name a live replica
// uses. A row of the same name whose heartbeat is fresh may be this
// replica's previous process (a restart in place): Join watches it for up
// to the TTL and takes the name once it stops beating; a row that keeps
// beating is another process, and Join fails with *ReplicaTakenError.
func (m *Membership) Join(ctx context.Context) error {
	if m.Self.Instance == "" || m.Self.Replica == "" {
		return errors.New("instance: membership needs an instance and a replica name")
	}
	first, ok, err := m.find(ctx)
	if err != nil {
		return err
	}
	if ok && time.Since(first.HeartbeatAt) < m.ttl() {
		deadline := first.HeartbeatAt.Add(m.ttl())
		t := time.NewTicker(m.every() / 2)
		defer t.Stop()
		for time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
			}
			cur, ok, err := m.find(ctx)
			if err != nil {
				return err
			}
			if !ok {
				break // removed meanwhile: the name is free
			}
			if cur.HeartbeatAt.After(first.HeartbeatAt) {
				return &ReplicaTakenError{Member: cur}
			}
		}
	}
	self := m.Self
	self.StartedAt, self.HeartbeatAt = time.Now().UTC(), time.Time{}
	if err := m.Store.Heartbeat(ctx, self); err != nil {
		return fmt.Errorf("instance: join as replica %s: %w", m.Self.Replica, err)
	}
	return nil
}

func (m *Membership) find(ctx context.Context) (store.Member, bool, error) {
	ms, err := m.Store.Members(ctx, m.Self.Instance)
	if err != nil {
		return store.Member{}, false, fmt.Errorf("instance: replica membership: %w", err)
	}
	for _, x := range ms {
		if x.Replica == m.Self.Replica {
			return x, true, nil
		}
	}
	return store.Member{}, false, nil
}

// Run beats every Every until ctx ends. A failed beat (the store is down)
// is logged and the next one tried: the others count this replica gone
// only after heartbeatsLost missed beats.
func (m *Membership) Run(ctx context.Context) {
	t := time.NewTicker(m.every())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		self := m.Self
		self.StartedAt, self.HeartbeatAt = time.Time{}, time.Time{} // keep the start, beat now
		bctx, cancel := context.WithTimeout(ctx, m.every())
		if err := m.Store.Heartbeat(bctx, self); err != nil && ctx.Err() == nil {
			m.log().Warn("replica heartbeat failed", "replica", m.Self.Replica, "error", err)
		}
		cancel()
	}
}

// Gone lists the instance's other replicas on this replica's engine whose
// heartbeat stopped. A replica on another engine is left to a live one
// there: its containers are out of reach from here, and forgetting its
// row would leave them to no one.
func (m *Membership) Gone(ctx context.Context) ([]store.Member, error) {
	ms, err := m.Store.Members(ctx, m.Self.Instance)
	if err != nil {
		return nil, fmt.Errorf("instance: replica membership: %w", err)
	}
	var gone []store.Member
	for _, x := range ms {
		if x.Replica != m.Self.Replica && x.Engine == m.Self.Engine && time.Since(x.HeartbeatAt) >= m.ttl() {
			gone = append(gone, x)
		}
	}
	return gone, nil
}

// Live counts the instance's replicas whose heartbeat is fresh, this one
// included (at least 1): what the rate limits are shared by.
func (m *Membership) Live(ctx context.Context) (int, error) {
	ms, err := m.Store.Members(ctx, m.Self.Instance)
	if err != nil {
		return 1, fmt.Errorf("instance: replica membership: %w", err)
	}
	n := 1 // this one, whatever its row says
	for _, x := range ms {
		if x.Replica != m.Self.Replica && time.Since(x.HeartbeatAt) < m.ttl() {
			n++
		}
	}
	return n, nil
}

// ReapGone removes what each gone replica left (reap: its containers) and
// then its row; a replica whose reap failed keeps its row for the next
// round. Two live replicas may reap the same one: both steps are
// idempotent. It returns the replicas it removed.
func (m *Membership) ReapGone(ctx context.Context, reap func(ctx context.Context, gone store.Member) error) ([]string, error) {
	gone, err := m.Gone(ctx)
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for _, g := range gone {
		if err := reap(ctx, g); err != nil {
			errs = append(errs, fmt.Errorf("reap replica %s: %w", g.Replica, err))
			continue
		}
		if err := m.Store.DeleteMember(ctx, g.Instance, g.Replica); err != nil {
			errs = append(errs, err)
			continue
		}
		m.log().Info("removed a replica whose heartbeat stopped", "replica", g.Replica,
			"last_heartbeat", g.HeartbeatAt.Format(time.RFC3339))
		done = append(done, g.Replica)
	}
	return done, errors.Join(errs...)
}

// Leave removes this replica's row (a clean shutdown): the others need not
// wait for the TTL to know it is gone.
func (m *Membership) Leave(ctx context.Context) error {
	return m.Store.DeleteMember(ctx, m.Self.Instance, m.Self.Replica)
}

// CheckReplica validates a replica name (--replica, $HANGAR_REPLICA): it
// is a label value and a log field, so the instance name's rules apply.
func CheckReplica(name string) error {
	if !validName().MatchString(name) {
		return fmt.Errorf("replica name %q: use 1-100 letters, digits, '_', '.' or '-', starting with a letter or digit "+
			"(set --replica or $HANGAR_REPLICA)", name)
	}
	return nil
}
