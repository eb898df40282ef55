package gateway

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
)

func TestKeepDataDir(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, old, next string
		warn            bool
	}{
		{"unset in the file", "/data", "", false},
		{"same", "/data", "/data", false},
		{"same, not clean", "/data", "/data/", false},
		{"changed", "/data", "/elsewhere", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			next := &config.Config{DataDir: tt.next}
			keepDataDir(slog.New(slog.NewTextHandler(&logs, nil)), &config.Config{DataDir: tt.old}, next)
			if next.DataDir != tt.old {
				t.Errorf("DataDir = %q, want the one in use %q", next.DataDir, tt.old)
			}
			if got := strings.Contains(logs.String(), "next start"); got != tt.warn {
				t.Errorf("warned = %v, want %v: %s", got, tt.warn, logs.String())
			}
		})
	}
}
