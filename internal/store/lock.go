//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// LockFile is the advisory lock in the data directory: one hangar process
// per directory, since two writers would each believe their decisions are
// the ones on disk.
const LockFile = "hangar.lock"

// dirLock is a held flock on <dir>/hangar.lock. The kernel drops it when
// the process dies, so a gateway killed with -9 does not block the next.
type dirLock struct{ f *os.File }

// lockDir takes the lock without waiting and writes this process's pid
// into the file, so the next one can name the holder.
func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, unwritable(dir, "the data directory", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("store: lock %s: %w", path, err)
		}
		holder := "another hangar process"
		if data, rerr := os.ReadFile(path); rerr == nil {
			// "<pid> <host>": in a container the pid alone (often 1) does
			// not say which one; its host name (the container ID) does.
			f := strings.Fields(string(data))
			if len(f) > 0 {
				if pid, perr := strconv.Atoi(f[0]); perr == nil && pid > 0 {
					holder = fmt.Sprintf("another hangar process (pid %d)", pid)
					if len(f) > 1 {
						holder = fmt.Sprintf("another hangar process (pid %d on host %s)", pid, f[1])
					}
				}
			}
		}
		return nil, &OpenError{Kind: ErrLocked, Path: path, Err: err, Msg: fmt.Sprintf(
			"store: data directory %s is in use by %s, which holds %s: stop that process, "+
				"or give this one another --data-dir", dir, holder, path)}
	}
	// Only the holder writes the pid, so a refused process never clobbers it.
	if err := f.Truncate(0); err == nil {
		id := strconv.Itoa(os.Getpid())
		if host, err := os.Hostname(); err == nil && host != "" && !strings.ContainsAny(host, " \n") {
			id += " " + host
		}
		_, _ = f.WriteAt([]byte(id+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

// release drops the lock. The file stays: removing it would let a third
// process lock a new file while a second still waits on the old one.
// A second call does nothing (the descriptor may by then belong to
// another file).
func (l *dirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}
