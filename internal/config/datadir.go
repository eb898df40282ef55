package config

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// DataDirEnv overrides data_dir (and is how the image sets /data).
const DataDirEnv = "HANGAR_DATA_DIR"

// checkDataDir is the validation of a data_dir value, "" when fine.
func checkDataDir(dir string) string {
	switch {
	case strings.TrimSpace(dir) == "":
		return "must not be empty"
	case strings.HasPrefix(dir, "~"):
		return fmt.Sprintf("%q starts with ~, which only a shell expands: write the full path", dir)
	case strings.ContainsRune(dir, 0):
		return "must not contain a NUL byte"
	}
	return ""
}

// ResolveDataDir picks the data directory: the --data-dir flag, else
// $HANGAR_DATA_DIR, else data_dir: from the config, else
// $XDG_STATE_HOME/hangar/<instance> ($XDG_STATE_HOME defaults to
// ~/.local/state). The result is absolute.
func ResolveDataDir(flag, fromConfig, instance string) (string, error) {
	for _, c := range []struct{ dir, from string }{
		{flag, "--data-dir"},
		{os.Getenv(DataDirEnv), "$" + DataDirEnv},
		{fromConfig, "data_dir"},
	} {
		if c.dir == "" {
			continue
		}
		if msg := checkDataDir(c.dir); msg != "" {
			return "", fmt.Errorf("%s: %s", c.from, msg)
		}
		abs, err := filepath.Abs(c.dir)
		if err != nil {
			return "", fmt.Errorf("%s: %w", c.from, err)
		}
		return abs, nil
	}
	return DefaultDataDir(instance)
}

// DefaultDataDir is $XDG_STATE_HOME/hangar/<instance>, with
// $XDG_STATE_HOME defaulting to ~/.local/state.
func DefaultDataDir(instance string) (string, error) {
	if instance == "" || instance == "." || instance == ".." || strings.ContainsAny(instance, `/\`) || strings.ContainsRune(instance, 0) {
		return "", fmt.Errorf("instance name %q cannot name a data directory: choose another --instance, or set --data-dir", instance)
	}
	base := os.Getenv("XDG_STATE_HOME")
	// The XDG spec says to ignore a relative value.
	if base == "" || !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return "", errors.New("no data directory: $HOME is not set; set --data-dir, $" + DataDirEnv + " or data_dir:")
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "hangar", instance), nil
}

// KeepDataDir carries the data directory in use into a reloaded config:
// the store stays open where it is, so a changed data_dir takes effect at
// the next start, and says so on log.
func KeepDataDir(log *slog.Logger, old, next *Config) {
	if next.DataDir != "" && old.DataDir != "" {
		if abs, err := filepath.Abs(next.DataDir); err != nil || abs != old.DataDir {
			log.Warn("config reload: data_dir changes take effect at the next start", "in_use", old.DataDir, "configured", next.DataDir)
		}
	}
	next.DataDir = old.DataDir
}
