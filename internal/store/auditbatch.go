package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// AuditBatcher appends many audit entries in one transaction (one fsync),
// so that an asynchronous writer keeps up with a busy gateway.
type AuditBatcher interface {
	AppendAuditBatch(ctx context.Context, es []AuditEntry) error
}

// AppendAuditBatch appends es in order, in one transaction (all or none),
// and then drops the entries of each server in es beyond
// Options.AuditPerServer, oldest first, as AppendAudit does.
func (s *sqlStore) AppendAuditBatch(ctx context.Context, es []AuditEntry) error {
	if len(es) == 0 {
		return nil
	}
	return s.appendAudit(ctx, fmt.Sprintf("append audit batch of %d", len(es)), es)
}

func (s *sqlStore) appendAudit(ctx context.Context, what string, es []AuditEntry) error {
	s.auditMu.Lock()
	defer s.auditMu.Unlock()
	var rows map[string]int
	err := s.write(ctx, what, func(t tx) error {
		// Many rows per INSERT: each statement run costs database/sql and
		// the driver a fixed amount (about 12 µs of CPU here), which one
		// row each made the bulk of the audit trail's cost under load.
		var full *sql.Stmt
		added := map[string]int{}
		for rest := es; len(rest) > 0; {
			n := min(len(rest), auditRowsPerInsert)
			args := make([]any, 0, n*auditColumns)
			for _, e := range rest[:n] {
				args = append(args, nanos(nowOr(e.At)), e.Server, e.Identity, e.Action, e.Tool,
					boolInt(e.Allowed), e.Reason, e.Outcome, e.DurationMs, e.Rule)
				added[e.Server]++
			}
			var err error
			if n == auditRowsPerInsert {
				if full == nil {
					if full, err = t.prepare(ctx, auditInsert(n)); err != nil {
						return err
					}
					defer full.Close()
				}
				_, err = full.ExecContext(ctx, args...)
			} else {
				_, err = t.exec(ctx, auditInsert(n), args...)
			}
			if err != nil {
				return err
			}
			rest = rest[n:]
		}
		var err error
		rows, err = s.trimAudit(ctx, t, added)
		return err
	})
	s.countedAudit(rows, err)
	return err
}

// An audit row's columns, and how many rows one INSERT carries (64 × 10
// parameters, far below SQLite's limit of 32766 and PostgreSQL's of 65535).
const (
	auditColumns       = 10
	auditRowsPerInsert = 64
)

// auditInsert is the INSERT of n audit rows.
func auditInsert(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO audit (at, server, identity, action, tool, allowed, reason, outcome, duration_ms, rule) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	}
	return b.String()
}
