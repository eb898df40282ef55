package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseStore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml string
		env        []string
		want       Store
	}{
		{"none is SQLite", "", nil, Store{}},
		{"postgres", "store: {url: 'postgres://hangar@db:5432/hangar?sslmode=require', password_file: /run/secrets/db}\n", nil,
			Store{URL: "postgres://hangar@db:5432/hangar?sslmode=require", PasswordFile: "/run/secrets/db"}},
		{"from the environment", "", []string{StoreURLEnv + "=postgresql://hangar@db/hangar"},
			Store{URL: "postgresql://hangar@db/hangar"}},
		{"the environment wins", "store: {url: 'postgres://a@file/x', password_file: /pw}\n",
			[]string{StoreURLEnv + "=postgres://b@env/y", "HANGAR_STORE__PASSWORD_FILE=/env-pw"},
			Store{URL: "postgres://b@env/y", PasswordFile: "/env-pw"}},
		{"an empty variable is unset", "store: {url: 'postgres://a@file/x'}\n", []string{StoreURLEnv + "="},
			Store{URL: "postgres://a@file/x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := mustParse(t, tc.yaml, tc.env...)
			if !reflect.DeepEqual(cfg.Store, tc.want) || cfg.Store.Shared() != (tc.want.URL != "") {
				t.Errorf("Store = %+v, want %+v", cfg.Store, tc.want)
			}
		})
	}
}

func TestParseStoreProblems(t *testing.T) {
	t.Parallel()
	const secret = "s3cret-pw"
	tests := []struct {
		name, yaml string
		env        []string
		want       []string
	}{
		{"password in the URL", "store: {url: 'postgres://hangar:" + secret + "@db/hangar'}\n", nil,
			[]string{"store.url: must not hold the password: put it in a file and name it in store.password_file"}},
		{"password in the query", "store: {url: 'postgres://db/hangar?password=" + secret + "'}\n", nil,
			[]string{"store.url: must not hold the password: put it in a file and name it in store.password_file"}},
		{"password in the variable", "", []string{StoreURLEnv + "=postgres://hangar:" + secret + "@db/hangar"},
			[]string{"store.url: must not hold the password: put it in a file and name it in store.password_file " +
				"(from environment variable HANGAR_STORE_URL)"}},
		{"not postgres", "store: {url: 'mysql://db/hangar'}\n", nil,
			[]string{"store.url: must be a postgres:// URL (PostgreSQL is the shared store; leave store.url out for SQLite)"}},
		{"a key=value string", "store: {url: 'host=db password=" + secret + "'}\n", nil,
			[]string{"store.url: must be a postgres:// URL (PostgreSQL is the shared store; leave store.url out for SQLite)"}},
		{"no host", "store: {url: 'postgres:///hangar'}\n", nil,
			[]string{"store.url: must name the database host: postgres://user@host:5432/db"}},
		{"password file without URL", "store: {password_file: /pw}\n", nil,
			[]string{"store.password_file: needs store.url (or $HANGAR_STORE_URL): without a URL the store is SQLite, which has no password"}},
		{"unknown key", "store: {url: 'postgres://db/x', pasword_file: /pw}\n", nil,
			[]string{"store.pasword_file: unknown key"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.yaml), tc.env)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a ValidationError", err)
			}
			var got []string
			for _, p := range ve.Problems {
				got = append(got, p.Path+": "+p.Message)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n got  %q\n want %q", got, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error quotes the password: %v", err)
			}
		})
	}
}
