package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/jackc/pgx/v5"
)

// # Changes between replicas
//
// Replicas sharing a PostgreSQL store each hold what they read from it in
// memory (installs, decisions, the config they loaded). A write that
// another replica must apply sends a NOTIFY in the same transaction, so
// the notice exists exactly when the write committed; each replica
// LISTENs on one dedicated connection and re-reads what a Change names.
// The payload carries kind and key only: the row itself is read from the
// store, so no value (a secret, an argument) travels in a notice.
// SQLite has one process and no Changes.

// Kinds of Change.
const (
	// ChangeDecision: the approval or quarantine decisions of ID changed.
	ChangeDecision = "decision"
	// ChangeInstall: the install of ID (its config, secrets or policy)
	// changed or was removed.
	ChangeInstall = "install"
	// ChangeConfig: a replica reloaded the config file (Announce): the
	// others reload theirs (servers, tokens, rate limits).
	ChangeConfig = "config"
	// ChangeHotload: the stored hot-loads changed (a server hot-loaded or
	// unloaded: PutHotload, DeleteHotload, ClearHotloads); ID is its
	// registry name, "" for all.
	ChangeHotload = "hotload"
	// ChangeUnload: a replica of round 3 unloaded the hot-loaded server
	// ID (it announced hot-loads rather than storing them).
	ChangeUnload = "unload"
	// ChangeMembers: a replica joined or left (Announce); the others
	// count the live replicas again (rate limits are shared by them).
	ChangeMembers = "members"
	// ChangeResync: the feed was (re)connected and notices may have been
	// missed meanwhile: re-read everything.
	ChangeResync = "resync"
)

// Change is one change another process made to the shared store.
type Change struct {
	Kind string
	ID   string
}

// Changes is the feed of the changes other processes make to a shared
// store (Postgres has it; SQLite, with one process, does not).
type Changes interface {
	// Watch delivers the changes other processes commit, from now until
	// ctx ends (the channel is then closed). The first Change is a
	// ChangeResync once listening, and another follows every reconnect.
	Watch(ctx context.Context) <-chan Change
	// Announce tells the other processes of a change that is no store
	// write (a config reload, a hot-load).
	Announce(ctx context.Context, c Change) error
}

var _ Changes = (*Postgres)(nil)

// notice is a Change on the wire; O is the origin, so a process drops its
// own.
type notice struct {
	O  string `json:"o"`
	K  string `json:"k"`
	ID string `json:"id,omitempty"`
}

// changeFeed is the shared part of the sqlStore: the channel it notifies
// on ("" when the driver has no feed) and this process's origin.
type changeFeed struct {
	channel string
	origin  string
}

func newOrigin() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// notify sends c in t, so it is delivered only if t commits; nothing
// without a feed.
func (s *sqlStore) notify(ctx context.Context, t tx, kind, id string) error {
	if s.feed.channel == "" {
		return nil
	}
	payload, _ := json.Marshal(notice{O: s.feed.origin, K: kind, ID: id})
	_, err := t.exec(ctx, `SELECT pg_notify(?, ?)`, s.feed.channel, string(payload))
	return err
}

// changeChannelQuery names the channel of the store's schema: notices of another
// schema (another instance's store in the same database) are not heard.
// The name is short because a channel name is an identifier (63 bytes).
const changeChannelQuery = `SELECT 'hangar_' || left(md5(current_schema()), 16)`

// Announce implements Changes.
func (s *Postgres) Announce(ctx context.Context, c Change) error {
	return s.write(ctx, "announce "+c.Kind, func(t tx) error { return s.notify(ctx, t, c.Kind, c.ID) })
}

// Watch implements Changes: one connection of its own LISTENs (a pooled
// one would go back to the pool); a lost connection is made again with
// backoff, and a ChangeResync follows it.
func (s *Postgres) Watch(ctx context.Context) <-chan Change {
	out := make(chan Change, 64)
	go func() {
		defer close(out)
		b := backoff.NewExponentialBackOff()
		b.InitialInterval, b.MaxInterval = reconnectFirst, reconnectMax
		for ctx.Err() == nil {
			err := s.listen(ctx, out, b.Reset)
			if ctx.Err() != nil {
				return
			}
			wait := b.NextBackOff()
			s.log.Warn("store change feed lost; reconnecting", "path", s.path, "error", err, "retry_in", wait)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}()
	return out
}

// listen LISTENs on one connection until it fails or ctx ends; connected
// is called once listening.
func (s *Postgres) listen(ctx context.Context, out chan<- Change, connected func()) error {
	cctx, cancel := context.WithTimeout(ctx, probeTimeout)
	conn, err := pgx.ConnectConfig(cctx, s.listenCfg.Copy())
	cancel()
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.feed.channel}.Sanitize()); err != nil {
		return err
	}
	connected()
	if !send(ctx, out, Change{Kind: ChangeResync}) {
		return ctx.Err()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var m notice
		if json.Unmarshal([]byte(n.Payload), &m) != nil || m.O == s.feed.origin || m.K == "" {
			continue
		}
		if !send(ctx, out, Change{Kind: m.K, ID: m.ID}) {
			return ctx.Err()
		}
	}
}

func send(ctx context.Context, out chan<- Change, c Change) bool {
	select {
	case out <- c:
		return true
	case <-ctx.Done():
		return false
	}
}
