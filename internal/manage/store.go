package manage

import "github.com/mcp-hangar/hangar/internal/store"

// Store is the part of the durable store management uses; store.Store
// has it all.
type Store interface {
	store.Installs
	store.Secrets
	store.Snapshots
	store.Audit
	store.Catalogs
}

var _ Store = store.Store(nil)
