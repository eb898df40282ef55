package config

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
)

// Not parallel: it sets the process environment.
func TestResolveDataDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	cwd, _ := filepath.Abs(".")
	tests := []struct {
		name                   string
		env, xdg               string
		flag, fromConfig, inst string
		want, wantErr          string
	}{
		{name: "flag wins", env: "/env", flag: "/flag", fromConfig: "/cfg", inst: "i", want: "/flag"},
		{name: "env over config", env: "/env", fromConfig: "/cfg", inst: "i", want: "/env"},
		{name: "config over default", fromConfig: "/cfg", inst: "i", want: "/cfg"},
		{name: "relative made absolute", flag: "state", inst: "i", want: filepath.Join(cwd, "state")},
		{name: "XDG default", xdg: "/xdg", inst: "compose", want: "/xdg/hangar/compose"},
		{name: "relative XDG ignored", xdg: "rel", inst: "default", want: filepath.Join(home, ".local/state/hangar/default")},
		{name: "home default", inst: "default", want: filepath.Join(home, ".local/state/hangar/default")},
		{name: "tilde flag", flag: "~/x", inst: "i", wantErr: "--data-dir: \"~/x\" starts with ~"},
		{name: "tilde env", env: "~/x", inst: "i", wantErr: "$HANGAR_DATA_DIR: \"~/x\" starts with ~"},
		{name: "instance with a slash", inst: "a/b", wantErr: `instance name "a/b" cannot name a data directory`},
		{name: "instance dot-dot", inst: "..", wantErr: "cannot name a data directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(DataDirEnv, tt.env)
			t.Setenv("XDG_STATE_HOME", tt.xdg)
			got, err := ResolveDataDir(tt.flag, tt.fromConfig, tt.inst)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ResolveDataDir = %q, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ResolveDataDir = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

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
			next := &Config{DataDir: tt.next}
			KeepDataDir(slog.New(slog.NewTextHandler(&logs, nil)), &Config{DataDir: tt.old}, next)
			if next.DataDir != tt.old {
				t.Errorf("DataDir = %q, want the one in use %q", next.DataDir, tt.old)
			}
			if got := strings.Contains(logs.String(), "next start"); got != tt.warn {
				t.Errorf("warned = %v, want %v: %s", got, tt.warn, logs.String())
			}
		})
	}
}
