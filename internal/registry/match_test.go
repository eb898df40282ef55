package registry

import (
	"slices"
	"testing"
)

func entry(name string) Entry { return Entry{Server: ServerJSON{Name: name}, Source: SourceRegistry} }

func official(name, status string, latest bool, version string) Entry {
	e := entry(name)
	e.Server.Version = version
	e.Official = &Official{Status: status, IsLatest: latest}
	return e
}

func TestMatch(t *testing.T) {
	t.Parallel()
	fs := entry("io.github.x/filesystem")
	tests := []struct {
		name    string
		entries []Entry
		query   string
		want    string // matched name, or ""
		status  string
		matches []string
		version string
	}{
		{"exact full name", []Entry{entry("io.github.y/filesystem"), fs}, "io.github.x/filesystem", "io.github.x/filesystem", "", nil, ""},
		{"full name other case", []Entry{fs}, "IO.GitHub.X/FileSystem", "io.github.x/filesystem", "", nil, ""},
		{"unique last segment", []Entry{fs, entry("io.github.x/filesystem-extra")}, "filesystem", "io.github.x/filesystem", "", nil, ""},
		{"last segment any case", []Entry{fs}, "FILESYSTEM", "io.github.x/filesystem", "", nil, ""},
		{"exact name beats segments", []Entry{entry("a/tool"), entry("tool"), entry("b/tool")}, "tool", "tool", "", nil, ""},
		{"several segments", []Entry{entry("io.github.b/fs"), entry("io.github.a/fs")}, "fs", "", StatusAmbiguous,
			[]string{"io.github.a/fs", "io.github.b/fs"}, ""},
		{"none", []Entry{entry("io.github.x/filesystem-extra")}, "filesystem", "", StatusNotFound, nil, ""},
		{"empty search", nil, "filesystem", "", StatusNotFound, nil, ""},
		{"a full name does not match by segment", []Entry{entry("io.github.x/fs")}, "io.github.y/fs", "", StatusNotFound, nil, ""},
		{"versions count once, latest kept", []Entry{
			official("io.github.x/fs", StatusActive, false, "1.0"), official("io.github.x/fs", StatusActive, true, "2.0"),
			official("io.github.x/fs", StatusActive, false, "0.9"),
		}, "fs", "io.github.x/fs", "", nil, "2.0"},
		{"deleted ignored", []Entry{official("io.github.a/fs", StatusDeleted, true, "1"), entry("io.github.b/fs")}, "fs", "io.github.b/fs", "", nil, ""},
		{"whitespace trimmed", []Entry{fs}, "  filesystem ", "io.github.x/filesystem", "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, out := Match(tt.entries, tt.query)
			if out.Status != tt.status {
				t.Fatalf("status = %q (%s), want %q", out.Status, out.Message, tt.status)
			}
			if e.Server.Name != tt.want {
				t.Errorf("matched %q, want %q", e.Server.Name, tt.want)
			}
			if !slices.Equal(out.Matches, tt.matches) {
				t.Errorf("matches = %v, want %v", out.Matches, tt.matches)
			}
			if tt.version != "" && e.Server.Version != tt.version {
				t.Errorf("version = %q, want %q", e.Server.Version, tt.version)
			}
			if tt.status != "" && out.Message == "" {
				t.Error("no message")
			}
		})
	}
}
