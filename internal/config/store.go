package config

import (
	"net/url"
	"strings"
)

// StoreURLEnv sets store.url, and wins over the file's.
const StoreURLEnv = "HANGAR_STORE_URL"

// Store is the store section. With a URL the durable state (decisions,
// installs, pins, digests, catalogs, audit, keystore, replica membership)
// lives in that PostgreSQL database, which gateway replicas of one
// instance share; without one it lives in SQLite in the data directory.
type Store struct {
	// URL is postgres://user@host:5432/db?sslmode=…, never with a password.
	URL string
	// PasswordFile holds the database password (a Docker or Swarm secret).
	PasswordFile string
}

// Shared reports whether the store is a shared (PostgreSQL) database.
func (s Store) Shared() bool { return s.URL != "" }

func (d *decoder) store(s *section, st *Store) {
	s.str("url", &st.URL,
		"postgres://user@host:5432/db?sslmode=…, never with the password; $HANGAR_STORE_URL wins. Unset: SQLite in data_dir.",
		format("uri"))
	s.str("password_file", &st.PasswordFile,
		"A file holding the database password (a Docker or Swarm secret).")
	s.finish()
	from := ""
	if v, ok := d.lookup(StoreURLEnv); ok && v != "" {
		st.URL, from = v, " (from environment variable "+StoreURLEnv+")"
	}
	if st.URL != "" {
		// The value is never quoted back: it could hold a password.
		if msg := checkStoreURL(st.URL); msg != "" {
			d.add(s.at("url"), "%s%s", msg, from)
		}
	}
	switch {
	case st.PasswordFile != "" && st.URL == "":
		d.add(s.at("password_file"), "needs store.url (or $%s): without a URL the store is SQLite, which has no password", StoreURLEnv)
	case st.PasswordFile != "" && strings.TrimSpace(st.PasswordFile) == "":
		d.add(s.at("password_file"), "must not be empty")
	}
}

// checkStoreURL is the validation of a store URL, "" when fine.
func checkStoreURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return "must be a URL of the form postgres://user@host:5432/db?sslmode=require"
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return "must be a postgres:// URL (PostgreSQL is the shared store; leave store.url out for SQLite)"
	}
	if u.Host == "" {
		return "must name the database host: postgres://user@host:5432/db"
	}
	_, inUser := u.User.Password()
	inQuery := false
	for k := range u.Query() {
		inQuery = inQuery || strings.EqualFold(k, "password")
	}
	if inUser || inQuery {
		return "must not hold the password: put it in a file and name it in store.password_file"
	}
	return ""
}
