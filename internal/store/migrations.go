package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migration is one step of the schema. Steps are numbered from 1 without
// gaps and never edited once released: a change is a new step. Both
// drivers take the same steps; postgres is the step in PostgreSQL's types
// where SQLite's do not fit (64-bit integers, bytea, identity columns).
type migration struct {
	version  int
	name     string
	sql      string
	postgres string // "" when sql serves both
}

func (m migration) text(d *dialect) string {
	if d.dollar && m.postgres != "" {
		return m.postgres
	}
	return m.sql
}

// migrations is the schema, oldest first.
var migrations = []migration{
	{1, "initial schema", `
CREATE TABLE decisions (
	key         TEXT    NOT NULL,
	kind        TEXT    NOT NULL,
	fingerprint TEXT    NOT NULL DEFAULT '',
	source      TEXT    NOT NULL DEFAULT '',
	reason      TEXT    NOT NULL DEFAULT '',
	detail      TEXT    NOT NULL DEFAULT '',
	at          INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (key, kind)
);
CREATE TABLE installs (
	name           TEXT    PRIMARY KEY,
	config         BLOB,
	enabled        INTEGER NOT NULL DEFAULT 0,
	allow_implicit INTEGER NOT NULL DEFAULT 0,
	created_at     INTEGER NOT NULL DEFAULT 0,
	updated_at     INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE tool_pins (
	server     TEXT    NOT NULL,
	tool       TEXT    NOT NULL,
	hash       TEXT    NOT NULL,
	definition BLOB,
	pinned_at  INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (server, tool)
);
CREATE TABLE image_digests (
	server      TEXT    PRIMARY KEY,
	ref         TEXT    NOT NULL DEFAULT '',
	digest      TEXT    NOT NULL DEFAULT '',
	approved_at INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE catalogs (
	server       TEXT    PRIMARY KEY,
	version      TEXT    NOT NULL DEFAULT '',
	image_digest TEXT    NOT NULL DEFAULT '',
	catalog      BLOB,
	updated_at   INTEGER NOT NULL DEFAULT 0
);
-- AUTOINCREMENT: ids only ever grow, so a reader may page by id.
CREATE TABLE audit (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	at          INTEGER NOT NULL,
	server      TEXT    NOT NULL DEFAULT '',
	identity    TEXT    NOT NULL DEFAULT '',
	action      TEXT    NOT NULL DEFAULT '',
	tool        TEXT    NOT NULL DEFAULT '',
	allowed     INTEGER NOT NULL DEFAULT 0,
	reason      TEXT    NOT NULL DEFAULT '',
	outcome     TEXT    NOT NULL DEFAULT '',
	duration_ms REAL    NOT NULL DEFAULT 0
);
CREATE INDEX audit_server_id ON audit (server, id);
CREATE TABLE keystore (
	ref        TEXT    PRIMARY KEY,
	nonce      BLOB    NOT NULL,
	ciphertext BLOB    NOT NULL,
	updated_at INTEGER NOT NULL DEFAULT 0
);
-- value has no declared type, so integers stay integers and text text.
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value
);
INSERT INTO meta (key, value) VALUES ('snapshot_version', 0);
`, `
CREATE TABLE decisions (
	key         TEXT   NOT NULL,
	kind        TEXT   NOT NULL,
	fingerprint TEXT   NOT NULL DEFAULT '',
	source      TEXT   NOT NULL DEFAULT '',
	reason      TEXT   NOT NULL DEFAULT '',
	detail      TEXT   NOT NULL DEFAULT '',
	at          BIGINT NOT NULL DEFAULT 0,
	PRIMARY KEY (key, kind)
);
CREATE TABLE installs (
	name           TEXT    PRIMARY KEY,
	config         BYTEA,
	enabled        INTEGER NOT NULL DEFAULT 0,
	allow_implicit INTEGER NOT NULL DEFAULT 0,
	created_at     BIGINT  NOT NULL DEFAULT 0,
	updated_at     BIGINT  NOT NULL DEFAULT 0
);
CREATE TABLE tool_pins (
	server     TEXT   NOT NULL,
	tool       TEXT   NOT NULL,
	hash       TEXT   NOT NULL,
	definition BYTEA,
	pinned_at  BIGINT NOT NULL DEFAULT 0,
	PRIMARY KEY (server, tool)
);
CREATE TABLE image_digests (
	server      TEXT   PRIMARY KEY,
	ref         TEXT   NOT NULL DEFAULT '',
	digest      TEXT   NOT NULL DEFAULT '',
	approved_at BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE catalogs (
	server       TEXT   PRIMARY KEY,
	version      TEXT   NOT NULL DEFAULT '',
	image_digest TEXT   NOT NULL DEFAULT '',
	catalog      BYTEA,
	updated_at   BIGINT NOT NULL DEFAULT 0
);
-- An identity only ever grows, so a reader may page by id.
CREATE TABLE audit (
	id          BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	at          BIGINT  NOT NULL,
	server      TEXT    NOT NULL DEFAULT '',
	identity    TEXT    NOT NULL DEFAULT '',
	action      TEXT    NOT NULL DEFAULT '',
	tool        TEXT    NOT NULL DEFAULT '',
	allowed     INTEGER NOT NULL DEFAULT 0,
	reason      TEXT    NOT NULL DEFAULT '',
	outcome     TEXT    NOT NULL DEFAULT '',
	duration_ms DOUBLE PRECISION NOT NULL DEFAULT 0
);
CREATE INDEX audit_server_id ON audit (server, id);
CREATE TABLE keystore (
	ref        TEXT   PRIMARY KEY,
	nonce      BYTEA  NOT NULL,
	ciphertext BYTEA  NOT NULL,
	updated_at BIGINT NOT NULL DEFAULT 0
);
-- value is text; the snapshot counter is cast where it is counted.
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT
);
INSERT INTO meta (key, value) VALUES ('snapshot_version', '0');
`},
	{2, "replica membership", `
-- One row per gateway replica of an instance sharing the store, kept
-- alive by its heartbeats.
CREATE TABLE replicas (
	instance      TEXT   NOT NULL,
	replica       TEXT   NOT NULL,
	advertise_url TEXT   NOT NULL DEFAULT '',
	engine        TEXT   NOT NULL DEFAULT '',
	started_at    BIGINT NOT NULL DEFAULT 0,
	heartbeat_at  BIGINT NOT NULL DEFAULT 0,
	PRIMARY KEY (instance, replica)
);
`, ""},
	{3, "audit rule", `
-- The policy rule that decided an audited call ("" when none did).
ALTER TABLE audit ADD COLUMN rule TEXT NOT NULL DEFAULT '';
`, ""},
	{4, "package pins", `
-- One row per server that runs an npm or PyPI package: the exact
-- version and digest its version range was resolved to, and the image
-- built of it.
CREATE TABLE package_pins (
	server      TEXT   PRIMARY KEY,
	type        TEXT   NOT NULL DEFAULT '',
	name        TEXT   NOT NULL DEFAULT '',
	spec        TEXT   NOT NULL DEFAULT '',
	version     TEXT   NOT NULL DEFAULT '',
	integrity   TEXT   NOT NULL DEFAULT '',
	file        TEXT   NOT NULL DEFAULT '',
	image       TEXT   NOT NULL DEFAULT '',
	resolved_at BIGINT NOT NULL DEFAULT 0
);
`, ""},
	{5, "hot-loads", `
-- One row per server hot-loaded (hangar_load) on an instance's replicas
-- and not unloaded, by the registry name it resolved to: the load's
-- parameters, never a secret (those come from each replica's
-- environment), so that every replica runs it, one started later too.
CREATE TABLE hotloads (
	name             TEXT    PRIMARY KEY,
	force_unverified INTEGER NOT NULL DEFAULT 0,
	allow_tools      TEXT    NOT NULL DEFAULT '[]',
	deny_tools       TEXT    NOT NULL DEFAULT '[]',
	loaded_at        BIGINT  NOT NULL DEFAULT 0
);
-- Replicas derive their forwarding key from the keystore key now: the
-- key round 3 kept here in the clear goes.
DELETE FROM meta WHERE key = 'key:forward';
`, ""},
}

// latestVersion is the schema version this build writes.
func latestVersion() int { return migrations[len(migrations)-1].version }

// migrator is a database or one connection to it (PostgreSQL migrates on
// the connection that holds the migration lock).
type migrator interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// migrate brings the database to latestVersion, one transaction per step.
// A database of a newer version is refused rather than misread.
func migrate(ctx context.Context, db migrator, d *dialect, path string) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at BIGINT  NOT NULL
	)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var current int
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current > latestVersion() {
		return &OpenError{Kind: ErrNewerSchema, Path: path, Msg: fmt.Sprintf(
			"store: %s has schema version %d, but this hangar knows versions up to %d: it was written by a newer hangar; "+
				"run that version, or restore a backup made by this one", path, current, latestVersion())}
	}
	for _, m := range migrations {
		if m.version <= current {
			continue
		}
		if err := apply(ctx, db, d, m); err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
	}
	return nil
}

func apply(ctx context.Context, db migrator, d *dialect, m migration) error {
	t, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = t.Rollback() }()
	if _, err := t.ExecContext(ctx, m.text(d)); err != nil {
		return err
	}
	if _, err := t.ExecContext(ctx, d.q(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
		m.version, m.name, time.Now().UnixNano()); err != nil {
		return err
	}
	return t.Commit()
}
