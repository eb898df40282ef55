package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Hotloads lists the stored hot-loads by name.
func (s *sqlStore) Hotloads(ctx context.Context) ([]Hotload, error) {
	rows, err := s.query(ctx, `SELECT name, force_unverified, allow_tools, deny_tools, loaded_at FROM hotloads ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("store: hot-loads: %w", err)
	}
	defer rows.Close()
	var out []Hotload
	for rows.Next() {
		var h Hotload
		var force int
		var allow, deny string
		var at int64
		if err := rows.Scan(&h.Name, &force, &allow, &deny, &at); err != nil {
			return nil, fmt.Errorf("store: hot-loads: %w", err)
		}
		if err := errors.Join(json.Unmarshal([]byte(allow), &h.AllowTools), json.Unmarshal([]byte(deny), &h.DenyTools)); err != nil {
			return nil, fmt.Errorf("store: hot-load %s: tool patterns: %w", h.Name, err)
		}
		h.ForceUnverified, h.LoadedAt = force != 0, fromNanos(at)
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: hot-loads: %w", err)
	}
	return out, nil
}

// PutHotload stores h, replacing the hot-load of the same name; a zero
// LoadedAt is now.
func (s *sqlStore) PutHotload(ctx context.Context, h Hotload) error {
	if h.Name == "" {
		return errors.New("store: put hot-load: name is required")
	}
	allow, _ := json.Marshal(nonNilStrings(h.AllowTools))
	deny, _ := json.Marshal(nonNilStrings(h.DenyTools))
	return s.execChanged(ctx, "put hot-load "+h.Name, ChangeHotload, h.Name, `INSERT INTO hotloads
		(name, force_unverified, allow_tools, deny_tools, loaded_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET force_unverified = excluded.force_unverified,
			allow_tools = excluded.allow_tools, deny_tools = excluded.deny_tools, loaded_at = excluded.loaded_at`,
		h.Name, boolInt(h.ForceUnverified), string(allow), string(deny), nanos(nowOr(h.LoadedAt)))
}

// DeleteHotload forgets the hot-load of name; none is not an error.
func (s *sqlStore) DeleteHotload(ctx context.Context, name string) error {
	return s.execChanged(ctx, "delete hot-load "+name, ChangeHotload, name, `DELETE FROM hotloads WHERE name = ?`, name)
}

// ClearHotloads forgets every hot-load.
func (s *sqlStore) ClearHotloads(ctx context.Context) error {
	return s.execChanged(ctx, "clear hot-loads", ChangeHotload, "", `DELETE FROM hotloads`)
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}
