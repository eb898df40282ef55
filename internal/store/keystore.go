package store

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const (
	// KeystoreKeyEnv holds the keystore key, base64 of 32 bytes.
	KeystoreKeyEnv = "HANGAR_KEYSTORE_KEY"
	// KeyFile is the keystore key beside the database when the
	// environment has none; created with mode 0600 on first use.
	KeyFile = "keystore.key"

	keySize = 32 // AES-256
	// metaKeyCheck holds a value sealed with the key, so a wrong key is
	// recognised at once rather than by a failed secret later.
	metaKeyCheck = "keystore_check"
	checkPlain   = "hangar keystore key check"
	checkAAD     = "hangar-keystore-check"
)

// ErrKeystoreKey is the kind of every keystore key problem (missing,
// malformed, or not the key the secrets were sealed with).
var ErrKeystoreKey = errors.New("store: keystore key")

type keyError struct{ msg string }

func (e *keyError) Error() string { return e.msg }
func (e *keyError) Unwrap() error { return ErrKeystoreKey }

func keyErr(format string, args ...any) error { return &keyError{fmt.Sprintf(format, args...)} }

// secretAAD binds a ciphertext to its ref: a value copied under another
// ref does not decrypt.
func secretAAD(ref string) []byte { return []byte("hangar-keystore:" + ref) }

// keystore returns the cipher, loading (or on first use creating) the key.
// Only a success is cached, so fixing the key does not need a restart.
func (s *sqlStore) keystore(ctx context.Context) (cipher.AEAD, error) {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if s.aead != nil {
		return s.aead, nil
	}
	check, sealed, err := metaValue(ctx, s.dbRow(ctx), metaKeyCheck)
	if err != nil {
		return nil, fmt.Errorf("store: keystore: %w", err)
	}
	key, from, err := s.loadKey(sealed)
	if err != nil {
		return nil, err
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, fmt.Errorf("store: keystore: %w", err)
	}
	if sealed {
		if err := s.openCheck(aead, check, from); err != nil {
			return nil, err
		}
	}
	s.aead, s.key = aead, key
	return aead, nil
}

// DerivedKey is a 32-byte key for purpose derived from the keystore key
// (HKDF-SHA256, the purpose as its info): every process that shares the
// store under the same keystore key derives the same key, and nothing of
// it is stored. The keystore's key check is stored first when there is
// none yet, so that a process with another key is refused here
// (ErrKeystoreKey) rather than deriving a key the others do not share.
func (s *sqlStore) DerivedKey(ctx context.Context, purpose string) ([]byte, error) {
	if purpose == "" {
		return nil, errors.New("store: derived key: purpose is required")
	}
	aead, err := s.keystore(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.write(ctx, "keystore key check", func(t tx) error { return s.storeCheck(ctx, t, aead) }); err != nil {
		return nil, err
	}
	s.keyMu.Lock()
	key := s.key
	s.keyMu.Unlock()
	return hkdf.Key(sha256.New, key, nil, "hangar "+purpose, keySize)
}

// storeCheck stores the key check sealed with aead unless one is stored,
// and verifies that a stored one opens with it: the first process to
// seal (or derive) stores the check, and a later one (this process or,
// sharing the database, another replica) must use the same key.
func (s *sqlStore) storeCheck(ctx context.Context, t tx, aead cipher.AEAD) error {
	cn, cct := seal(aead, []byte(checkPlain), []byte(checkAAD))
	check := base64.StdEncoding.EncodeToString(append(cn, cct...))
	if _, err := t.exec(ctx, `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`,
		metaKeyCheck, check); err != nil {
		return err
	}
	stored, _, err := metaValue(ctx, t.row(ctx), metaKeyCheck)
	if err != nil {
		return err
	}
	if stored != check {
		return s.openCheck(aead, stored, "this process's key")
	}
	return nil
}

// openCheck verifies that aead opens the key check stored in meta: the
// secrets were sealed with this key. from names where the key came from.
func (s *sqlStore) openCheck(aead cipher.AEAD, check, from string) error {
	raw, derr := base64.StdEncoding.DecodeString(check)
	ns := aead.NonceSize()
	if derr != nil || len(raw) < ns {
		return fmt.Errorf("store: keystore: the key check in %s is damaged", s.path)
	}
	if _, err := aead.Open(nil, raw[:ns], raw[ns:], []byte(checkAAD)); err != nil {
		return keyErr("store: the secrets in %s were sealed with another key than the one in %s: "+
			"set %s to the original key, or restore the original %s; stored secrets cannot be read until then",
			s.path, from, KeystoreKeyEnv, s.keyFilePath())
	}
	return nil
}

func (s *sqlStore) keyFilePath() string {
	if s.dir == "" {
		return KeyFile
	}
	return filepath.Join(s.dir, KeyFile)
}

// loadKey finds the key: Options, then the environment, then the key file.
// A new key file is made only while no secret was ever sealed, since a
// fresh key could not read them.
func (s *sqlStore) loadKey(sealed bool) (key []byte, from string, err error) {
	if s.keyOpt != nil {
		return s.keyOpt, "Options.KeystoreKey", nil
	}
	if v := os.Getenv(KeystoreKeyEnv); v != "" {
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
		if err != nil || len(key) != keySize {
			return nil, "", keyErr("store: $%s is not the base64 of %d bytes: set it to the output of "+
				"`head -c 32 /dev/urandom | base64`, or unset it to use %s", KeystoreKeyEnv, keySize, s.keyFilePath())
		}
		return key, "$" + KeystoreKeyEnv, nil
	}
	if s.path == "" {
		if sealed {
			return nil, "", keyErr("store: in-memory keystore without its key")
		}
		key := make([]byte, keySize)
		_, _ = rand.Read(key)
		s.keyOpt = key // for the life of this store
		return key, "a key made up for this in-memory store", nil
	}
	path := s.keyFilePath()
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		key, derr := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
		if derr != nil || len(key) != keySize {
			return nil, "", keyErr("store: keystore key file %s is not the base64 of %d bytes: restore it from a "+
				"backup, or set %s to the original key", path, keySize, KeystoreKeyEnv)
		}
		return key, path, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, "", keyErr("store: keystore key file %s: %v: fix its permissions, or set %s", path, err, KeystoreKeyEnv)
	case sealed:
		return nil, "", keyErr("store: %s holds secrets (or the key check gateway replicas store) but their key is gone: neither %s nor %s is set; "+
			"restore %s or set %s to the original key", s.path, path, "$"+KeystoreKeyEnv, path, KeystoreKeyEnv)
	}
	key = make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		return nil, "", fmt.Errorf("store: keystore key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, "", keyErr("store: cannot create keystore key file %s: %v: fix the directory's permissions, "+
			"or set %s", path, err, KeystoreKeyEnv)
	}
	_, werr := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	serr := f.Sync()
	if err := errors.Join(werr, serr, f.Close()); err != nil {
		_ = os.Remove(path)
		return nil, "", fmt.Errorf("store: write keystore key file %s: %w", path, err)
	}
	s.log.Info("created keystore key file; back it up with the database", "path", path)
	return key, path, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func seal(aead cipher.AEAD, plain, aad []byte) (nonce, ct []byte) {
	nonce = make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails on supported platforms
	return nonce, aead.Seal(nil, nonce, plain, aad)
}

// PutSecret seals value (AES-256-GCM, a random nonce per value) and stores
// it under ref, replacing an older value.
func (s *sqlStore) PutSecret(ctx context.Context, ref string, value []byte) error {
	what := "put secret " + ref
	if ref == "" {
		return errors.New("store: put secret: ref is required")
	}
	aead, err := s.keystore(ctx)
	if err != nil {
		return s.record(what, err)
	}
	nonce, ct := seal(aead, value, secretAAD(ref))
	return s.write(ctx, what, func(t tx) error {
		// A secret sealed with another key than the others' could never
		// be read back.
		if err := s.storeCheck(ctx, t, aead); err != nil {
			return err
		}
		_, err := t.exec(ctx, `INSERT INTO keystore (ref, nonce, ciphertext, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (ref) DO UPDATE SET nonce = excluded.nonce, ciphertext = excluded.ciphertext,
				updated_at = excluded.updated_at`, ref, nonce, ct, time.Now().UnixNano())
		return err
	})
}

// Secret opens the value stored under ref, ErrNotFound when none. A value
// that does not open with the key is an error, never a garbage value.
func (s *sqlStore) Secret(ctx context.Context, ref string) ([]byte, error) {
	var nonce, ct []byte
	err := s.queryRow(ctx, `SELECT nonce, ciphertext FROM keystore WHERE ref = ?`, []any{ref}, &nonce, &ct)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: secret %s: %w", ref, err)
	}
	return s.open(ctx, ref, nonce, ct)
}

// TakeSecret opens and removes the value stored under ref: one DELETE …
// RETURNING, so two takers can never both get it.
func (s *sqlStore) TakeSecret(ctx context.Context, ref string) ([]byte, error) {
	var nonce, ct []byte
	found := true
	err := s.write(ctx, "take secret "+ref, func(t tx) error {
		err := t.queryRow(ctx, `DELETE FROM keystore WHERE ref = ? RETURNING nonce, ciphertext`, ref).Scan(&nonce, &ct)
		if errors.Is(err, sql.ErrNoRows) {
			found = false // nothing to take is no write failure
			return nil
		}
		return err
	})
	if err == nil && !found {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: take secret %s: %w", ref, err)
	}
	return s.open(ctx, ref, nonce, ct)
}

// SecretRefs lists the refs under refPrefix.
func (s *sqlStore) SecretRefs(ctx context.Context, refPrefix string) ([]string, error) {
	rows, err := s.query(ctx, `SELECT ref FROM keystore WHERE substr(ref, 1, length(CAST(? AS TEXT))) = ? ORDER BY ref`, refPrefix, refPrefix)
	if err != nil {
		return nil, fmt.Errorf("store: secret refs: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var ref string
		if err := rows.Scan(&ref); err != nil {
			return nil, fmt.Errorf("store: secret refs: %w", err)
		}
		out = append(out, ref)
	}
	return out, rows.Err()
}

// open decrypts a stored value of ref.
func (s *sqlStore) open(ctx context.Context, ref string, nonce, ct []byte) ([]byte, error) {
	aead, err := s.keystore(ctx)
	if err != nil {
		return nil, err
	}
	if len(nonce) != aead.NonceSize() {
		return nil, fmt.Errorf("store: secret %s: damaged nonce", ref)
	}
	plain, err := aead.Open(nil, nonce, ct, secretAAD(ref))
	if err != nil {
		return nil, keyErr("store: secret %s does not open with the keystore key: it was sealed with another key "+
			"or damaged; set %s to the original key or restore %s", ref, KeystoreKeyEnv, s.keyFilePath())
	}
	return plain, nil
}

// DeleteSecret removes the secret under ref, if there is one.
func (s *sqlStore) DeleteSecret(ctx context.Context, ref string) error {
	return s.exec(ctx, "delete secret "+ref, `DELETE FROM keystore WHERE ref = ?`, ref)
}

// DeleteSecrets removes every secret whose ref starts with refPrefix. An
// empty prefix is refused rather than taken to mean all of them.
func (s *sqlStore) DeleteSecrets(ctx context.Context, refPrefix string) error {
	if refPrefix == "" {
		return errors.New("store: delete secrets: an empty ref prefix would delete every secret")
	}
	// substr rather than LIKE: refs may contain % and _.
	return s.exec(ctx, "delete secrets "+refPrefix,
		`DELETE FROM keystore WHERE substr(ref, 1, length(CAST(? AS TEXT))) = ?`, refPrefix, refPrefix)
}
