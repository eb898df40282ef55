package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The sample configs in the top-level testdata/configs are the README's
// examples: each must load without a problem, and README.md must show each
// one as it is, so the documentation cannot drift from what is tested.
func TestSharedSampleConfigs(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "testdata", "configs", "*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("testdata/configs: %v, %d files", err, len(files))
	}
	env := []string{"API_KEY=k", "DOCS_TOKEN=t"}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Parse(data, env); err != nil {
				t.Errorf("%s does not load: %v", f, err)
			}
			if !strings.Contains(string(readme), "```yaml\n"+string(data)+"```") {
				t.Errorf("README.md does not show %s as a yaml block as it is", f)
			}
		})
	}
}
