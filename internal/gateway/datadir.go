package gateway

import (
	"log/slog"
	"path/filepath"

	"github.com/mcp-hangar/hangar/internal/config"
)

// keepDataDir carries the data directory in use into a reloaded config:
// the store stays open where it is, so a changed data_dir takes effect at
// the next start, and says so.
func keepDataDir(log *slog.Logger, old, next *config.Config) {
	if next.DataDir != "" && old.DataDir != "" {
		if abs, err := filepath.Abs(next.DataDir); err != nil || abs != old.DataDir {
			log.Warn("config reload: data_dir changes take effect at the next start", "in_use", old.DataDir, "configured", next.DataDir)
		}
	}
	next.DataDir = old.DataDir
}
