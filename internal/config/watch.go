package config

import (
	"context"
	"crypto/sha256"
	"os"
	"time"
)

// WatchFile calls changed each time the content of the file at path
// changes, checking every interval, until ctx ends. Content, not mtime,
// decides, so an editor's save of identical bytes is no change; a file
// that cannot be read is not one either (it is read again next time).
// It polls rather than uses koanf's Watch, which leaves a mutex locked on
// a file that goes missing.
func WatchFile(ctx context.Context, path string, interval time.Duration, changed func()) {
	last, _ := fileHash(path)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h, err := fileHash(path)
		if err != nil || h == last {
			continue
		}
		last = h
		changed()
	}
}

func fileHash(path string) ([32]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(b), nil
}
