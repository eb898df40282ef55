package store

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// onDisk is every byte the store wrote to its directory.
func onDisk(t *testing.T, dir string) []byte {
	t.Helper()
	var all []byte
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, data...)
	}
	return all
}

func TestSecretsRoundTripAndAtRest(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	s := open(t, dir, Options{})
	plain := []byte("sk-live-PLAINTEXT-must-not-be-on-disk")
	if err := s.PutSecret(ctx, "fetch/API_KEY", plain); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSecret(ctx, "fetch/OTHER", plain); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Secret(ctx, "fetch/API_KEY"); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Secret = %q, %v", got, err)
	}
	if bytes.Contains(onDisk(t, dir), plain) {
		t.Error("the plaintext is on disk (database, WAL or key file)")
	}
	// Same value, another ref: a fresh nonce, so different ciphertext.
	var c1, c2 []byte
	_ = s.db.QueryRowContext(ctx, `SELECT ciphertext FROM keystore WHERE ref = 'fetch/API_KEY'`).Scan(&c1)
	_ = s.db.QueryRowContext(ctx, `SELECT ciphertext FROM keystore WHERE ref = 'fetch/OTHER'`).Scan(&c2)
	if len(c1) == 0 || bytes.Equal(c1, c2) {
		t.Errorf("ciphertexts %x and %x: want distinct", c1, c2)
	}

	// The key file was made on first use, private.
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", fi, err)
	}

	// A restart reads them with the same key file.
	s = reopen(t, s, Options{})
	if got, err := s.Secret(ctx, "fetch/OTHER"); err != nil || !bytes.Equal(got, plain) {
		t.Errorf("after restart: %q, %v", got, err)
	}
	if _, err := s.Secret(ctx, "absent"); !errors.Is(err, ErrNotFound) {
		t.Errorf("absent secret: %v", err)
	}

	// A value moved to another ref does not open there.
	if _, err := s.db.ExecContext(ctx, `UPDATE keystore SET ciphertext = (SELECT ciphertext FROM keystore WHERE ref = 'fetch/API_KEY'),
		nonce = (SELECT nonce FROM keystore WHERE ref = 'fetch/API_KEY') WHERE ref = 'fetch/OTHER'`); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Secret(ctx, "fetch/OTHER"); err == nil || got != nil {
		t.Errorf("swapped ciphertext opened: %q, %v", got, err)
	}
}

func TestKeystoreWrongKey(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	writeKeyFile := func(t *testing.T, dir, content string) {
		if err := os.WriteFile(filepath.Join(dir, KeyFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	other := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, keySize)) + "\n"
	tests := []struct {
		name  string
		tweak func(t *testing.T, dir string) Options
		want  []string
	}{
		{"another key in Options", func(*testing.T, string) Options {
			return Options{KeystoreKey: bytes.Repeat([]byte{1}, keySize)}
		}, []string{"another key", KeystoreKeyEnv}},
		{"key file replaced", func(t *testing.T, dir string) Options {
			writeKeyFile(t, dir, other)
			return Options{}
		}, []string{"another key", KeyFile, KeystoreKeyEnv}},
		{"key file deleted", func(t *testing.T, dir string) Options {
			_ = os.Remove(filepath.Join(dir, KeyFile))
			return Options{}
		}, []string{"key is gone", KeyFile, KeystoreKeyEnv}},
		{"key file garbled", func(t *testing.T, dir string) Options {
			writeKeyFile(t, dir, "not base64!\n")
			return Options{}
		}, []string{"not the base64 of 32 bytes", KeyFile}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := open(t, dir, Options{})
			if err := s.PutSecret(ctx, "r", []byte("value")); err != nil {
				t.Fatal(err)
			}
			_ = s.Close()
			s = open(t, dir, tt.tweak(t, dir))
			got, err := s.Secret(ctx, "r")
			if got != nil || !errors.Is(err, ErrKeystoreKey) {
				t.Fatalf("Secret = %q, %v; want no value and an ErrKeystoreKey", got, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q: %v", w, err)
				}
			}
			// Writing with the wrong key is refused too, and shows in
			// LastWriteError.
			if err := s.PutSecret(ctx, "r2", []byte("v")); !errors.Is(err, ErrKeystoreKey) || s.LastWriteError() == nil {
				t.Errorf("PutSecret with the wrong key: %v (last %v)", err, s.LastWriteError())
			}
			// The damage was not made worse: no new key file replaced a
			// missing one.
			if tt.name == "key file deleted" {
				if _, err := os.Stat(filepath.Join(dir, KeyFile)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a new key file was made: %v", err)
				}
			}
		})
	}
}

// Not parallel: it sets the process environment.
func TestKeystoreKeyFromEnvironment(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	t.Setenv(KeystoreKeyEnv, base64.StdEncoding.EncodeToString(testKey))
	s := open(t, dir, Options{})
	if err := s.PutSecret(ctx, "r", []byte("value")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, KeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("key file made although the environment has the key: %v", err)
	}
	// The same key given in Options opens it: the environment was used.
	s = reopen(t, s, Options{KeystoreKey: testKey})
	if got, err := s.Secret(ctx, "r"); err != nil || string(got) != "value" {
		t.Errorf("Secret = %q, %v", got, err)
	}

	t.Setenv(KeystoreKeyEnv, "c2hvcnQ=") // "short"
	s = reopen(t, s, Options{})
	_, err := s.Secret(ctx, "r")
	if !errors.Is(err, ErrKeystoreKey) || !strings.Contains(err.Error(), "$"+KeystoreKeyEnv) ||
		!strings.Contains(err.Error(), "/dev/urandom") {
		t.Errorf("malformed environment key: %v", err)
	}
}
