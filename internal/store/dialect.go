package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync"
)

// dialect is everything that differs between the SQL of the two drivers.
// Queries are written once, with ? placeholders; the rest of the package
// does not know which database it talks to.
type dialect struct {
	name string // "sqlite" | "postgres"
	// dollar: placeholders are $1, $2, … (PostgreSQL) instead of ?.
	dollar bool
	// countedTrim: one process owns the database, so it may count each
	// server's audit rows itself and trim by number (SQLite). With a
	// shared database (PostgreSQL) other replicas append too, so the
	// trim finds the bound in the index instead.
	countedTrim bool

	rebound sync.Map // query → rewritten query
}

var (
	sqliteDialect   = &dialect{name: "sqlite", countedTrim: true}
	postgresDialect = &dialect{name: "postgres", dollar: true}
)

// q is query in this dialect's placeholders. The package's queries hold
// no string literal with a question mark, so every ? is a placeholder.
func (d *dialect) q(query string) string {
	if !d.dollar {
		return query
	}
	if v, ok := d.rebound.Load(query); ok {
		return v.(string)
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := range len(query) {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	out := b.String()
	d.rebound.Store(query, out)
	return out
}

// tx is a transaction that speaks the store's dialect.
type tx struct {
	tx *sql.Tx
	d  *dialect
}

func (t tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(ctx, t.d.q(query), args...)
}

func (t tx) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return t.tx.QueryRowContext(ctx, t.d.q(query), args...)
}

func (t tx) prepare(ctx context.Context, query string) (*sql.Stmt, error) {
	return t.tx.PrepareContext(ctx, t.d.q(query))
}

// snapshotIncrement bumps the snapshot counter in meta and returns it.
// SQLite's meta.value has no type and holds an integer; PostgreSQL's is
// text.
func (d *dialect) snapshotIncrement() string {
	if d.dollar {
		return `UPDATE meta SET value = CAST(CAST(value AS BIGINT) + 1 AS TEXT) WHERE key = $1 RETURNING CAST(value AS BIGINT)`
	}
	return `UPDATE meta SET value = value + 1 WHERE key = ? RETURNING value`
}
