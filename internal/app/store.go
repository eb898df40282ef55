package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/store"
)

// legacyImportMarker records in the store that round 1's
// discovery-state.json was imported.
const legacyImportMarker = discovery.StateFile

// openStore resolves the data directory (--data-dir > $HANGAR_DATA_DIR >
// data_dir: > default), opens the store (PostgreSQL when store.url or
// $HANGAR_STORE_URL names one, else SQLite in the data directory) and
// imports round 1's discovery decisions once.
func (a *App) openStore(ctx context.Context, o Options, instance string) error {
	dir, err := config.ResolveDataDir(o.DataDir, a.Config.DataDir, instance)
	if err != nil {
		return err
	}
	st, err := openStoreIn(dir, a.Config.Store, store.Options{Log: a.Log.With("component", "store")})
	if err != nil {
		return err
	}
	a.Store, a.DataDir = st, dir
	// Everything that reads the config afterwards sees where state lives.
	a.Config.DataDir = dir
	a.Log.Info("store open", "path", st.Path(), "shared", a.Config.Store.Shared())
	a.importLegacy(ctx, st, dir)
	return nil
}

// openStoreIn opens the store cfg selects; the data directory still holds
// the rest of the local state (and the keystore key file, when no key is
// in the environment).
func openStoreIn(dir string, cfg config.Store, opts store.Options) (interface {
	store.Store
	store.Importer
}, error) {
	if !cfg.Shared() {
		return store.OpenDir(dir, opts)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	return store.OpenPostgres(store.PostgresConfig{URL: cfg.URL, PasswordFile: cfg.PasswordFile, KeyDir: dir}, opts)
}

// importLegacy imports <dir>/discovery-state.json into st once and leaves
// the file alone. An unreadable file is logged, not fatal: it cost an
// operator a re-approval in round 1 too, and the file stays for a retry.
func (a *App) importLegacy(ctx context.Context, st store.Importer, dir string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if done, err := st.Imported(ctx, legacyImportMarker); err != nil || done {
		if err != nil {
			a.Log.Warn("cannot tell whether discovery-state.json was imported", "error", err)
		}
		return
	}
	ds, err := discovery.LegacyDecisions(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	path := filepath.Join(dir, discovery.StateFile)
	if err != nil {
		a.Log.Warn("round-1 discovery state not imported; fix or remove the file", "path", path, "error", err)
		return
	}
	if ok, err := st.ImportDecisions(ctx, legacyImportMarker, ds); err != nil {
		a.Log.Error("round-1 discovery state not imported", "path", path, "error", err)
	} else if ok {
		a.Log.Info("imported round-1 discovery state; the file is no longer read", "path", path, "decisions", len(ds))
	}
}
