package store

import (
	"fmt"
	"testing"

	"github.com/mcp-hangar/hangar/internal/store/pgtest"
)

// BenchmarkStoreWrite is the latency of one durable write on each driver:
// SQLite in a temporary directory (WAL, synchronous=FULL), and PostgreSQL
// on 127.0.0.1 in a cluster of its own with fsync on (the test cluster
// runs without), both on the same disk. put_decision is one upsert in one
// transaction; audit_batch_128 is the audit writer's batch of 128 entries
// on a trail at its bound.
func BenchmarkStoreWrite(b *testing.B) {
	c, err := pgtest.Start(true)
	c = pgtest.Need(b, c, err)
	b.Cleanup(c.Remove)
	open := map[string]func(b *testing.B) *sqlStore{
		"sqlite": func(b *testing.B) *sqlStore {
			s, err := OpenDir(b.TempDir(), Options{Log: quiet()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			return s.sqlStore
		},
		"postgres": func(b *testing.B) *sqlStore {
			u, err := c.Schema(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			s, err := OpenPostgres(PostgresConfig{URL: u, PasswordFile: c.PasswordFile, KeyDir: b.TempDir()}, Options{Log: quiet()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			return s.sqlStore
		},
	}
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name+"/put_decision", func(b *testing.B) {
			s := open[name](b)
			i := 0
			for b.Loop() {
				i++
				if err := s.PutDecision(b.Context(), Decision{Key: fmt.Sprint("k", i%64), Kind: DecisionApproved, Fingerprint: "f"}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/audit_batch_128", func(b *testing.B) {
			s := open[name](b)
			batch := make([]AuditEntry, 128)
			for i := range batch {
				batch[i] = AuditEntry{Server: "math", Identity: "agent", Action: "hangar_call", Tool: "add", Allowed: true, Outcome: "ok"}
			}
			for range DefaultAuditPerServer/len(batch) + 1 {
				if err := s.AppendAuditBatch(b.Context(), batch); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if err := s.AppendAuditBatch(b.Context(), batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
