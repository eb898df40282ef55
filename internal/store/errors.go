package store

import (
	"errors"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Kinds of OpenError, for errors.Is.
var (
	// ErrCorrupt: the database file is not a database or fails its check.
	ErrCorrupt = errors.New("store: database corrupt")
	// ErrLocked: another hangar process holds the data directory.
	ErrLocked = errors.New("store: data directory locked")
	// ErrUnwritable: the data directory or database file cannot be written.
	ErrUnwritable = errors.New("store: not writable")
	// ErrNewerSchema: the database was written by a newer hangar.
	ErrNewerSchema = errors.New("store: newer schema")
)

// OpenError is a reason the store cannot be opened. Its message names the
// file and what to do about it, as an operator reads it at start-up.
type OpenError struct {
	Kind error  // ErrCorrupt | ErrLocked | ErrUnwritable | ErrNewerSchema | ErrUnavailable
	Path string // the file or directory at fault
	Msg  string
	Err  error // the underlying cause, if any
}

func (e *OpenError) Error() string { return e.Msg }

func (e *OpenError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// sqliteCode is the primary result code of a SQLite error, 0 for others.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// isCorruption reports errors that mean the file itself is damaged.
func isCorruption(err error) bool {
	switch sqliteCode(err) {
	case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
		return true
	}
	return false
}

// isUnwritable reports errors that mean the file cannot be written.
func isUnwritable(err error) bool {
	switch sqliteCode(err) {
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
		return true
	}
	return false
}
