package store

import (
	"context"
	"crypto/cipher"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
)

// FileName is the database file inside the data directory.
const FileName = "hangar.db"

// DefaultAuditPerServer is how many audit entries a server keeps when
// Options.AuditPerServer is not set.
const DefaultAuditPerServer = 1000

// openTimeout bounds the work of Open (integrity check, migrations).
const openTimeout = time.Minute

// Options tune a SQLite store. The zero value is the default.
type Options struct {
	// AuditPerServer bounds each server's audit trail; the oldest entries
	// are dropped first (default DefaultAuditPerServer).
	AuditPerServer int
	// KeystoreKey is the keystore's AES-256 key (32 bytes). Nil: the key
	// in $HANGAR_KEYSTORE_KEY (base64), else the file keystore.key beside
	// the database, created on first use (an in-memory store makes up a
	// key for its lifetime).
	KeystoreKey []byte
	// Log receives run-time write failures (default slog.Default()).
	Log *slog.Logger
}

// SQLite is the Store on an embedded SQLite database (modernc.org/sqlite,
// pure Go). Every write runs in one transaction and is synced to disk
// (WAL, synchronous=FULL) before the method returns, so a caller that gets
// nil may acknowledge the decision.
type SQLite struct {
	db       *sql.DB
	path     string // "" in memory
	dir      string
	lock     *dirLock
	log      *slog.Logger
	auditMax int
	// auditMu serialises audit appends; auditRows is each server's
	// number of audit rows as of the last committed append (absent:
	// not counted yet), so that a trim deletes the oldest rows by number
	// instead of walking auditMax index entries to find the bound.
	auditMu   sync.Mutex
	auditRows map[string]int

	keyMu  sync.Mutex
	keyOpt []byte
	aead   cipher.AEAD // nil until the keystore is first used

	errMu   sync.Mutex
	lastErr error
}

var _ Store = (*SQLite)(nil)

// OpenDir opens <dir>/hangar.db (see Open).
func OpenDir(dir string, opts Options) (*SQLite, error) {
	return Open(filepath.Join(dir, FileName), opts)
}

// Open opens the database at path, creating it and its directory (mode
// 0700) if need be, and brings its schema up to date. The directory is
// locked for this process until Close (<dir>/hangar.lock). An empty path
// opens a private in-memory store, for tests.
//
// Errors that must stop start-up are *OpenError, naming the file and the
// fix: ErrCorrupt, ErrLocked, ErrUnwritable, ErrNewerSchema.
func Open(path string, opts Options) (*SQLite, error) {
	s := &SQLite{log: opts.Log, auditMax: opts.AuditPerServer, keyOpt: opts.KeystoreKey}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.auditMax <= 0 {
		s.auditMax = DefaultAuditPerServer
	}
	if opts.KeystoreKey != nil && len(opts.KeystoreKey) != keySize {
		return nil, fmt.Errorf("store: Options.KeystoreKey is %d bytes, want %d", len(opts.KeystoreKey), keySize)
	}
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	if path == "" {
		if err := s.openMemory(ctx); err != nil {
			return nil, err
		}
		return s, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	s.path, s.dir = abs, filepath.Dir(abs)
	if err := s.openFile(ctx); err != nil {
		s.closeQuietly()
		return nil, err
	}
	return s, nil
}

// pragmas apply to every connection; with one connection, to all work.
// synchronous=FULL: in WAL mode NORMAL may lose the last commits on power
// loss, and a decision acknowledged to an operator must not be lost.
const pragmas = "_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)" +
	"&_pragma=foreign_keys(1)&_txlock=immediate"

func (s *SQLite) openMemory(ctx context.Context) error {
	db, err := sql.Open("sqlite", ":memory:?"+pragmas)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	// Each connection to :memory: is its own database: keep exactly one.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s.db = db
	if err := migrate(ctx, db, ":memory:"); err != nil {
		_ = db.Close()
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

func (s *SQLite) openFile(ctx context.Context) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return unwritable(s.dir, "the data directory", err)
	}
	lock, err := lockDir(s.dir)
	if err != nil {
		return err
	}
	s.lock = lock
	if err := s.prepareFile(); err != nil {
		return err
	}

	u := url.URL{Scheme: "file", Path: filepath.ToSlash(s.path), OmitHost: true}
	db, err := sql.Open("sqlite", u.String()+"?"+pragmas)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	// One connection: writes are serialized in the process anyway, and no
	// write can fail SQLITE_BUSY against another of our own connections.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	s.db = db
	if err := db.PingContext(ctx); err != nil {
		return s.classify(err, "open")
	}
	var check string
	if err := db.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&check); err != nil {
		return s.classify(err, "check")
	}
	if check != "ok" {
		return s.corrupt(fmt.Errorf("quick_check: %s", check))
	}
	if err := migrate(ctx, db, s.path); err != nil {
		var oe *OpenError
		if errors.As(err, &oe) {
			return err
		}
		return s.classify(err, "migrate")
	}
	return nil
}

// prepareFile checks the database file before SQLite sees it: SQLite
// silently opens an unwritable file read-only and fails later. A missing
// file is created empty with mode 0600 (SQLite gives its WAL the same mode).
func (s *SQLite) prepareFile() error {
	fi, err := os.Stat(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return unwritable(s.path, "the database file", err)
		}
		return f.Close()
	case err != nil:
		return unwritable(s.path, "the database file", err)
	case !fi.Mode().IsRegular():
		return &OpenError{Kind: ErrUnwritable, Path: s.path, Msg: fmt.Sprintf(
			"store: %s is not a regular file (%s): move it away, or choose another directory with --data-dir",
			s.path, fi.Mode().Type())}
	}
	f, err := os.OpenFile(s.path, os.O_RDWR, 0)
	if err != nil {
		return unwritable(s.path, "the database file", err)
	}
	return f.Close()
}

func unwritable(path, what string, err error) error {
	return &OpenError{Kind: ErrUnwritable, Path: path, Err: err, Msg: fmt.Sprintf(
		"store: cannot write %s %s: %v: fix its ownership or permissions, or choose another directory "+
			"with --data-dir (or HANGAR_DATA_DIR, or data_dir: in the config)", what, path, err)}
}

func (s *SQLite) corrupt(err error) error {
	return &OpenError{Kind: ErrCorrupt, Path: s.path, Err: err, Msg: fmt.Sprintf(
		"store: %s is not a usable hangar database (%v): stop hangar, move the file aside (with its -wal and -shm "+
			"files) or restore it from a backup, then start again; a new database starts empty, so approvals and "+
			"quarantine decisions will need to be made again", s.path, err)}
}

// classify turns a failure of Open into an OpenError when it is one.
func (s *SQLite) classify(err error, step string) error {
	switch {
	case isCorruption(err):
		return s.corrupt(err)
	case isUnwritable(err):
		return unwritable(s.path, "the database file", err)
	}
	return fmt.Errorf("store: %s %s: %w", step, s.path, err)
}

func (s *SQLite) closeQuietly() {
	if s.db != nil {
		_ = s.db.Close()
	}
	s.lock.release()
}

// Path is the database file, "" in memory.
func (s *SQLite) Path() string { return s.path }

// Dir is the data directory holding the database, "" in memory.
func (s *SQLite) Dir() string { return s.dir }

// Close closes the database and releases the data directory.
func (s *SQLite) Close() error {
	err := s.db.Close()
	s.lock.release()
	return err
}

// LastWriteError is the last write failure, nil once a later write
// succeeded.
func (s *SQLite) LastWriteError() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.lastErr
}

// write runs fn in one transaction. A failure is returned (so the caller
// acknowledges nothing), logged, and kept for LastWriteError; a success
// clears it. what names the operation and its key, never a value.
func (s *SQLite) write(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	return s.record(what, s.inTx(ctx, fn))
}

// record remembers the outcome of a write for LastWriteError.
func (s *SQLite) record(what string, err error) error {
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

func (s *SQLite) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// exec is a write of one statement.
func (s *SQLite) exec(ctx context.Context, what, query string, args ...any) error {
	return s.write(ctx, what, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	})
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
func (s *SQLite) Decisions(ctx context.Context) ([]Decision, error) {
	rows, err := s.db.QueryContext(ctx,
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
func (s *SQLite) PutDecision(ctx context.Context, d Decision) error {
	if d.Key == "" || d.Kind == "" {
		return errors.New("store: put decision: key and kind are required")
	}
	return s.write(ctx, "put decision "+d.Kind+" "+d.Key, func(tx *sql.Tx) error {
		return putDecision(ctx, tx, d)
	})
}

func putDecision(ctx context.Context, tx *sql.Tx, d Decision) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO decisions (key, kind, fingerprint, source, reason, detail, at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (key, kind) DO UPDATE SET fingerprint = excluded.fingerprint, source = excluded.source,
			reason = excluded.reason, detail = excluded.detail, at = excluded.at`,
		d.Key, d.Kind, d.Fingerprint, d.Source, d.Reason, d.Detail, nanos(nowOr(d.At)))
	return err
}

// DeleteDecision forgets the decision of key and kind; none is not an error.
func (s *SQLite) DeleteDecision(ctx context.Context, key, kind string) error {
	return s.exec(ctx, "delete decision "+kind+" "+key, `DELETE FROM decisions WHERE key = ? AND kind = ?`, key, kind)
}

// ---------------------------------------------------------------------------
// Installs

// Installs lists the installed servers by name.
func (s *SQLite) Installs(ctx context.Context) ([]Install, error) {
	rows, err := s.db.QueryContext(ctx,
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
func (s *SQLite) PutInstall(ctx context.Context, in Install) error {
	if in.Name == "" {
		return errors.New("store: put install: name is required")
	}
	return s.exec(ctx, "put install "+in.Name, `INSERT INTO installs (name, config, enabled, allow_implicit, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6)
		ON CONFLICT (name) DO UPDATE SET config = excluded.config, enabled = excluded.enabled,
			allow_implicit = excluded.allow_implicit, updated_at = excluded.updated_at,
			created_at = CASE WHEN ?7 = 0 THEN installs.created_at ELSE excluded.created_at END`,
		in.Name, []byte(in.Config), boolInt(in.Enabled), boolInt(in.AllowImplicit),
		nanos(nowOr(in.CreatedAt)), nanos(nowOr(in.UpdatedAt)), nanos(in.CreatedAt))
}

// DeleteInstall forgets an install; none is not an error.
func (s *SQLite) DeleteInstall(ctx context.Context, name string) error {
	return s.exec(ctx, "delete install "+name, `DELETE FROM installs WHERE name = ?`, name)
}

// ---------------------------------------------------------------------------
// Tool pins

// ToolPins lists a server's pins by tool name.
func (s *SQLite) ToolPins(ctx context.Context, server string) ([]ToolPin, error) {
	rows, err := s.db.QueryContext(ctx,
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
func (s *SQLite) ReplaceToolPins(ctx context.Context, server string, pins []ToolPin) error {
	if server == "" {
		return errors.New("store: replace tool pins: server is required")
	}
	return s.write(ctx, "replace tool pins "+server, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM tool_pins WHERE server = ?`, server); err != nil {
			return err
		}
		for _, p := range pins {
			if _, err := tx.ExecContext(ctx, `INSERT INTO tool_pins (server, tool, hash, definition, pinned_at)
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
func (s *SQLite) ImageDigest(ctx context.Context, server string) (ImageDigest, error) {
	d := ImageDigest{Server: server}
	var at int64
	err := s.db.QueryRowContext(ctx, `SELECT ref, digest, approved_at FROM image_digests WHERE server = ?`, server).
		Scan(&d.Ref, &d.Digest, &at)
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
func (s *SQLite) PutImageDigest(ctx context.Context, d ImageDigest) error {
	if d.Server == "" {
		return errors.New("store: put image digest: server is required")
	}
	return s.exec(ctx, "put image digest "+d.Server, `INSERT INTO image_digests (server, ref, digest, approved_at)
		VALUES (?, ?, ?, ?)
		ON CONFLICT (server) DO UPDATE SET ref = excluded.ref, digest = excluded.digest, approved_at = excluded.approved_at`,
		d.Server, d.Ref, d.Digest, nanos(nowOr(d.ApprovedAt)))
}

// DeleteImageDigest forgets server's digest; none is not an error.
func (s *SQLite) DeleteImageDigest(ctx context.Context, server string) error {
	return s.exec(ctx, "delete image digest "+server, `DELETE FROM image_digests WHERE server = ?`, server)
}

// ---------------------------------------------------------------------------
// Catalogs

// Catalog is server's cached catalog, ErrNotFound when none.
func (s *SQLite) Catalog(ctx context.Context, server string) (CachedCatalog, error) {
	c := CachedCatalog{Server: server}
	var cat []byte
	var at int64
	err := s.db.QueryRowContext(ctx, `SELECT version, image_digest, catalog, updated_at FROM catalogs WHERE server = ?`, server).
		Scan(&c.Version, &c.ImageDigest, &cat, &at)
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
func (s *SQLite) PutCatalog(ctx context.Context, c CachedCatalog) error {
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
func (s *SQLite) DeleteCatalog(ctx context.Context, server string) error {
	return s.exec(ctx, "delete catalog "+server, `DELETE FROM catalogs WHERE server = ?`, server)
}

// ---------------------------------------------------------------------------
// Audit

// AppendAudit appends e (its ID is assigned; a zero At is now) and drops
// the server's entries beyond Options.AuditPerServer, oldest first.
func (s *SQLite) AppendAudit(ctx context.Context, e AuditEntry) error {
	s.auditMu.Lock()
	defer s.auditMu.Unlock()
	var rows map[string]int
	err := s.write(ctx, "append audit "+e.Server, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO audit (at, server, identity, action, tool, allowed, reason, outcome, duration_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, nanos(nowOr(e.At)), e.Server, e.Identity, e.Action, e.Tool,
			boolInt(e.Allowed), e.Reason, e.Outcome, e.DurationMs); err != nil {
			return err
		}
		var err error
		rows, err = s.trimAudit(ctx, tx, map[string]int{e.Server: 1})
		return err
	})
	s.countedAudit(rows, err)
	return err
}

// trimAudit drops, for each server that got added[server] rows in tx, its
// entries beyond auditMax, oldest first; it returns the servers' row
// counts once tx commits. Call it with auditMu held.
func (s *SQLite) trimAudit(ctx context.Context, tx *sql.Tx, added map[string]int) (map[string]int, error) {
	rows := make(map[string]int, len(added))
	for server, n := range added {
		before, known := s.auditRows[server]
		if !known {
			// Counted after the insert: the rows before it are the rest.
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit WHERE server = ?`, server).Scan(&before); err != nil {
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
		if _, err := tx.ExecContext(ctx, `DELETE FROM audit WHERE id IN
			(SELECT id FROM audit WHERE server = ? ORDER BY id LIMIT ?)`, server, rows[server]-s.auditMax); err != nil {
			return nil, err
		}
		rows[server] = s.auditMax
	}
	return rows, nil
}

// countedAudit keeps the row counts of a committed append; after a failed
// one the counts are unknown again (counted at the next append).
func (s *SQLite) countedAudit(rows map[string]int, err error) {
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
func (s *SQLite) RecentAudit(ctx context.Context, server string, limit int) ([]AuditEntry, error) {
	if limit <= 0 {
		limit = s.auditMax
	}
	q := `SELECT id, at, server, identity, action, tool, allowed, reason, outcome, duration_ms FROM audit`
	args := []any{}
	if server != "" {
		q += ` WHERE server = ?`
		args = append(args, server)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: audit: %w", err)
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var e AuditEntry
		var at int64
		if err := rows.Scan(&e.ID, &at, &e.Server, &e.Identity, &e.Action, &e.Tool, &e.Allowed, &e.Reason,
			&e.Outcome, &e.DurationMs); err != nil {
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
func (s *SQLite) SnapshotVersion(ctx context.Context) (uint64, error) {
	var v int64
	if err := s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, metaSnapshot).Scan(&v); err != nil {
		return 0, fmt.Errorf("store: snapshot version: %w", err)
	}
	return uint64(v), nil
}

// NextSnapshotVersion increments snapshot_version durably and returns the
// new value.
func (s *SQLite) NextSnapshotVersion(ctx context.Context) (uint64, error) {
	var v int64
	err := s.write(ctx, "next snapshot version", func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `UPDATE meta SET value = value + 1 WHERE key = ? RETURNING value`, metaSnapshot).Scan(&v)
	})
	if err != nil {
		return 0, err
	}
	return uint64(v), nil
}

// metaValue reads a text meta value, "" and false when absent.
func metaValue(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, key string) (string, bool, error) {
	var v sql.NullString
	err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return v.String, true, nil
}

func setMeta(ctx context.Context, tx *sql.Tx, key, value string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	return err
}
