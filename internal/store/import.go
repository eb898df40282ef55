package store

import (
	"context"
	"errors"
	"time"
)

// Importer takes decisions from an older format once. It is not part of
// Store: only start-up uses it.
type Importer interface {
	// Imported reports whether the import named marker was done.
	Imported(ctx context.Context, marker string) (bool, error)
	// ImportDecisions stores ds and records marker in one transaction,
	// unless marker was recorded before; it reports whether it imported.
	// A decision already in the store is kept (it is newer than the file).
	ImportDecisions(ctx context.Context, marker string, ds []Decision) (bool, error)
}

func importKey(marker string) string { return "import:" + marker }

// Imported reports whether the import named marker was done.
func (s *sqlStore) Imported(ctx context.Context, marker string) (bool, error) {
	_, ok, err := metaValue(ctx, s.dbRow(ctx), importKey(marker))
	return ok, err
}

// ImportDecisions stores ds and records marker atomically, once.
func (s *sqlStore) ImportDecisions(ctx context.Context, marker string, ds []Decision) (bool, error) {
	if marker == "" {
		return false, errors.New("store: import: marker is required")
	}
	imported := false
	err := s.write(ctx, "import "+marker, func(t tx) error {
		if _, done, err := metaValue(ctx, t.row(ctx), importKey(marker)); err != nil || done {
			return err
		}
		for _, d := range ds {
			if d.Key == "" || d.Kind == "" {
				continue
			}
			if _, err := t.exec(ctx, `INSERT INTO decisions (key, kind, fingerprint, source, reason, detail, at)
				VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key, kind) DO NOTHING`, d.Key, d.Kind, d.Fingerprint, d.Source, d.Reason, d.Detail, nanos(nowOr(d.At))); err != nil {
				return err
			}
		}
		imported = true
		return setMeta(ctx, t, importKey(marker), time.Now().UTC().Format(time.RFC3339Nano))
	})
	return imported, err
}
