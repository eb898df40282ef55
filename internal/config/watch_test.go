package config

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// WatchFile reports a change of content, not a rewrite of the same bytes
// nor a file gone missing, and stops with its context.
func TestWatchFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hangar.yaml")
	if err := os.WriteFile(path, []byte("a: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var changes atomic.Int32
		done := make(chan struct{})
		go func() {
			defer close(done)
			WatchFile(ctx, path, time.Second, func() { changes.Add(1) })
		}()
		step := func(what string, write func(), want int32) {
			t.Helper()
			write()
			time.Sleep(time.Second)
			synctest.Wait()
			if got := changes.Load(); got != want {
				t.Fatalf("%s: %d changes, want %d", what, got, want)
			}
		}
		step("nothing", func() {}, 0)
		step("same bytes", func() { _ = os.WriteFile(path, []byte("a: 1\n"), 0o600) }, 0)
		step("new content", func() { _ = os.WriteFile(path, []byte("a: 2\n"), 0o600) }, 1)
		step("gone", func() { _ = os.Remove(path) }, 1)
		step("back, as before it went", func() { _ = os.WriteFile(path, []byte("a: 2\n"), 0o600) }, 1)
		cancel()
		<-done
	})
}
