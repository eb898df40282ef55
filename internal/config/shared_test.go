package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docsRoot is the repository root, seen from this package.
var docsRoot = filepath.Join("..", "..")

// docsPages are README.md and docs/*.md: where config samples are shown.
func docsPages(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(docsRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(docsRoot, "README.md"))
	pages := make(map[string]string, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(docsRoot, f)
		pages[filepath.ToSlash(rel)] = string(b)
	}
	return pages
}

// The sample configs in the top-level testdata/configs are the docs'
// examples: each must load without a problem, and the README or a page of
// docs/ must show each one as it is, so the documentation cannot drift
// from what is tested.
func TestSharedSampleConfigs(t *testing.T) {
	t.Parallel()
	pages := docsPages(t)
	files, err := filepath.Glob(filepath.Join(docsRoot, "testdata", "configs", "*.yaml"))
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
			for _, page := range pages {
				if strings.Contains(page, "```yaml\n"+string(data)+"```") {
					return
				}
			}
			t.Errorf("neither README.md nor a page of docs/ shows %s as a yaml block as it is", f)
		})
	}
}

var (
	// A fenced block and its info string. "```yaml" is a hangar config;
	// another YAML file (a compose file's part) says what it is after the
	// language, "```yaml compose", which renders the same.
	fencedBlock = regexp.MustCompile("(?ms)^```([^\\n`]*)\\n(.*?)^```")
	// ${VAR} and ${VAR:-default} references of a sample.
	envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)`)
)

// TestDocsConfigBlocks: every ```yaml block of README.md and docs/*.md is a
// config the loader takes as it is written there (its ${VAR} references
// set), with no problem; the other YAML blocks (```yaml compose) are YAML.
func TestDocsConfigBlocks(t *testing.T) {
	t.Parallel()
	n := 0
	for name, page := range docsPages(t) {
		for _, m := range fencedBlock.FindAllStringSubmatchIndex(page, -1) {
			info, block := page[m[2]:m[3]], page[m[4]:m[5]]
			lang, kind, _ := strings.Cut(strings.TrimSpace(info), " ")
			if lang != "yaml" && lang != "yml" {
				continue
			}
			line := strings.Count(page[:m[0]], "\n") + 1
			if kind != "" {
				if _, err := (yamlParser{label: name}).Unmarshal([]byte(block)); err != nil {
					t.Errorf("%s:%d: the %s block is not YAML: %v", name, line, kind, err)
				}
				continue
			}
			var env []string
			for _, ref := range envRef.FindAllStringSubmatch(block, -1) {
				env = append(env, ref[1]+"=x")
			}
			if _, err := Parse([]byte(block), env); err != nil {
				t.Errorf("%s:%d: the yaml block does not load (a block that is not a hangar config says what it is: ```yaml compose): %v\n%s", name, line, err, block)
			}
			n++
		}
	}
	if n < 10 {
		t.Errorf("only %d config blocks found in the docs", n)
	}
}
