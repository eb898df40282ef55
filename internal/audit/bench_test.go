package audit_test

import (
	"context"
	"testing"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/store"
)

// BenchmarkWriterAppend is the call path's cost of an audit entry with the
// writer over the real SQLite store (compare store.BenchmarkAppendAudit,
// the synchronous write); the flush at the end is included, so ns/op also
// bounds the store's batched throughput.
func BenchmarkWriterAppend(b *testing.B) {
	st, err := store.OpenDir(b.TempDir(), store.Options{Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	w := audit.New(st, audit.Options{Log: quiet})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	e := store.AuditEntry{Server: "math", Identity: "agent", Action: "tools/call", Tool: "add", Allowed: true, Outcome: "ok"}
	for b.Loop() {
		_ = w.AppendAudit(b.Context(), e)
	}
	cancel()
	<-done
	b.ReportMetric(float64(w.Dropped()), "dropped")
}
