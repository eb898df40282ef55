package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
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

// Options tune a store (either driver). The zero value is the default.
type Options struct {
	// AuditPerServer bounds each server's audit trail; the oldest entries
	// are dropped first (default DefaultAuditPerServer).
	AuditPerServer int
	// KeystoreKey is the keystore's AES-256 key (32 bytes). Nil: the key
	// in $HANGAR_KEYSTORE_KEY (base64), else the file keystore.key beside
	// the database (PostgreSQL: in PostgresConfig.KeyDir), created on
	// first use while no secret is sealed (an in-memory store makes up a
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
	*sqlStore
	lock *dirLock
}

var (
	_ Store        = (*SQLite)(nil)
	_ AuditBatcher = (*SQLite)(nil)
	_ Importer     = (*SQLite)(nil)
	_ Members      = (*SQLite)(nil)
)

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
	core, err := newSQLStore(sqliteDialect, opts)
	if err != nil {
		return nil, err
	}
	s := &SQLite{sqlStore: core}
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
	if err := migrate(ctx, db, s.dialect, ":memory:"); err != nil {
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
	if err := migrate(ctx, db, s.dialect, s.path); err != nil {
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

// Dir is the data directory holding the database, "" in memory.
func (s *SQLite) Dir() string { return s.dir }

// Close closes the database and releases the data directory.
func (s *SQLite) Close() error {
	err := s.db.Close()
	s.lock.release()
	return err
}
