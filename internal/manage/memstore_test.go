package manage

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/mcp-hangar/hangar/internal/store"
)

// MemStore is an in-memory Store for tests, which also lists the
// keystore's refs.
type MemStore struct {
	// AfterDelete, when set, runs after an install is deleted (a test's
	// hook: the caller goes away mid-request).
	AfterDelete func()

	mu       sync.Mutex
	installs map[string]store.Install
	secrets  map[string][]byte
	version  uint64
	audit    []store.AuditEntry
	catalogs map[string]store.CachedCatalog
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore {
	return &MemStore{installs: map[string]store.Install{}, secrets: map[string][]byte{}, catalogs: map[string]store.CachedCatalog{}}
}

var _ Store = (*MemStore)(nil)

// Installs implements store.Installs.
func (m *MemStore) Installs(context.Context) ([]store.Install, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]store.Install, 0, len(m.installs))
	for _, in := range m.installs {
		out = append(out, in)
	}
	slices.SortFunc(out, func(a, b store.Install) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// PutInstall implements store.Installs.
func (m *MemStore) PutInstall(_ context.Context, in store.Install) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.installs[in.Name] = in
	return nil
}

// DeleteInstall implements store.Installs.
func (m *MemStore) DeleteInstall(_ context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.AfterDelete != nil {
		defer m.AfterDelete()
	}
	delete(m.installs, name)
	return nil
}

// PutSecret implements store.Secrets.
func (m *MemStore) PutSecret(_ context.Context, ref string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.secrets[ref] = slices.Clone(value)
	return nil
}

// Secret implements store.Secrets.
func (m *MemStore) Secret(_ context.Context, ref string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.secrets[ref]
	if !ok {
		return nil, store.ErrNotFound
	}
	return slices.Clone(v), nil
}

// SecretRefs implements store.Secrets.
func (m *MemStore) SecretRefs(_ context.Context, prefix string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m.secrets)) {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out, nil
}

// TakeSecret implements store.Secrets.
func (m *MemStore) TakeSecret(_ context.Context, ref string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.secrets[ref]
	if !ok {
		return nil, store.ErrNotFound
	}
	delete(m.secrets, ref)
	return v, nil
}

// DeleteSecret implements store.Secrets.
func (m *MemStore) DeleteSecret(_ context.Context, ref string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.secrets, ref)
	return nil
}

// DeleteSecrets implements store.Secrets.
func (m *MemStore) DeleteSecrets(_ context.Context, prefix string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.secrets {
		if strings.HasPrefix(k, prefix) {
			delete(m.secrets, k)
		}
	}
	return nil
}

// SnapshotVersion implements store.Snapshots.
func (m *MemStore) SnapshotVersion(context.Context) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.version, nil
}

// NextSnapshotVersion implements store.Snapshots.
func (m *MemStore) NextSnapshotVersion(context.Context) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.version++
	return m.version, nil
}

// auditPerServer bounds the in-memory trail like the SQL one.
const auditPerServer = 200

// AppendAudit implements store.Audit.
func (m *MemStore) AppendAudit(ctx context.Context, e store.AuditEntry) error {
	if err := ctx.Err(); err != nil {
		return err // as the SQL stores: a cancelled context writes nothing
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e.ID = int64(len(m.audit) + 1)
	m.audit = append(m.audit, e)
	if len(m.audit) > auditPerServer*16 {
		m.audit = slices.Clone(m.audit[len(m.audit)-auditPerServer*8:])
	}
	return nil
}

// RecentAudit implements store.Audit.
func (m *MemStore) RecentAudit(_ context.Context, server string, limit int) ([]store.AuditEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.AuditEntry
	for i := len(m.audit) - 1; i >= 0 && len(out) < limit; i-- {
		if m.audit[i].Server == server {
			out = append(out, m.audit[i])
		}
	}
	return out, nil
}

// Catalog implements store.Catalogs.
func (m *MemStore) Catalog(_ context.Context, server string) (store.CachedCatalog, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.catalogs[server]
	if !ok {
		return c, store.ErrNotFound
	}
	return c, nil
}

// PutCatalog implements store.Catalogs.
func (m *MemStore) PutCatalog(_ context.Context, c store.CachedCatalog) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.catalogs[c.Server] = c
	return nil
}

// DeleteCatalog implements store.Catalogs.
func (m *MemStore) DeleteCatalog(_ context.Context, server string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.catalogs, server)
	return nil
}
