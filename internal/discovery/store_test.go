package discovery

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/store"
)

// openDB opens the real store in dir, closed at the end of the test.
func openDB(t *testing.T, dir string) *store.SQLite {
	t.Helper()
	db, err := store.OpenDir(dir, store.Options{Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// fakeDecisions is a Decisions in memory whose writes can be made to fail.
type fakeDecisions struct {
	mu      sync.Mutex
	ds      map[[2]string]store.Decision
	failPut error
}

var _ Decisions = (*fakeDecisions)(nil)

func (f *fakeDecisions) setFail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failPut = err
}

func (f *fakeDecisions) Decisions(context.Context) ([]store.Decision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.Decision
	for _, d := range f.ds {
		out = append(out, d)
	}
	return out, nil
}

func (f *fakeDecisions) PutDecision(_ context.Context, d store.Decision) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failPut != nil {
		return f.failPut
	}
	if f.ds == nil {
		f.ds = map[[2]string]store.Decision{}
	}
	f.ds[[2]string{d.Key, d.Kind}] = d
	return nil
}

func (f *fakeDecisions) DeleteDecision(_ context.Context, key, kind string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failPut != nil {
		return f.failPut
	}
	delete(f.ds, [2]string{key, kind})
	return nil
}

func TestStoreRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	db := openDB(t, dir)
	s, err := OpenStore(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 15, 10, 30, 0, 0, time.UTC)
	if err := s.SetQuarantine("broken", QuarantineRecord{Fingerprint: "f1", Source: "docker", Reason: "health_check_failed: x", QuarantinedAt: at}); err != nil {
		t.Fatal(err)
	}
	if err := s.Approve("api", "f2", at); err != nil {
		t.Fatal(err)
	}
	// Another source's decisions share the table but are not discovery's.
	if err := db.PutDecision(ctx, store.Decision{Key: "hot", Kind: store.DecisionApproved, Fingerprint: "f9", Source: "hotload"}); err != nil {
		t.Fatal(err)
	}

	_ = db.Close()
	db = openDB(t, dir)
	s2, err := OpenStore(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !s2.Approved("api", "f2") || s2.Approved("api", "other") || s2.Approved("nope", "f2") || s2.Approved("hot", "f9") {
		t.Error("approvals not restored as they were")
	}
	q, ok := s2.Quarantine("broken")
	if !ok || q != (QuarantineRecord{Fingerprint: "f1", Source: "docker", Reason: "health_check_failed: x", QuarantinedAt: at}) {
		t.Errorf("quarantine restored as %+v, %v", q, ok)
	}

	// Approving and clearing are durable.
	if err := s2.Approve("broken", "f1", at); err != nil {
		t.Fatal(err)
	}
	if err := s2.ClearQuarantine("broken"); err != nil {
		t.Fatal(err)
	}
	if err := s2.ClearQuarantine("absent"); err != nil {
		t.Error(err)
	}
	if err := s2.Revoke("api"); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	s3, err := OpenStore(ctx, openDB(t, dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s3.Quarantine("broken"); ok {
		t.Error("quarantine survived clearing")
	}
	if !s3.Approved("broken", "f1") || s3.Approved("api", "f2") {
		t.Error("approve/revoke not durable")
	}
}

// A write that fails is returned and leaves the store's answers as they
// were: nothing is remembered that a restart would not find.
func TestStoreWriteFailure(t *testing.T) {
	t.Parallel()
	db := &fakeDecisions{}
	s, err := OpenStore(t.Context(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetQuarantine("q", QuarantineRecord{Fingerprint: "f"}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk full")
	db.setFail(boom)
	if err := s.Approve("a", "f", time.Now()); !errors.Is(err, boom) || s.Approved("a", "f") {
		t.Errorf("Approve: %v, approved=%v", err, s.Approved("a", "f"))
	}
	if err := s.SetQuarantine("b", QuarantineRecord{Fingerprint: "f"}); !errors.Is(err, boom) {
		t.Errorf("SetQuarantine: %v", err)
	}
	if _, ok := s.Quarantine("b"); ok {
		t.Error("unsaved quarantine remembered")
	}
	if err := s.ClearQuarantine("q"); !errors.Is(err, boom) {
		t.Errorf("ClearQuarantine: %v", err)
	}
	if _, ok := s.Quarantine("q"); !ok {
		t.Error("quarantine forgotten although clearing it failed")
	}
}

func TestMemoryStore(t *testing.T) {
	t.Parallel()
	m := NewMemoryStore()
	if err := m.Approve("a", "f", time.Now()); err != nil || !m.Approved("a", "f") {
		t.Error("memory store")
	}
}

func TestLegacyDecisions(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 15, 10, 30, 0, 0, time.UTC)
	good := `{
  "version": 1,
  "approvals": {"api": {"fingerprint": "f2", "approved_at": "2026-01-15T10:30:00Z"}},
  "quarantine": {"broken": {"fingerprint": "f1", "source": "docker", "reason": "health_check_failed: x",
                 "quarantined_at": "2026-01-15T10:30:00Z"}}
}`
	want := []store.Decision{
		{Key: "api", Kind: store.DecisionApproved, Fingerprint: "f2", Source: DecisionSource, At: at},
		{Key: "broken", Kind: store.DecisionQuarantined, Fingerprint: "f1", Source: DecisionSource,
			Reason: "health_check_failed: x", Detail: "docker", At: at},
	}
	tests := []struct {
		name    string
		content string // "" = no file
		want    []store.Decision
		wantErr string
	}{
		{"round 1 file", good, want, ""},
		{"empty maps", `{"version": 1}`, nil, ""},
		{"missing", "", nil, "no such file"},
		{"garbage", "{not json", nil, StateFile},
		{"bad version", `{"version": 99, "approvals": {}}`, nil, "unsupported version 99"},
		{"wrong shapes", `{"version": 1, "approvals": []}`, nil, StateFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if tt.content != "" {
				if err := os.WriteFile(filepath.Join(dir, StateFile), []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := LegacyDecisions(dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				if tt.content == "" && !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("missing file: %v is not fs.ErrNotExist", err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v (%v)\nwant %+v", got, err, tt.want)
			}
		})
	}
}

// TestStoreSkipsProviderQuarantines: a provider quarantine of a registered
// discovered server (kept by the gateway with Source "discovery") is not
// read back as discovery's own quarantine of a candidate.
func TestStoreSkipsProviderQuarantines(t *testing.T) {
	t.Parallel()
	db := openDB(t, t.TempDir())
	if err := db.PutDecision(t.Context(), store.Decision{Key: "api", Kind: store.DecisionQuarantined, Source: DecisionSource,
		Fingerprint: store.ProviderQuarantine, Reason: "image_changed", Detail: "a → b"}); err != nil {
		t.Fatal(err)
	}
	s, err := OpenStore(t.Context(), db, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := s.Quarantine("api"); ok {
		t.Errorf("provider quarantine read as discovery's: %+v", r)
	}
}
