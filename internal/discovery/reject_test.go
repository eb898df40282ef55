package discovery

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
)

// What Reject answers for each place a name can be in, and what it
// leaves behind.
func TestReject(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 16, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		// setup brings the service to the state under test; reject is
		// the name rejected.
		setup  func(t *testing.T, s *Service, reg *fakeRegistry, db *fakeDecisions)
		reject string
		// wantErr is the error's text ("" for success); wantIs its
		// sentinel.
		wantErr string
		wantIs  error
		// quarantined and pending are the lists afterwards.
		quarantined, pending []string
	}{
		{name: "a pending candidate is quarantined", reject: "api",
			quarantined: []string{"api"}, pending: []string{"refd"}},
		{name: "a candidate refused its name is quarantined", reject: "refd",
			quarantined: []string{"refd"}, pending: []string{"api"}},
		{name: "an unknown name answers Approve's not found", reject: "nope",
			wantErr: "not found in pending or quarantine: nope", wantIs: ErrNotFound, pending: []string{"api", "refd"}},
		{name: "a rejected candidate is already quarantined", reject: "api",
			setup: func(t *testing.T, s *Service, _ *fakeRegistry, _ *fakeDecisions) {
				if _, err := s.Reject(t.Context(), "api", "admin"); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "already quarantined: api", wantIs: ErrAlreadyQuarantined, quarantined: []string{"api"}, pending: []string{"refd"}},
		{name: "an approved server loses its approval and is quarantined", reject: "api",
			setup: func(t *testing.T, s *Service, _ *fakeRegistry, _ *fakeDecisions) {
				if r := s.Approve(t.Context(), "api"); !r.Approved {
					t.Fatal(r.Error)
				}
			},
			quarantined: []string{"api"}, pending: []string{"refd"}},
		{name: "an approved server refused its name later loses its approval and is quarantined", reject: "api",
			setup: func(t *testing.T, s *Service, reg *fakeRegistry, _ *fakeDecisions) {
				if r := s.Approve(t.Context(), "api"); !r.Approved {
					t.Fatal(r.Error)
				}
				reg.mu.Lock()
				reg.servers["api"] = &config.Server{ID: "api"} // a reload's config server
				reg.mu.Unlock()
				if p := s.Pending(); len(p) != 2 || p[0].Name != "api" || !p[0].Approved {
					t.Fatalf("pending %+v: want api listed as approved", p)
				}
			},
			quarantined: []string{"api"}, pending: []string{"refd"}},
		{name: "a failed revocation changes nothing", reject: "api",
			setup: func(t *testing.T, s *Service, _ *fakeRegistry, db *fakeDecisions) {
				if r := s.Approve(t.Context(), "api"); !r.Approved {
					t.Fatal(r.Error)
				}
				db.setFail(errors.New("disk I/O error"))
			},
			wantErr: "approval not revoked, nothing changed: disk I/O error", pending: []string{"refd"}},
		{name: "a failed write changes nothing", reject: "api",
			setup: func(_ *testing.T, _ *Service, _ *fakeRegistry, db *fakeDecisions) {
				db.setFail(errors.New("disk I/O error"))
			},
			wantErr: "rejection not saved, nothing changed: disk I/O error", pending: []string{"api", "refd"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			src := newFakeSource(SourceDocker, ModeAdditive)
			src.set(nil, nil, cand("api", "f1", "10.0.0.1"), cand("refd", "f2", "10.0.0.2"))
			reg := newFakeRegistry("refd")
			db := &fakeDecisions{}
			st, err := OpenStore(ctx, db, quietLog())
			if err != nil {
				t.Fatal(err)
			}
			s := New(discCfg(), reg, nil, st, quietLog(), src)
			s.now = func() time.Time { return now }
			s.Scan(ctx)
			if c.setup != nil {
				c.setup(t, s, reg, db)
			}

			q, err := s.Reject(ctx, c.reject, "admin")
			if c.wantErr == "" {
				want := QuarantineEntry{Name: c.reject, Source: SourceDocker, Reason: "rejected by operator admin", QuarantineTime: now}
				if err != nil || q != want {
					t.Fatalf("reject = %+v, %v; want %+v", q, err, want)
				}
			} else {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("reject error = %v, want %q", err, c.wantErr)
				}
				if c.wantIs != nil && !errors.Is(err, c.wantIs) {
					t.Errorf("error %v is not %v", err, c.wantIs)
				}
			}
			var quarantined []string
			for _, q := range s.Quarantined() {
				quarantined = append(quarantined, q.Name)
			}
			if !slices.Equal(quarantined, c.quarantined) || !slices.Equal(pendingNames(s), c.pending) {
				t.Errorf("quarantined %v, pending %v; want %v, %v", quarantined, pendingNames(s), c.quarantined, c.pending)
			}
			if c.wantErr == "" {
				fp := map[string]string{"api": "f1", "refd": "f2"}[c.reject]
				if r, ok := st.Quarantine(c.reject); !ok || r.Fingerprint != fp || r.Source != SourceDocker || r.Reason != "rejected by operator admin" {
					t.Errorf("stored decision %+v, %v", r, ok)
				}
				// A rescan keeps the decision: it is the candidate's, as it is.
				s.Scan(ctx)
				if qs := s.Quarantined(); len(qs) != 1 || qs[0].Name != c.reject || qs[0].Reason != "rejected by operator admin" {
					t.Errorf("after a rescan: quarantined %+v", qs)
				}
			}
			reg.mu.Lock()
			_, claimed := reg.claims["api"]
			reg.mu.Unlock()
			if claimed != (c.name == "a failed revocation changes nothing") {
				t.Errorf("api claimed by discovery = %v", claimed)
			}
			if c.wantErr == "" && st.Approved(c.reject, map[string]string{"api": "f1", "refd": "f2"}[c.reject]) {
				t.Errorf("%s is still approved in the store after its rejection", c.reject)
			}
		})
	}
}

// A rejection is a stored decision about the candidate as it was: a
// restart finds it, a changed container is decided afresh, and an
// approval lifts it.
func TestRejectionSurvivesRestartAndBindsTheFingerprint(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	src := newFakeSource(SourceDocker, ModeAdditive)
	src.set(nil, nil, cand("api", "f1", "10.0.0.1"))

	db := openDB(t, dir)
	st, err := OpenStore(ctx, db, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	s := New(discCfg(), newFakeRegistry(), nil, st, quietLog(), src)
	s.Scan(ctx)
	if _, err := s.Reject(ctx, "api", "alice"); err != nil {
		t.Fatal(err)
	}

	// A new process, with auto_register on: the rejection still stands
	// and nothing is registered or checked.
	_ = db.Close()
	st2, err := OpenStore(ctx, openDB(t, dir), quietLog())
	if err != nil {
		t.Fatal(err)
	}
	reg := newFakeRegistry()
	checked := 0
	s2 := New(discCfg(healthChecked), reg, func(context.Context, *config.Server) error { checked++; return nil }, st2, quietLog(), src)
	s2.Scan(ctx)
	if q := s2.Quarantined(); len(q) != 1 || q[0].Name != "api" || q[0].Reason != "rejected by operator alice" {
		t.Fatalf("after a restart: quarantined %+v", q)
	}
	if reg.Registered("api") || checked != 0 {
		t.Errorf("a rejected candidate was registered (%v) or checked (%d)", reg.Registered("api"), checked)
	}

	// The operator changes their mind: an approval lifts the rejection.
	if r := s2.Approve(ctx, "api"); !r.Approved || !reg.Registered("api") {
		t.Fatalf("approve of a rejected candidate = %+v", r)
	}
	if _, ok := st2.Quarantine("api"); ok {
		t.Error("the rejection is still stored after an approval")
	}

	// Another process rejects again; then the container changes (a new
	// image): it is a new candidate, pending again.
	s3 := New(discCfg(), newFakeRegistry(), nil, st2, quietLog(), src)
	if err := st2.Revoke("api"); err != nil {
		t.Fatal(err)
	}
	s3.Scan(ctx)
	if _, err := s3.Reject(ctx, "api", "alice"); err != nil {
		t.Fatal(err)
	}
	src.set(nil, nil, cand("api", "f2", "10.0.0.1"))
	s3.Scan(ctx)
	if q, p := s3.Quarantined(), s3.Pending(); len(q) != 0 || len(p) != 1 || p[0].Fingerprint != "f2" {
		t.Errorf("changed container: quarantined %+v, pending %+v", q, p)
	}
	if _, ok := st2.Quarantine("api"); ok {
		t.Error("the rejection of the old container is still stored")
	}
}

// OnChange hears every move between the lists, once per operation, and
// not a rescan that changes nothing.
func TestOnChangeReportsListMoves(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	src := newFakeSource(SourceDocker, ModeAdditive)
	src.set(nil, nil, cand("a", "f1", "10.0.0.1"), cand("b", "f2", "10.0.0.2"))
	var mu sync.Mutex
	var heard [][]string
	s := New(discCfg(), newFakeRegistry(), nil, nil, quietLog(), src)
	s.OnChange = func(names []string) {
		mu.Lock()
		heard = append(heard, names)
		mu.Unlock()
	}
	take := func() [][]string {
		mu.Lock()
		defer mu.Unlock()
		h := heard
		heard = nil
		return h
	}
	steps := []struct {
		what string
		do   func()
		want [][]string
	}{
		{"first scan offers both", func() { s.Scan(ctx) }, [][]string{{"a", "b"}}},
		{"a rescan changes nothing", func() { s.Scan(ctx) }, nil},
		{"reject", func() { _, _ = s.Reject(ctx, "a", "admin") }, [][]string{{"a"}}},
		{"a refused reject changes nothing", func() { _, _ = s.Reject(ctx, "a", "admin") }, nil},
		{"approve", func() { s.Approve(ctx, "b") }, [][]string{{"b"}}},
		{"a quarantined candidate goes", func() { src.set(nil, nil, cand("b", "f2", "10.0.0.2")); s.Scan(ctx) }, [][]string{{"a"}}},
	}
	for _, st := range steps {
		st.do()
		if got := take(); !slices.EqualFunc(got, st.want, slices.Equal) {
			t.Errorf("%s: heard %v, want %v", st.what, got, st.want)
		}
	}
}
