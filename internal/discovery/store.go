package discovery

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mcp-hangar/hangar/internal/store"
)

// DecisionSource is the Source of the decisions discovery stores.
const DecisionSource = "discovery"

// writeTimeout bounds one decision write. Writes do not take the caller's
// context: a decision is either stored or reported failed, never cut off
// because the scan that made it ended.
const writeTimeout = 30 * time.Second

// Decisions is what discovery needs of the durable store (store.Store
// has it).
type Decisions interface {
	Decisions(ctx context.Context) ([]store.Decision, error)
	PutDecision(ctx context.Context, d store.Decision) error
	DeleteDecision(ctx context.Context, key, kind string) error
}

// Approval records that an operator approved a candidate as it was.
type Approval struct {
	Fingerprint string
	ApprovedAt  time.Time
}

// QuarantineRecord records why a candidate was quarantined.
type QuarantineRecord struct {
	Fingerprint   string
	Source        string // the discovery source type: docker, filesystem
	Reason        string
	QuarantinedAt time.Time
}

// Store keeps approvals and quarantine decisions across restarts, keyed by
// server name. It reads the durable store once and then answers from
// memory; every change is written through first and remembered only once
// written, so what it answers is what a restart finds.
type Store struct {
	db  Decisions // nil keeps everything in memory
	log *slog.Logger

	mu         sync.Mutex
	approvals  map[string]Approval
	quarantine map[string]QuarantineRecord
}

// NewMemoryStore returns a store that forgets everything on exit.
func NewMemoryStore() *Store {
	return &Store{log: slog.Default(), approvals: map[string]Approval{}, quarantine: map[string]QuarantineRecord{}}
}

// OpenStore loads discovery's decisions from db.
func OpenStore(ctx context.Context, db Decisions, log *slog.Logger) (*Store, error) {
	s := NewMemoryStore()
	s.db = db
	if log != nil {
		s.log = log
	}
	if err := s.ReloadAll(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// ReloadAll reads every decision from the durable store again (another
// gateway replica may have changed any while this one was not told).
func (s *Store) ReloadAll(ctx context.Context) error {
	if s.db == nil {
		return nil
	}
	ds, err := s.db.Decisions(ctx)
	if err != nil {
		return fmt.Errorf("discovery decisions: %w", err)
	}
	approvals, quarantine := map[string]Approval{}, map[string]QuarantineRecord{}
	for _, d := range ds {
		if _, provider := store.IsProviderQuarantine(d); d.Source != DecisionSource || provider {
			// Another source's, or a provider quarantine of a
			// discovered server that was registered (gateway).
			continue
		}
		switch d.Kind {
		case store.DecisionApproved:
			approvals[d.Key] = Approval{Fingerprint: d.Fingerprint, ApprovedAt: d.At}
		case store.DecisionQuarantined:
			quarantine[d.Key] = QuarantineRecord{Fingerprint: d.Fingerprint, Source: d.Detail, Reason: d.Reason, QuarantinedAt: d.At}
		}
	}
	s.mu.Lock()
	s.approvals, s.quarantine = approvals, quarantine
	s.mu.Unlock()
	return nil
}

func approvalDecision(name string, a Approval) store.Decision {
	return store.Decision{Key: name, Kind: store.DecisionApproved, Fingerprint: a.Fingerprint, Source: DecisionSource, At: a.ApprovedAt.UTC()}
}

// The discovery source type rides in Detail, the one free-text field.
func quarantineDecision(name string, r QuarantineRecord) store.Decision {
	return store.Decision{Key: name, Kind: store.DecisionQuarantined, Fingerprint: r.Fingerprint, Source: DecisionSource,
		Reason: r.Reason, Detail: r.Source, At: r.QuarantinedAt.UTC()}
}

func (s *Store) put(d store.Decision) error {
	if s.db == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	return s.db.PutDecision(ctx, d)
}

func (s *Store) del(key, kind string) error {
	if s.db == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	return s.db.DeleteDecision(ctx, key, kind)
}

// Approved reports whether name was approved with this fingerprint.
func (s *Store) Approved(name, fingerprint string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.approvals[name]
	return ok && a.Fingerprint == fingerprint
}

// Approve records the approval of name as fingerprint, replacing an older
// one. It returns only once the approval is stored; an error means nothing
// was recorded. A quarantine of name stays until ClearQuarantine, but an
// approval of the same fingerprint outranks it.
func (s *Store) Approve(name, fingerprint string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := Approval{Fingerprint: fingerprint, ApprovedAt: at.UTC()}
	if err := s.put(approvalDecision(name, a)); err != nil {
		return err
	}
	s.approvals[name] = a
	return nil
}

// Revoke forgets the approval of name.
func (s *Store) Revoke(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.approvals[name]; !ok {
		return nil
	}
	if err := s.del(name, store.DecisionApproved); err != nil {
		return err
	}
	delete(s.approvals, name)
	return nil
}

// Quarantine returns the quarantine decision about name, if any.
func (s *Store) Quarantine(name string) (QuarantineRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.quarantine[name]
	return r, ok
}

// SetQuarantine records the quarantine of name, once stored.
func (s *Store) SetQuarantine(name string, r QuarantineRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.QuarantinedAt = r.QuarantinedAt.UTC()
	if err := s.put(quarantineDecision(name, r)); err != nil {
		return err
	}
	s.quarantine[name] = r
	return nil
}

// ClearQuarantine forgets the quarantine of name.
func (s *Store) ClearQuarantine(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.quarantine[name]; !ok {
		return nil
	}
	if err := s.del(name, store.DecisionQuarantined); err != nil {
		return err
	}
	delete(s.quarantine, name)
	return nil
}

// Reload reads the decisions about name from the durable store again
// (another gateway replica changed them).
func (s *Store) Reload(ctx context.Context, name string) error {
	if s.db == nil {
		return nil
	}
	ds, err := s.db.Decisions(ctx)
	if err != nil {
		return fmt.Errorf("discovery decisions: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.approvals, name)
	delete(s.quarantine, name)
	for _, d := range ds {
		if _, provider := store.IsProviderQuarantine(d); d.Key != name || d.Source != DecisionSource || provider {
			continue
		}
		switch d.Kind {
		case store.DecisionApproved:
			s.approvals[d.Key] = Approval{Fingerprint: d.Fingerprint, ApprovedAt: d.At}
		case store.DecisionQuarantined:
			s.quarantine[d.Key] = QuarantineRecord{Fingerprint: d.Fingerprint, Source: d.Detail, Reason: d.Reason, QuarantinedAt: d.At}
		}
	}
	return nil
}
