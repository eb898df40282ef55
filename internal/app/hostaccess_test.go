package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
)

// TestInstallRootProblems: config check names a root the gateway cannot
// see and one that is a link into a refused place; a good root passes.
func TestInstallRootProblems(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.Mkdir(good, 0o700); err != nil {
		t.Fatal(err)
	}
	toProc := filepath.Join(dir, "toproc")
	if err := os.Symlink("/proc", toProc); err != nil {
		t.Fatal(err)
	}
	in := config.Install{AllowedBindRoots: []string{good, filepath.Join(dir, "missing")}, AllowedEnvFileRoots: []string{toProc}}
	var got []string
	for _, p := range installRootProblems(in, osHost{}) {
		got = append(got, p.String())
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "install.allowed_bind_roots[1]: ") || !strings.Contains(got[0], "cannot be resolved") ||
		!strings.HasPrefix(got[1], "install.allowed_env_file_roots[0]: ") || !strings.Contains(got[1], "/proc") {
		t.Errorf("problems = %q", got)
	}
	if p := installRootProblems(in, nil); p != nil {
		t.Errorf("without a visible host: %v", p)
	}
}
