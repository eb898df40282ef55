package discovery

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStoreRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := OpenStore(dir, nil)
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

	s2, err := OpenStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !s2.Approved("api", "f2") || s2.Approved("api", "other") || s2.Approved("nope", "f2") {
		t.Error("approvals not restored")
	}
	q, ok := s2.Quarantine("broken")
	if !ok || q.Fingerprint != "f1" || q.Reason != "health_check_failed: x" || !q.QuarantinedAt.Equal(at) || q.Source != "docker" {
		t.Errorf("quarantine restored as %+v, %v", q, ok)
	}

	// Approving lifts the quarantine, durably.
	if err := s2.Approve("broken", "f1", at); err != nil {
		t.Fatal(err)
	}
	s3, _ := OpenStore(dir, nil)
	if _, ok := s3.Quarantine("broken"); ok {
		t.Error("quarantine survived approval")
	}
	if err := s3.ClearQuarantine("absent"); err != nil {
		t.Error(err)
	}

	data, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil || raw["version"] != float64(1) {
		t.Errorf("file: %s (%v)", data, err)
	}
	// Nothing but the state file is left behind.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only %s", len(entries), StateFile)
	}
}

func TestStoreCorruptFileIsMovedAside(t *testing.T) {
	t.Parallel()
	for name, content := range map[string]string{
		"garbage":      "{not json",
		"bad version":  `{"version": 99, "approvals": {}}`,
		"wrong shapes": `{"version": 1, "approvals": []}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, StateFile)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			s, err := OpenStore(dir, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatalf("OpenStore: %v", err)
			}
			if s.Approved("x", "y") {
				t.Error("corrupt store is not empty")
			}
			if !strings.Contains(logs.String(), "moved aside") {
				t.Errorf("not logged: %s", logs.String())
			}
			matches, _ := filepath.Glob(path + ".corrupt-*")
			if len(matches) != 1 {
				t.Fatalf("corrupt copies: %v", matches)
			}
			if got, _ := os.ReadFile(matches[0]); string(got) != content {
				t.Errorf("moved copy holds %q", got)
			}
			// The store works afterwards.
			if err := s.Approve("x", "y", time.Now()); err != nil {
				t.Fatal(err)
			}
			if s2, _ := OpenStore(dir, nil); !s2.Approved("x", "y") {
				t.Error("store not usable after recovery")
			}
		})
	}
}

func TestStoreMissingFileAndMemory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nested", "data")
	s, err := OpenStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Path() != filepath.Join(dir, StateFile) {
		t.Errorf("path %q", s.Path())
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("data dir not created: %v", err)
	}

	m := NewMemoryStore()
	if err := m.Approve("a", "f", time.Now()); err != nil || !m.Approved("a", "f") || m.Path() != "" {
		t.Error("memory store")
	}
}

func TestStoreUnwritableDirFails(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(filepath.Join(file, "sub"), nil); err == nil {
		t.Error("OpenStore under a file: no error")
	}
}
