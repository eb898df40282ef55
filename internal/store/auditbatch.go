package store

import (
	"context"
	"database/sql"
	"fmt"
)

// AuditBatcher appends many audit entries in one transaction (one fsync),
// so that an asynchronous writer keeps up with a busy gateway.
type AuditBatcher interface {
	AppendAuditBatch(ctx context.Context, es []AuditEntry) error
}

var _ AuditBatcher = (*SQLite)(nil)

// AppendAuditBatch appends es in order, in one transaction (all or none),
// and then drops the entries of each server in es beyond
// Options.AuditPerServer, oldest first, as AppendAudit does.
func (s *SQLite) AppendAuditBatch(ctx context.Context, es []AuditEntry) error {
	if len(es) == 0 {
		return nil
	}
	return s.write(ctx, fmt.Sprintf("append audit batch of %d", len(es)), func(tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO audit (at, server, identity, action, tool, allowed, reason, outcome, duration_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer ins.Close()
		servers := map[string]bool{}
		for _, e := range es {
			if _, err := ins.ExecContext(ctx, nanos(nowOr(e.At)), e.Server, e.Identity, e.Action, e.Tool,
				boolInt(e.Allowed), e.Reason, e.Outcome, e.DurationMs); err != nil {
				return err
			}
			servers[e.Server] = true
		}
		for server := range servers {
			if _, err := tx.ExecContext(ctx, `DELETE FROM audit WHERE server = ?1 AND id <=
				(SELECT id FROM audit WHERE server = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)`, server, s.auditMax); err != nil {
				return err
			}
		}
		return nil
	})
}
