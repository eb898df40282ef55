//go:build !unix

package store

// LockFile is the advisory lock in the data directory (unix only).
const LockFile = "hangar.lock"

type dirLock struct{}

// lockDir does nothing where flock does not exist; hangar's images and
// supported hosts are unix.
func lockDir(string) (*dirLock, error) { return &dirLock{}, nil }

func (l *dirLock) release() {}
