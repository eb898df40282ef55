package gateway_test

import (
	"errors"
	"reflect"
	"sync"
	"testing"
)

// fakeStore is a StoreStatus whose last write error the test sets.
type fakeStore struct {
	mu  sync.Mutex
	err error
}

func (f *fakeStore) Path() string { return "/data/hangar.db" }

func (f *fakeStore) LastWriteError() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *fakeStore) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func TestHealthShowsStore(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newFakeLauncher(), nil)
	if got := h.ok(t, "hangar_health", nil)["store"]; got != nil {
		t.Errorf("store section without a store: %v", got)
	}
	st := &fakeStore{}
	h.g.Store = st
	hh := h.ok(t, "hangar_health", nil)
	want := map[string]any{"path": "/data/hangar.db", "ok": true, "last_write_error": nil}
	if !reflect.DeepEqual(hh["store"], want) || hh["status"] != "healthy" {
		t.Errorf("healthy store: status %v, store %v", hh["status"], hh["store"])
	}

	st.set(errors.New("store: put decision approved web: disk I/O error"))
	hh = h.ok(t, "hangar_health", nil)
	want = map[string]any{"path": "/data/hangar.db", "ok": false, "last_write_error": "store: put decision approved web: disk I/O error"}
	if !reflect.DeepEqual(hh["store"], want) || hh["status"] != "degraded" {
		t.Errorf("failing store: status %v, store %v", hh["status"], hh["store"])
	}
}

// reachStore is a StoreStatus that can be unreachable, as PostgreSQL's is.
type reachStore struct {
	fakeStore
	unreachable error
}

func (r *reachStore) Unreachable() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unreachable
}

func TestHealthShowsUnreachableStore(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newFakeLauncher(), nil)
	st := &reachStore{}
	h.g.Store = st
	hh := h.ok(t, "hangar_health", nil)
	want := map[string]any{"path": "/data/hangar.db", "ok": true, "last_write_error": nil, "reachable": true, "unreachable_error": nil}
	if !reflect.DeepEqual(hh["store"], want) || hh["status"] != "healthy" {
		t.Errorf("reachable store: status %v, store %v", hh["status"], hh["store"])
	}
	st.mu.Lock()
	st.unreachable = errors.New("database postgres://hangar@db:5432/hangar is unreachable (connection refused); retrying in the background")
	st.mu.Unlock()
	hh = h.ok(t, "hangar_health", nil)
	want = map[string]any{"path": "/data/hangar.db", "ok": false, "last_write_error": nil, "reachable": false,
		"unreachable_error": "database postgres://hangar@db:5432/hangar is unreachable (connection refused); retrying in the background"}
	if !reflect.DeepEqual(hh["store"], want) || hh["status"] != "degraded" {
		t.Errorf("unreachable store: status %v, store %v", hh["status"], hh["store"])
	}
}
