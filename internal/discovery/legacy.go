package discovery

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcp-hangar/hangar/internal/store"
)

// StateFile is where round 1 kept discovery decisions, in the data
// directory. It is imported into the store once and then left alone.
const StateFile = "discovery-state.json"

// legacyVersion is the only layout of StateFile there was.
const legacyVersion = 1

type legacyState struct {
	Version   int `json:"version"`
	Approvals map[string]struct {
		Fingerprint string    `json:"fingerprint"`
		ApprovedAt  time.Time `json:"approved_at"`
	} `json:"approvals"`
	Quarantine map[string]struct {
		Fingerprint   string    `json:"fingerprint"`
		Source        string    `json:"source"`
		Reason        string    `json:"reason"`
		QuarantinedAt time.Time `json:"quarantined_at"`
	} `json:"quarantine"`
}

// LegacyDecisions reads <dataDir>/discovery-state.json as store
// decisions. A missing file is an error satisfying errors.Is(err,
// fs.ErrNotExist); a file that cannot be decoded is an error naming it.
func LegacyDecisions(dataDir string) ([]store.Decision, error) {
	path := filepath.Join(dataDir, StateFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st legacyState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if st.Version != legacyVersion {
		return nil, fmt.Errorf("%s: unsupported version %d (want %d)", path, st.Version, legacyVersion)
	}
	var out []store.Decision
	for name, a := range st.Approvals {
		out = append(out, approvalDecision(name, Approval{Fingerprint: a.Fingerprint, ApprovedAt: a.ApprovedAt}))
	}
	for name, q := range st.Quarantine {
		out = append(out, quarantineDecision(name, QuarantineRecord{Fingerprint: q.Fingerprint, Source: q.Source,
			Reason: q.Reason, QuarantinedAt: q.QuarantinedAt}))
	}
	slices.SortFunc(out, func(a, b store.Decision) int {
		return strings.Compare(a.Key+"\x00"+a.Kind, b.Key+"\x00"+b.Kind)
	})
	return out, nil
}
