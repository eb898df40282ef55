package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Member is one gateway replica of an instance that shares the store.
type Member struct {
	Instance     string
	Replica      string
	AdvertiseURL string // where the other replicas reach it
	// Engine is the ID of the Docker engine its containers run on: only a
	// replica on the same engine can remove them.
	Engine      string
	StartedAt   time.Time
	HeartbeatAt time.Time
}

// Members is replica membership: each replica beats its row, and a row
// whose heartbeat stopped names a replica that is gone.
type Members interface {
	// Heartbeat stores m, replacing its row. A zero HeartbeatAt is now; a
	// zero StartedAt keeps the stored one (now for a new member).
	Heartbeat(ctx context.Context, m Member) error
	// Members lists an instance's replicas by name.
	Members(ctx context.Context, instance string) ([]Member, error)
	// DeleteMember forgets a replica; none is not an error.
	DeleteMember(ctx context.Context, instance, replica string) error
}

// Heartbeat stores m (see Members).
func (s *sqlStore) Heartbeat(ctx context.Context, m Member) error {
	if m.Instance == "" || m.Replica == "" {
		return errors.New("store: heartbeat: instance and replica are required")
	}
	return s.exec(ctx, "heartbeat "+m.Instance+"/"+m.Replica, `INSERT INTO replicas
		(instance, replica, advertise_url, engine, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (instance, replica) DO UPDATE SET advertise_url = excluded.advertise_url,
			engine = excluded.engine, heartbeat_at = excluded.heartbeat_at,
			started_at = CASE WHEN ? THEN replicas.started_at ELSE excluded.started_at END`,
		m.Instance, m.Replica, m.AdvertiseURL, m.Engine, nanos(nowOr(m.StartedAt)), nanos(nowOr(m.HeartbeatAt)), m.StartedAt.IsZero())
}

// Members lists instance's replicas by name.
func (s *sqlStore) Members(ctx context.Context, instance string) ([]Member, error) {
	rows, err := s.query(ctx, `SELECT instance, replica, advertise_url, engine, started_at, heartbeat_at FROM replicas
		WHERE instance = ? ORDER BY replica`, instance)
	if err != nil {
		return nil, fmt.Errorf("store: members: %w", err)
	}
	defer rows.Close()
	var out []Member
	for rows.Next() {
		var m Member
		var started, beat int64
		if err := rows.Scan(&m.Instance, &m.Replica, &m.AdvertiseURL, &m.Engine, &started, &beat); err != nil {
			return nil, fmt.Errorf("store: members: %w", err)
		}
		m.StartedAt, m.HeartbeatAt = fromNanos(started), fromNanos(beat)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: members: %w", err)
	}
	return out, nil
}

// DeleteMember forgets a replica; none is not an error.
func (s *sqlStore) DeleteMember(ctx context.Context, instance, replica string) error {
	return s.exec(ctx, "delete member "+instance+"/"+replica,
		`DELETE FROM replicas WHERE instance = ? AND replica = ?`, instance, replica)
}
