package pin

import (
	"context"
	"fmt"
	"sync"

	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/store"
)

// Quarantines keeps provider quarantines (tool_schema_changed,
// image_changed, signature_invalid) in the store as Decisions of kind
// quarantined, so that after a restart hangar_quarantine lists them and
// calls stay refused until hangar_approve. It implements
// provider.QuarantineStore; the records are read once at start-up.
type Quarantines struct {
	db store.Decisions
	// SourceOf names a server's catalog source for the record; set it
	// before any provider can be quarantined. nil records "".
	SourceOf func(server string) string

	mu      sync.Mutex
	records map[string]store.Decision
}

var _ provider.QuarantineStore = (*Quarantines)(nil)

// LoadQuarantines reads the provider quarantines kept in db.
func LoadQuarantines(ctx context.Context, db store.Decisions) (*Quarantines, error) {
	q := &Quarantines{db: db, records: map[string]store.Decision{}}
	ds, err := db.Decisions(ctx)
	if err != nil {
		return q, fmt.Errorf("provider quarantines: %w", err)
	}
	for _, d := range ds {
		if _, ok := store.IsProviderQuarantine(d); ok {
			q.records[d.Key] = d
		}
	}
	return q, nil
}

// Reload reads server's provider quarantine from the store again (another
// gateway replica changed it) and reports whether the store keeps one.
func (q *Quarantines) Reload(ctx context.Context, server string) (bool, error) {
	ds, err := q.db.Decisions(ctx)
	if err != nil {
		return false, fmt.Errorf("provider quarantines: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.records, server)
	for _, d := range ds {
		if _, ok := store.IsProviderQuarantine(d); ok && d.Key == server {
			q.records[d.Key] = d
		}
	}
	_, kept := q.records[server]
	return kept, nil
}

// Restored implements provider.QuarantineStore.
func (q *Quarantines) Restored(server string) (provider.Quarantine, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	d, ok := q.records[server]
	if !ok {
		return provider.Quarantine{}, false
	}
	image, _ := store.IsProviderQuarantine(d)
	return provider.Quarantine{Reason: d.Reason, Detail: d.Detail, Since: d.At, Image: image}, true
}

// Save implements provider.QuarantineStore: written through, then
// remembered.
func (q *Quarantines) Save(ctx context.Context, server string, pq provider.Quarantine) error {
	d := store.Decision{Key: server, Kind: store.DecisionQuarantined, Fingerprint: store.ProviderQuarantineFingerprint(pq.Image),
		Reason: pq.Reason, Detail: pq.Detail, At: pq.Since.UTC()}
	if q.SourceOf != nil {
		d.Source = q.SourceOf(server)
	}
	if err := q.db.PutDecision(ctx, d); err != nil {
		return err
	}
	q.mu.Lock()
	q.records[server] = d
	q.mu.Unlock()
	return nil
}

// Lift implements provider.QuarantineStore.
func (q *Quarantines) Lift(ctx context.Context, server string) error {
	q.mu.Lock()
	_, ok := q.records[server]
	q.mu.Unlock()
	if !ok {
		return nil
	}
	if err := q.db.DeleteDecision(ctx, server, store.DecisionQuarantined); err != nil {
		return err
	}
	q.mu.Lock()
	delete(q.records, server)
	q.mu.Unlock()
	return nil
}
