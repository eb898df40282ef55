package store

import (
	"fmt"
	"strings"
	"testing"
)

// TestAppendAuditBatch: one batch keeps its order, is bounded per server
// like single appends, and an empty batch writes nothing.
func TestAppendAuditBatch(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, "", Options{AuditPerServer: 3})
	if err := s.AppendAuditBatch(ctx, nil); err != nil {
		t.Fatalf("empty batch: %v", err)
	}
	var batch []AuditEntry
	for i := range 5 {
		batch = append(batch, AuditEntry{Server: "a", Tool: fmt.Sprint("t", i), Outcome: "ok"})
		if i < 2 {
			batch = append(batch, AuditEntry{Server: "b", Tool: fmt.Sprint("u", i)})
		}
	}
	if err := s.AppendAuditBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	tools := func(server string) string {
		es, err := s.RecentAudit(ctx, server, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Tool)
			if e.At.IsZero() {
				t.Errorf("entry %s has no time", e.Tool)
			}
		}
		return strings.Join(out, ",")
	}
	if got := tools("a"); got != "t4,t3,t2" {
		t.Errorf("a = %s, want t4,t3,t2 (newest first, bounded)", got)
	}
	if got := tools("b"); got != "u1,u0" {
		t.Errorf("b = %s, want u1,u0", got)
	}
	if err := s.LastWriteError(); err != nil {
		t.Errorf("LastWriteError = %v", err)
	}
}
