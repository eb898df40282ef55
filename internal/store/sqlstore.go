package store

import (
	"context"
	"crypto/cipher"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// sqlStore is what the drivers share: every query of the interfaces in
// store.go, written once over database/sql, with the dialect's
// differences in dialect.go. SQLite and Postgres embed it and add how
// they open, close and watch their database.
type sqlStore struct {
	db      *sql.DB
	dialect *dialect
	// path names the database in messages and hangar_health: SQLite's
	// file ("" in memory), PostgreSQL's URL without its secrets.
	path string
	// dir is where the keystore key file is looked for ("" in memory).
	dir      string
	log      *slog.Logger
	auditMax int
	// auditMu serialises audit appends; auditRows is each server's
	// number of audit rows as of the last committed append (absent:
	// not counted yet), so that a trim deletes the oldest rows by number
	// instead of walking auditMax index entries to find the bound. Only
	// used with dialect.countedTrim.
	auditMu   sync.Mutex
	auditRows map[string]int

	keyMu  sync.Mutex
	keyOpt []byte
	aead   cipher.AEAD // nil until the keystore is first used
	key    []byte      // aead's key (DerivedKey); set with it

	errMu   sync.Mutex
	lastErr error

	// feed is where writes another replica must apply are announced
	// (PostgreSQL; see changes.go).
	feed changeFeed

	// reach fails calls at once while the database is known to be
	// unreachable, and learns of it from their errors; nil when the
	// database cannot go away (SQLite).
	reach *reachability
}

func newSQLStore(d *dialect, opts Options) (*sqlStore, error) {
	s := &sqlStore{dialect: d, log: opts.Log, auditMax: opts.AuditPerServer, keyOpt: opts.KeystoreKey}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.auditMax <= 0 {
		s.auditMax = DefaultAuditPerServer
	}
	if opts.KeystoreKey != nil && len(opts.KeystoreKey) != keySize {
		return nil, fmt.Errorf("store: Options.KeystoreKey is %d bytes, want %d", len(opts.KeystoreKey), keySize)
	}
	return s, nil
}

// Path names the database: SQLite's file ("" in memory), or PostgreSQL's
// URL without password.
func (s *sqlStore) Path() string { return s.path }

// LastWriteError is the last write failure, nil once a later write
// succeeded.
func (s *sqlStore) LastWriteError() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.lastErr
}

// write runs fn in one transaction. A failure is returned (so the caller
// acknowledges nothing), logged, and kept for LastWriteError; a success
// clears it. what names the operation and its key, never a value.
func (s *sqlStore) write(ctx context.Context, what string, fn func(tx tx) error) error {
	return s.record(what, s.inTx(ctx, fn))
}

// record remembers the outcome of a write for LastWriteError.
func (s *sqlStore) record(what string, err error) error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if err != nil {
		if !errors.Is(err, ErrKeystoreKey) { // those name themselves
			err = fmt.Errorf("store: %s: %w", what, err)
		}
		s.lastErr = err
		s.log.Error("store write failed", "op", what, "path", s.path, "error", err)
		return err
	}
	s.lastErr = nil
	return nil
}

func (s *sqlStore) inTx(ctx context.Context, fn func(tx tx) error) error {
	if err := s.reach.ready(); err != nil {
		return err
	}
	err := s.runTx(ctx, fn)
	return s.reach.observe(err)
}

func (s *sqlStore) runTx(ctx context.Context, fn func(tx tx) error) error {
	t, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx{t, s.dialect}); err != nil {
		_ = t.Rollback()
		return err
	}
	return t.Commit()
}

// exec is a write of one statement.
func (s *sqlStore) exec(ctx context.Context, what, query string, args ...any) error {
	return s.write(ctx, what, func(t tx) error {
		_, err := t.exec(ctx, query, args...)
		return err
	})
}

// execChanged is a write of one statement that the other replicas apply:
// the change (kind, id) is announced in the same transaction.
func (s *sqlStore) execChanged(ctx context.Context, what, kind, id, query string, args ...any) error {
	return s.write(ctx, what, func(t tx) error {
		if _, err := t.exec(ctx, query, args...); err != nil {
			return err
		}
		return s.notify(ctx, t, kind, id)
	})
}

// query is a read of many rows.
func (s *sqlStore) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := s.reach.ready(); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.dialect.q(query), args...)
	return rows, s.reach.observe(err)
}

// queryRow reads one row into dest; sql.ErrNoRows when there is none.
func (s *sqlStore) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	if err := s.reach.ready(); err != nil {
		return err
	}
	err := s.db.QueryRowContext(ctx, s.dialect.q(query), args...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return s.reach.observe(err)
}

// Times are stored as UTC Unix nanoseconds; 0 is the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func nowOr(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now().UTC()
	}
	return t
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ---------------------------------------------------------------------------
// Decisions

// Decisions lists every decision, by key then kind.
func (s *sqlStore) Decisions(ctx context.Context) ([]Decision, error) {
	rows, err := s.query(ctx,
		`SELECT key, kind, fingerprint, source, reason, detail, at FROM decisions ORDER BY key, kind`)
	if err != nil {
		return nil, fmt.Errorf("store: decisions: %w", err)
	}
	defer rows.Close()
	var out []Decision
	for rows.Next() {
		var d Decision
		var at int64
		if err := rows.Scan(&d.Key, &d.Kind, &d.Fingerprint, &d.Source, &d.Reason, &d.Detail, &at); err != nil {
			return nil, fmt.Errorf("store: decisions: %w", err)
		}
		d.At = fromNanos(at)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: decisions: %w", err)
	}
	return out, nil
}

// PutDecision stores d, replacing the decision of the same key and kind.
func (s *sqlStore) PutDecision(ctx context.Context, d Decision) error {
	if d.Key == "" || d.Kind == "" {
		return errors.New("store: put decision: key and kind are required")
	}
	return s.execChanged(ctx, "put decision "+d.Kind+" "+d.Key, ChangeDecision, d.Key, `INSERT INTO decisions (key, kind, fingerprint, source, reason, detail, at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (key, kind) DO UPDATE SET fingerprint = excluded.fingerprint, source = excluded.source,
			reason = excluded.reason, detail = excluded.detail, at = excluded.at`,
		d.Key, d.Kind, d.Fingerprint, d.Source, d.Reason, d.Detail, nanos(nowOr(d.At)))
}

// DeleteDecision forgets the decision of key and kind; none is not an error.
func (s *sqlStore) DeleteDecision(ctx context.Context, key, kind string) error {
	return s.execChanged(ctx, "delete decision "+kind+" "+key, ChangeDecision, key, `DELETE FROM decisions WHERE key = ? AND kind = ?`, key, kind)
}

// ---------------------------------------------------------------------------
// Installs

// Installs lists the installed servers by name.
func (s *sqlStore) Installs(ctx context.Context) ([]Install, error) {
	rows, err := s.query(ctx,
		`SELECT name, config, enabled, allow_implicit, created_at, updated_at FROM installs ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("store: installs: %w", err)
	}
	defer rows.Close()
	var out []Install
	for rows.Next() {
		var in Install
		var created, updated int64
		var cfg []byte
		if err := rows.Scan(&in.Name, &cfg, &in.Enabled, &in.AllowImplicit, &created, &updated); err != nil {
			return nil, fmt.Errorf("store: installs: %w", err)
		}
		in.Config = cfg
		in.CreatedAt, in.UpdatedAt = fromNanos(created), fromNanos(updated)
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: installs: %w", err)
	}
	return out, nil
}

// PutInstall stores in, replacing the install of the same name. A zero
// CreatedAt keeps the stored one (now for a new install); a zero UpdatedAt
// is now.
func (s *sqlStore) PutInstall(ctx context.Context, in Install) error {
	if in.Name == "" {
		return errors.New("store: put install: name is required")
	}
	return s.execChanged(ctx, "put install "+in.Name, ChangeInstall, in.Name, `INSERT INTO installs (name, config, enabled, allow_implicit, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET config = excluded.config, enabled = excluded.enabled,
			allow_implicit = excluded.allow_implicit, updated_at = excluded.updated_at,
			created_at = CASE WHEN ? THEN installs.created_at ELSE excluded.created_at END`,
		in.Name, []byte(in.Config), boolInt(in.Enabled), boolInt(in.AllowImplicit),
		nanos(nowOr(in.CreatedAt)), nanos(nowOr(in.UpdatedAt)), in.CreatedAt.IsZero())
}

// DeleteInstall forgets an install; none is not an error.
func (s *sqlStore) DeleteInstall(ctx context.Context, name string) error {
	return s.execChanged(ctx, "delete install "+name, ChangeInstall, name, `DELETE FROM installs WHERE name = ?`, name)
}

// ---------------------------------------------------------------------------
// Tool pins

// ToolPins lists a server's pins by tool name.
func (s *sqlStore) ToolPins(ctx context.Context, server string) ([]ToolPin, error) {
	rows, err := s.query(ctx,
		`SELECT server, tool, hash, definition, pinned_at FROM tool_pins WHERE server = ? ORDER BY tool`, server)
	if err != nil {
		return nil, fmt.Errorf("store: tool pins: %w", err)
	}
	defer rows.Close()
	var out []ToolPin
	for rows.Next() {
		var p ToolPin
		var def []byte
		var at int64
		if err := rows.Scan(&p.Server, &p.Tool, &p.Hash, &def, &at); err != nil {
			return nil, fmt.Errorf("store: tool pins: %w", err)
		}
		p.Definition, p.PinnedAt = def, fromNanos(at)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: tool pins: %w", err)
	}
	return out, nil
}

// ReplaceToolPins replaces server's whole set of pins in one transaction;
// an empty set removes them. Each pin's Server is taken from server.
func (s *sqlStore) ReplaceToolPins(ctx context.Context, server string, pins []ToolPin) error {
	if server == "" {
		return errors.New("store: replace tool pins: server is required")
	}
	return s.write(ctx, "replace tool pins "+server, func(t tx) error {
		if _, err := t.exec(ctx, `DELETE FROM tool_pins WHERE server = ?`, server); err != nil {
			return err
		}
		for _, p := range pins {
			if _, err := t.exec(ctx, `INSERT INTO tool_pins (server, tool, hash, definition, pinned_at)
				VALUES (?, ?, ?, ?, ?)`, server, p.Tool, p.Hash, []byte(p.Definition), nanos(nowOr(p.PinnedAt))); err != nil {
				return fmt.Errorf("tool %s: %w", p.Tool, err)
			}
		}
		return nil
	})
}

// ---------------------------------------------------------------------------
// Image digests

// ImageDigest is the digest approved for server, ErrNotFound when none.
func (s *sqlStore) ImageDigest(ctx context.Context, server string) (ImageDigest, error) {
	d := ImageDigest{Server: server}
	var at int64
	err := s.queryRow(ctx, `SELECT ref, digest, approved_at FROM image_digests WHERE server = ?`, []any{server},
		&d.Ref, &d.Digest, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return ImageDigest{}, ErrNotFound
	}
	if err != nil {
		return ImageDigest{}, fmt.Errorf("store: image digest: %w", err)
	}
	d.ApprovedAt = fromNanos(at)
	return d, nil
}

// PutImageDigest stores d, replacing the server's digest.
func (s *sqlStore) PutImageDigest(ctx context.Context, d ImageDigest) error {
	if d.Server == "" {
		return errors.New("store: put image digest: server is required")
	}
	return s.exec(ctx, "put image digest "+d.Server, `INSERT INTO image_digests (server, ref, digest, approved_at)
		VALUES (?, ?, ?, ?)
		ON CONFLICT (server) DO UPDATE SET ref = excluded.ref, digest = excluded.digest, approved_at = excluded.approved_at`,
		d.Server, d.Ref, d.Digest, nanos(nowOr(d.ApprovedAt)))
}

// DeleteImageDigest forgets server's digest; none is not an error.
func (s *sqlStore) DeleteImageDigest(ctx context.Context, server string) error {
	return s.exec(ctx, "delete image digest "+server, `DELETE FROM image_digests WHERE server = ?`, server)
}

// ---------------------------------------------------------------------------
// Package pins

const packagePinColumns = `server, type, name, spec, version, integrity, file, image, resolved_at`

// scanPackagePin reads a row of packagePinColumns.
func scanPackagePin(scan func(dest ...any) error) (PackagePin, error) {
	var p PackagePin
	var at int64
	err := scan(&p.Server, &p.Type, &p.Name, &p.Spec, &p.Version, &p.Integrity, &p.File, &p.Image, &at)
	p.ResolvedAt = fromNanos(at)
	return p, err
}

// PackagePin is server's package pin, ErrNotFound when none.
func (s *sqlStore) PackagePin(ctx context.Context, server string) (PackagePin, error) {
	p, err := scanPackagePin(func(dest ...any) error {
		return s.queryRow(ctx, `SELECT `+packagePinColumns+` FROM package_pins WHERE server = ?`, []any{server}, dest...)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return PackagePin{}, ErrNotFound
	}
	if err != nil {
		return PackagePin{}, fmt.Errorf("store: package pin: %w", err)
	}
	return p, nil
}

// PackagePins are every server's package pin, by server.
func (s *sqlStore) PackagePins(ctx context.Context) ([]PackagePin, error) {
	rows, err := s.query(ctx, `SELECT `+packagePinColumns+` FROM package_pins ORDER BY server`)
	if err != nil {
		return nil, fmt.Errorf("store: package pins: %w", err)
	}
	defer rows.Close()
	var out []PackagePin
	for rows.Next() {
		p, err := scanPackagePin(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("store: package pins: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: package pins: %w", err)
	}
	return out, nil
}

// PutPackagePin stores p, replacing the server's pin.
func (s *sqlStore) PutPackagePin(ctx context.Context, p PackagePin) error {
	if p.Server == "" {
		return errors.New("store: put package pin: server is required")
	}
	return s.exec(ctx, "put package pin "+p.Server, `INSERT INTO package_pins (`+packagePinColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (server) DO UPDATE SET type = excluded.type, name = excluded.name, spec = excluded.spec,
			version = excluded.version, integrity = excluded.integrity, file = excluded.file, image = excluded.image,
			resolved_at = excluded.resolved_at`,
		p.Server, p.Type, p.Name, p.Spec, p.Version, p.Integrity, p.File, p.Image, nanos(nowOr(p.ResolvedAt)))
}

// DeletePackagePin forgets server's pin; none is not an error.
func (s *sqlStore) DeletePackagePin(ctx context.Context, server string) error {
	return s.exec(ctx, "delete package pin "+server, `DELETE FROM package_pins WHERE server = ?`, server)
}

// ---------------------------------------------------------------------------
// Catalogs

// Catalog is server's cached catalog, ErrNotFound when none.
func (s *sqlStore) Catalog(ctx context.Context, server string) (CachedCatalog, error) {
	c := CachedCatalog{Server: server}
	var cat []byte
	var at int64
	err := s.queryRow(ctx, `SELECT version, image_digest, catalog, updated_at FROM catalogs WHERE server = ?`, []any{server},
		&c.Version, &c.ImageDigest, &cat, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return CachedCatalog{}, ErrNotFound
	}
	if err != nil {
		return CachedCatalog{}, fmt.Errorf("store: catalog: %w", err)
	}
	c.Catalog, c.UpdatedAt = cat, fromNanos(at)
	return c, nil
}

// PutCatalog stores c, replacing the server's cached catalog.
func (s *sqlStore) PutCatalog(ctx context.Context, c CachedCatalog) error {
	if c.Server == "" {
		return errors.New("store: put catalog: server is required")
	}
	return s.exec(ctx, "put catalog "+c.Server, `INSERT INTO catalogs (server, version, image_digest, catalog, updated_at)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (server) DO UPDATE SET version = excluded.version, image_digest = excluded.image_digest,
			catalog = excluded.catalog, updated_at = excluded.updated_at`,
		c.Server, c.Version, c.ImageDigest, []byte(c.Catalog), nanos(nowOr(c.UpdatedAt)))
}

// DeleteCatalog forgets server's cached catalog; none is not an error.
func (s *sqlStore) DeleteCatalog(ctx context.Context, server string) error {
	return s.exec(ctx, "delete catalog "+server, `DELETE FROM catalogs WHERE server = ?`, server)
}

// ---------------------------------------------------------------------------
// Audit

// AppendAudit appends e (its ID is assigned; a zero At is now) and drops
// the server's entries beyond Options.AuditPerServer, oldest first.
func (s *sqlStore) AppendAudit(ctx context.Context, e AuditEntry) error {
	return s.appendAudit(ctx, "append audit "+e.Server, []AuditEntry{e})
}

// trimAudit drops, for each server that got added[server] rows in t, its
// entries beyond auditMax, oldest first; with a counted trim it returns
// the servers' row counts once t commits. Call it with auditMu held.
func (s *sqlStore) trimAudit(ctx context.Context, t tx, added map[string]int) (map[string]int, error) {
	if !s.dialect.countedTrim {
		for server := range added {
			// The newest auditMax ids stay: everything older than the
			// oldest of them goes (nothing while there are fewer).
			if _, err := t.exec(ctx, `DELETE FROM audit WHERE server = ? AND id <
				(SELECT id FROM audit WHERE server = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
				server, server, s.auditMax-1); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	rows := make(map[string]int, len(added))
	for server, n := range added {
		before, known := s.auditRows[server]
		if !known {
			// Counted after the insert: the rows before it are the rest.
			if err := t.queryRow(ctx, `SELECT COUNT(*) FROM audit WHERE server = ?`, server).Scan(&before); err != nil {
				return nil, err
			}
			before -= n
		}
		rows[server] = before + n
		if rows[server] <= s.auditMax {
			continue
		}
		// The newest auditMax ids of the server stay: the count says how
		// many of the oldest go, so only those are walked.
		if _, err := t.exec(ctx, `DELETE FROM audit WHERE id IN
			(SELECT id FROM audit WHERE server = ? ORDER BY id LIMIT ?)`, server, rows[server]-s.auditMax); err != nil {
			return nil, err
		}
		rows[server] = s.auditMax
	}
	return rows, nil
}

// countedAudit keeps the row counts of a committed append; after a failed
// one the counts are unknown again (counted at the next append).
func (s *sqlStore) countedAudit(rows map[string]int, err error) {
	if !s.dialect.countedTrim {
		return
	}
	if err != nil {
		s.auditRows = nil
		return
	}
	if s.auditRows == nil {
		s.auditRows = map[string]int{}
	}
	for server, n := range rows {
		s.auditRows[server] = n
	}
}

// RecentAudit lists up to limit entries of server, newest first; an empty
// server lists every server's, and limit <= 0 means Options.AuditPerServer.
func (s *sqlStore) RecentAudit(ctx context.Context, server string, limit int) ([]AuditEntry, error) {
	if limit <= 0 {
		limit = s.auditMax
	}
	q := `SELECT id, at, server, identity, action, tool, allowed, reason, outcome, duration_ms, rule FROM audit`
	args := []any{}
	if server != "" {
		q += ` WHERE server = ?`
		args = append(args, server)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: audit: %w", err)
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var e AuditEntry
		var at int64
		if err := rows.Scan(&e.ID, &at, &e.Server, &e.Identity, &e.Action, &e.Tool, &e.Allowed, &e.Reason,
			&e.Outcome, &e.DurationMs, &e.Rule); err != nil {
			return nil, fmt.Errorf("store: audit: %w", err)
		}
		e.At = fromNanos(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: audit: %w", err)
	}
	return out, nil
}

// ---------------------------------------------------------------------------
// Snapshots

const metaSnapshot = "snapshot_version"

// SnapshotVersion is the current snapshot_version (0 before the first).
// The meta value is text on PostgreSQL and an integer on SQLite: the casts
// read both.
func (s *sqlStore) SnapshotVersion(ctx context.Context) (uint64, error) {
	var v int64
	if err := s.queryRow(ctx, `SELECT CAST(value AS BIGINT) FROM meta WHERE key = ?`, []any{metaSnapshot}, &v); err != nil {
		return 0, fmt.Errorf("store: snapshot version: %w", err)
	}
	return uint64(v), nil
}

// NextSnapshotVersion increments snapshot_version durably and returns the
// new value. The row lock of the UPDATE orders concurrent increments, of
// this process or of other replicas.
func (s *sqlStore) NextSnapshotVersion(ctx context.Context) (uint64, error) {
	var v int64
	err := s.write(ctx, "next snapshot version", func(t tx) error {
		return t.queryRow(ctx, s.dialect.snapshotIncrement(), metaSnapshot).Scan(&v)
	})
	if err != nil {
		return 0, err
	}
	return uint64(v), nil
}

// metaValue reads a text meta value, "" and false when absent.
func metaValue(ctx context.Context, row func(query string, args []any, dest ...any) error, key string) (string, bool, error) {
	var v sql.NullString
	err := row(`SELECT value FROM meta WHERE key = ?`, []any{key}, &v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return v.String, true, nil
}

// dbRow and txRow are the two sources metaValue reads from.
func (s *sqlStore) dbRow(ctx context.Context) func(string, []any, ...any) error {
	return func(q string, args []any, dest ...any) error { return s.queryRow(ctx, q, args, dest...) }
}

func (t tx) row(ctx context.Context) func(string, []any, ...any) error {
	return func(q string, args []any, dest ...any) error { return t.queryRow(ctx, q, args...).Scan(dest...) }
}

func setMeta(ctx context.Context, t tx, key, value string) error {
	_, err := t.exec(ctx, `INSERT INTO meta (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	return err
}
