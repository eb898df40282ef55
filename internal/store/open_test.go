package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wantOpenError checks that err is an OpenError of kind that names path
// and says what to do.
func wantOpenError(t *testing.T, err error, kind error, path string, fix ...string) {
	t.Helper()
	var oe *OpenError
	if !errors.As(err, &oe) || !errors.Is(err, kind) {
		t.Fatalf("error %v (%T), want an OpenError of kind %v", err, err, kind)
	}
	msg := err.Error()
	if !strings.Contains(msg, path) {
		t.Errorf("error does not name %s: %s", path, msg)
	}
	for _, f := range fix {
		if !strings.Contains(msg, f) {
			t.Errorf("error does not say %q: %s", f, msg)
		}
	}
}

func TestOpenCorruptFile(t *testing.T) {
	t.Parallel()
	damage := map[string]func(t *testing.T, path string){
		"not a database": func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(strings.Repeat("this is not sqlite\n", 400)), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"damaged pages": func(t *testing.T, path string) {
			// A real database with its header intact and later pages
			// overwritten, as a torn disk write leaves it.
			s, err := Open(path, Options{Log: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 200 {
				if err := s.AppendAudit(t.Context(), AuditEntry{Server: "s", Reason: strings.Repeat("x", 200), Tool: fmt.Sprint(i)}); err != nil {
					t.Fatal(err)
				}
			}
			// Fold the WAL into the file so the damage is not hidden by it.
			if _, err := s.db.ExecContext(t.Context(), "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
				t.Fatal(err)
			}
			_ = s.Close()
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fi, _ := f.Stat()
			if fi.Size() < 8*4096 {
				t.Fatalf("database only %d bytes", fi.Size())
			}
			if _, err := f.WriteAt([]byte(strings.Repeat("\xff\x00garbage", 3*4096/9)), 2*4096); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, fn := range damage {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), FileName)
			fn(t, path)
			_, err := Open(path, Options{Log: quiet()})
			wantOpenError(t, err, ErrCorrupt, path, "move the file aside", "restore it from a backup", "approvals")
			// Nothing was changed, and the directory is not left locked.
			if _, err := lockDir(filepath.Dir(path)); err != nil {
				t.Errorf("lock after a refused open: %v", err)
			}
		})
	}
}

func TestOpenLocked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, Options{})
	_, err := OpenDir(dir, Options{Log: quiet()})
	wantOpenError(t, err, ErrLocked, filepath.Join(dir, LockFile),
		fmt.Sprintf("pid %d", os.Getpid()), "stop that process", "--data-dir")
	// The refused open did not clobber the holder's pid and host.
	host, _ := os.Hostname()
	if data, _ := os.ReadFile(filepath.Join(dir, LockFile)); string(data) != fmt.Sprintf("%d %s\n", os.Getpid(), host) {
		t.Errorf("lock file holds %q", data)
	}
	if host != "" && !strings.Contains(err.Error(), "on host "+host) {
		t.Errorf("error does not name the host: %v", err)
	}
	// Once the holder closes, the directory is free again; closing twice
	// is harmless.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	s2, err := OpenDir(dir, Options{Log: quiet()})
	if err != nil {
		t.Fatalf("reopen after close: %v", err)
	}
	_ = s2.Close()
}

func TestOpenUnwritable(t *testing.T) {
	t.Parallel()
	type setup func(t *testing.T) (dbPath, blamed string)
	cases := map[string]setup{
		"data dir under a file": func(t *testing.T) (string, string) {
			file := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(file, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(file, "data")
			return filepath.Join(dir, FileName), dir
		},
		"database path is a directory": func(t *testing.T) (string, string) {
			path := filepath.Join(t.TempDir(), FileName)
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
			return path, path
		},
	}
	// Permission bits do not stop root; these cases run for other users.
	if os.Geteuid() != 0 {
		cases["read-only data dir"] = func(t *testing.T) (string, string) {
			dir := filepath.Join(t.TempDir(), "ro")
			if err := os.Mkdir(dir, 0o500); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
			return filepath.Join(dir, FileName), dir
		}
		cases["read-only database file"] = func(t *testing.T) (string, string) {
			path := filepath.Join(t.TempDir(), FileName)
			s, err := Open(path, Options{Log: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			_ = s.Close()
			if err := os.Chmod(path, 0o400); err != nil {
				t.Fatal(err)
			}
			return path, path
		}
	}
	for name, fn := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path, blamed := fn(t)
			_, err := Open(path, Options{Log: quiet()})
			wantOpenError(t, err, ErrUnwritable, blamed, "--data-dir")
		})
	}
}

func TestOpenCreatesPrivateFiles(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nested", "data")
	s := open(t, dir, Options{})
	if s.Path() != filepath.Join(dir, FileName) || s.Dir() != dir {
		t.Errorf("Path %q, Dir %q", s.Path(), s.Dir())
	}
	for path, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, s.Path(): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s has mode %v, want %v", path, fi.Mode(), want)
		}
	}
}
