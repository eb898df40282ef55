package clientconfig

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
)

// The client config files in the top-level testdata/import are what
// `hangar import` is shown with in docs/management.md: Claude Desktop's
// "mcpServers" and VS Code's "servers" both map to servers.
func TestSharedImportFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file, rootKey string
		names         []string
		// mapped: the servers that map without an error, and their mode
		// (uvx needs no runtimes: entry: its package runs from an image).
		mapped map[string]string
	}{
		{"claude_desktop_config.json", "mcpServers", []string{"calc", "fetch"},
			map[string]string{"calc": config.ModeDocker, "fetch": config.ModeDocker}},
		{"vscode_mcp.json", "servers", []string{"calc", "docs"},
			map[string]string{"calc": config.ModeDocker, "docs": config.ModeRemote}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "import", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			names, entries, rootKey, err := Parse(string(data))
			if err != nil || rootKey != tc.rootKey || !slices.Equal(names, tc.names) {
				t.Fatalf("Parse = %v %q %v, want %v %q", names, rootKey, err, tc.names, tc.rootKey)
			}
			for _, name := range names {
				field := rootKey + "." + name
				e, diags := DecodeEntry(field, entries[name])
				if diags.HasError() {
					t.Fatalf("%s: %v", field, diags)
				}
				s, diags := Map(name, e, field, Options{})
				want, ok := tc.mapped[name]
				switch {
				case ok && (s == nil || s.Mode != want):
					t.Errorf("%s: mapped to %+v (%v), want mode %s", field, s, diags, want)
				case !ok && s != nil:
					t.Errorf("%s: mapped to %+v, want a refusal without a runtime for it", field, s)
				}
			}
		})
	}
}
