package audit_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/audit"
)

// waitTools waits until st holds want, in order.
func waitTools(t *testing.T, st *batchStore, want []string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Equal(st.tools(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("stored %v, want %v", st.tools(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSpoolSurvivesKill: entries acknowledged (AppendAudit returned) but
// not yet in the store when the process died (its writer never ran, or
// ran against a store that was down) are stored by the next writer over
// the same spool, before anything newer, exactly once.
func TestSpoolSurvivesKill(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		first func(w *audit.Writer) (stop func())
	}{
		{"killed before its batch was written", func(*audit.Writer) func() { return func() {} }},
		{"killed while the store was down", run},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "audit.spool")
			var st audit.Store = &batchStore{}
			if tc.name == "killed while the store was down" {
				st = &downStore{} // never up
			}
			w1 := audit.New(st, audit.Options{Spool: path, Log: quiet})
			stop := tc.first(w1)
			for i := range 3 {
				if err := w1.AppendAudit(t.Context(), entry(i)); err != nil {
					t.Fatal(err)
				}
			}
			// The process dies: w1 is abandoned, its queue with it (its
			// Run, if any, keeps failing against the store that is down).
			_ = stop

			alive := &batchStore{}
			w2 := audit.New(alive, audit.Options{Spool: path, Log: quiet})
			if err := w2.AppendAudit(t.Context(), entry(3)); err != nil {
				t.Fatal(err)
			}
			stop2 := run(w2)
			waitTools(t, alive, []string{"0", "1", "2", "3"})
			stop2()

			// A third start owes nothing: what was stored is not stored
			// again.
			again := &batchStore{}
			w3 := audit.New(again, audit.Options{Spool: path, Log: quiet})
			run(w3)()
			if got := again.tools(); len(got) != 0 {
				t.Errorf("a start after everything was stored wrote %v again", got)
			}
		})
	}
}

// TestSpoolRotates: once everything in the spool is stored and the file
// passed its bound, it is emptied; entries after that are kept as
// before.
func TestSpoolRotates(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.spool")
	st := &batchStore{}
	w := audit.New(st, audit.Options{Spool: path, SpoolRotateAt: 512, Linger: -1, Log: quiet})
	stop := run(w)
	var want []string
	for i := range 20 {
		if err := w.AppendAudit(t.Context(), entry(i)); err != nil {
			t.Fatal(err)
		}
		want = append(want, entry(i).Tool)
	}
	waitTools(t, st, want)
	stop()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() >= 512 {
		t.Errorf("spool is %d bytes after everything was stored, want it emptied below 512", fi.Size())
	}
	// The next start owes nothing, and a torn last line (a write the kill
	// cut) is dropped, not replayed.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"server":"s","tool":"torn"`)
	f.Close()
	again := &batchStore{}
	run(audit.New(again, audit.Options{Spool: path, Log: quiet}))()
	if got := again.tools(); len(got) != 0 {
		t.Errorf("next start stored %v, want nothing", got)
	}
}
