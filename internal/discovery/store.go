package discovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// StateFile is the store's file name inside the data directory.
const StateFile = "discovery-state.json"

// storeVersion is the layout of the file; a file of another version is
// moved aside rather than misread.
const storeVersion = 1

// Approval records that an operator approved a candidate as it was.
type Approval struct {
	Fingerprint string    `json:"fingerprint"`
	ApprovedAt  time.Time `json:"approved_at"`
}

// QuarantineRecord records why a candidate was quarantined.
type QuarantineRecord struct {
	Fingerprint   string    `json:"fingerprint"`
	Source        string    `json:"source"`
	Reason        string    `json:"reason"`
	QuarantinedAt time.Time `json:"quarantined_at"`
}

type storeFile struct {
	Version    int                         `json:"version"`
	Approvals  map[string]Approval         `json:"approvals"`
	Quarantine map[string]QuarantineRecord `json:"quarantine"`
}

func emptyState() storeFile {
	return storeFile{Version: storeVersion, Approvals: map[string]Approval{}, Quarantine: map[string]QuarantineRecord{}}
}

// Store keeps approvals and quarantine decisions across restarts, keyed by
// server name. Every change is written through atomically.
type Store struct {
	path string // "" keeps everything in memory
	log  *slog.Logger

	mu sync.Mutex
	st storeFile
}

// NewMemoryStore returns a store that forgets everything on exit.
func NewMemoryStore() *Store {
	return &Store{log: slog.Default(), st: emptyState()}
}

// OpenStore loads <dataDir>/discovery-state.json, creating dataDir if need
// be. A file that cannot be decoded is logged and moved aside to
// discovery-state.json.corrupt-<timestamp> and the store starts empty: a
// lost approval costs an operator one hangar_approve, a crash costs more.
func OpenStore(dataDir string, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("discovery store: %w", err)
	}
	s := &Store{path: filepath.Join(dataDir, StateFile), log: log, st: emptyState()}
	data, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("discovery store: %w", err)
	}
	st, err := decodeState(data)
	if err != nil {
		aside := s.path + ".corrupt-" + time.Now().UTC().Format("20060102T150405.000000000Z")
		if rerr := os.Rename(s.path, aside); rerr != nil {
			log.Error("discovery store unreadable and could not be moved aside; starting empty",
				FieldPath, s.path, FieldError, err, "rename_error", rerr)
		} else {
			log.Error("discovery store unreadable; moved aside, starting empty",
				FieldPath, s.path, "moved_to", aside, FieldError, err)
		}
		return s, nil
	}
	s.st = st
	return s, nil
}

func decodeState(data []byte) (storeFile, error) {
	var st storeFile
	if err := json.Unmarshal(data, &st); err != nil {
		return storeFile{}, err
	}
	if st.Version != storeVersion {
		return storeFile{}, fmt.Errorf("unsupported version %d (want %d)", st.Version, storeVersion)
	}
	if st.Approvals == nil {
		st.Approvals = map[string]Approval{}
	}
	if st.Quarantine == nil {
		st.Quarantine = map[string]QuarantineRecord{}
	}
	return st, nil
}

// Path is the file the store writes, "" for a memory store.
func (s *Store) Path() string { return s.path }

// Approved reports whether name was approved with this fingerprint.
func (s *Store) Approved(name, fingerprint string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.st.Approvals[name]
	return ok && a.Fingerprint == fingerprint
}

// Approve records the approval of name as fingerprint, replacing an older
// one, and lifts its quarantine.
func (s *Store) Approve(name, fingerprint string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Approvals[name] = Approval{Fingerprint: fingerprint, ApprovedAt: at.UTC()}
	delete(s.st.Quarantine, name)
	return s.save()
}

// Quarantine returns the quarantine decision about name, if any.
func (s *Store) Quarantine(name string) (QuarantineRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.st.Quarantine[name]
	return r, ok
}

// SetQuarantine records the quarantine of name.
func (s *Store) SetQuarantine(name string, r QuarantineRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.QuarantinedAt = r.QuarantinedAt.UTC()
	s.st.Quarantine[name] = r
	return s.save()
}

// ClearQuarantine forgets the quarantine of name.
func (s *Store) ClearQuarantine(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.st.Quarantine[name]; !ok {
		return nil
	}
	delete(s.st.Quarantine, name)
	return s.save()
}

// save writes the state to a temporary file in the same directory, syncs
// it and renames it over the old one, so a crash leaves either the old or
// the new file, never half of one. Called with mu held.
func (s *Store) save() error {
	if s.path == "" {
		return nil
	}
	data, err := json.MarshalIndent(s.st, "", "  ")
	if err != nil {
		return fmt.Errorf("discovery store: %w", err)
	}
	dir := filepath.Dir(s.path)
	tmp, err := os.CreateTemp(dir, "."+StateFile+".tmp-*")
	if err != nil {
		return fmt.Errorf("discovery store: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("discovery store: write: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("discovery store: sync: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("discovery store: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("discovery store: %w", err)
	}
	// Make the rename itself durable; not every filesystem supports it.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
