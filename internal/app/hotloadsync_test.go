package app

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/registry"
	"github.com/mcp-hangar/hangar/internal/store"
)

// memLoader is a hot-loader that runs nothing: a load of name serves it
// as "id-"+name.
type memLoader struct {
	mu      sync.Mutex
	running map[string]string // name → ID
}

func (m *memLoader) Load(_ context.Context, _ call.Progress, name string, _ bool, _, _ []string) gateway.LoadResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.running[name] = "id-" + name
	return gateway.LoadResult{Status: registry.StatusLoaded, Name: name, MCPServer: "id-" + name}
}

func (m *memLoader) Unload(_ context.Context, id string) gateway.UnloadResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, got := range m.running {
		if got == id {
			delete(m.running, name)
			return gateway.UnloadResult{Status: registry.StatusUnloaded, MCPServer: id}
		}
	}
	return gateway.UnloadResult{Status: registry.StatusNotHotLoaded, MCPServer: id}
}

func (m *memLoader) Runtime() []gateway.RuntimeServer {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []gateway.RuntimeServer
	for _, name := range slices.Sorted(maps.Keys(m.running)) {
		out = append(out, gateway.RuntimeServer{ID: m.running[name], Name: name})
	}
	return out
}

func (m *memLoader) names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.running))
}

// pausingHotloads is a store whose next read, once armed by pauseReads,
// waits after taking its rows until released.
type pausingHotloads struct {
	*store.SQLite
	mu        sync.Mutex
	afterRead func()
}

func (s *pausingHotloads) Hotloads(ctx context.Context) ([]store.Hotload, error) {
	rows, err := s.SQLite.Hotloads(ctx)
	s.mu.Lock()
	hook := s.afterRead
	s.afterRead = nil
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	return rows, err
}

// pauseReads makes the store's next read wait, once it has its rows, until
// the returned release is called; read is closed when it waits.
func (s *pausingHotloads) pauseReads() (read <-chan struct{}, release func()) {
	r, g := make(chan struct{}), make(chan struct{})
	s.mu.Lock()
	s.afterRead = func() { close(r); <-g }
	s.mu.Unlock()
	return r, func() { close(g) }
}

// newMemReplica is a replica's hot-loader that runs nothing, over a store
// of its own.
func newMemReplica(t *testing.T) (*replicatedLoader, *memLoader, *pausingHotloads) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := store.OpenDir(t.TempDir(), store.Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	inner := &memLoader{running: map[string]string{}}
	st := &pausingHotloads{SQLite: db}
	return newReplicatedLoader(inner, st, log), inner, st
}

// stored are the names of the stored hot-loads.
func stored(t *testing.T, st store.Hotloads) []string {
	t.Helper()
	rows, err := st.Hotloads(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range rows {
		names = append(names, h.Name)
	}
	return names
}

// syncAround runs a sync of l and, while it waits between reading the
// store and acting on what it read, runs local.
func syncAround(l *replicatedLoader, st *pausingHotloads, local func()) {
	read, release := st.pauseReads()
	done := make(chan struct{})
	go func() { l.sync(context.Background()); close(done) }()
	<-read
	local()
	release()
	<-done
}

// TestHotloadSyncKeepsALoadMadeDuringIt: a server hot-loaded here after a
// sync read the store (without it) stays loaded; the soak saw such a sync
// unload it under a call that followed the load.
func TestHotloadSyncKeepsALoadMadeDuringIt(t *testing.T) {
	l, inner, st := newMemReplica(t)
	if err := st.PutHotload(context.Background(), store.Hotload{Name: "other"}); err != nil { // by another replica
		t.Fatal(err)
	}
	syncAround(l, st, func() {
		if res := l.Load(context.Background(), call.Progress{}, "mine", false, nil, nil); res.Status != registry.StatusLoaded {
			t.Fatalf("load: %+v", res)
		}
	})
	if got := inner.names(); !slices.Equal(got, []string{"mine", "other"}) {
		t.Fatalf("running after the sync: %v, want [mine other] (the local load kept, the other replica's applied)", got)
	}
	l.sync(context.Background())
	if got := inner.names(); !slices.Equal(got, []string{"mine", "other"}) {
		t.Fatalf("running after the next sync: %v, want [mine other]", got)
	}
}

// TestHotloadSyncDoesNotRestoreAnUnloadMadeDuringIt: a server unloaded
// here after a sync read the store (with it) is not loaded again.
func TestHotloadSyncDoesNotRestoreAnUnloadMadeDuringIt(t *testing.T) {
	l, inner, st := newMemReplica(t)
	if res := l.Load(context.Background(), call.Progress{}, "mine", false, nil, nil); res.Status != registry.StatusLoaded {
		t.Fatalf("load: %+v", res)
	}
	syncAround(l, st, func() {
		if res := l.Unload(context.Background(), "id-mine"); res.Status != registry.StatusUnloaded {
			t.Fatalf("unload: %+v", res)
		}
	})
	if got := inner.names(); len(got) != 0 {
		t.Fatalf("running after the sync: %v, want none", got)
	}
	if got := stored(t, st); len(got) != 0 {
		t.Fatalf("stored: %v, want none", got)
	}
}

// TestHotloadSyncUnloadsWhatAnotherReplicaUnloaded: the guard leaves a
// name only for the sync that raced with it; the next one applies an
// unload made elsewhere.
func TestHotloadSyncUnloadsWhatAnotherReplicaUnloaded(t *testing.T) {
	l, inner, st := newMemReplica(t)
	l.Load(context.Background(), call.Progress{}, "mine", false, nil, nil)
	l.sync(context.Background())
	if err := st.DeleteHotload(context.Background(), "mine"); err != nil { // another replica unloaded it
		t.Fatal(err)
	}
	l.sync(context.Background())
	if got := inner.names(); len(got) != 0 {
		t.Fatalf("running: %v, want none (unloaded by another replica)", got)
	}
	if len(l.touched) != 0 {
		t.Fatalf("touches kept after the syncs that follow them: %v", l.touched)
	}
}
