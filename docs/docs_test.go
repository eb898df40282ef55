// The documentation's own checks: the README stays a front door (short,
// linking every page), and no relative link of the README, the pages here
// or the examples' READMEs leads nowhere, #anchors included. The YAML
// config samples are checked by the config loader's package
// (internal/config, TestDocsConfigBlocks).
package docs_test

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

const root = ".."

// readmeMaxLines keeps the README readable in five minutes: what hangar
// is, the quick start and links; everything else is a page here.
const readmeMaxLines = 250

func TestREADMEIsShort(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, at most %d: move the detail to a page under docs/ and link it", n, readmeMaxLines)
	}
}

// TestREADMELinksEveryPage: each page here is reachable from the README.
func TestREADMELinksEveryPage(t *testing.T) {
	t.Parallel()
	readme := parse(t, "README.md")
	linked := map[string]bool{}
	for _, l := range readme.links {
		file, _, _ := strings.Cut(l.target, "#")
		linked[path.Clean(file)] = true
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		rel := "docs/" + filepath.Base(p)
		if !linked[rel] {
			t.Errorf("README.md does not link %s", rel)
		}
	}
}

// TestRelativeLinks: every relative link of README.md, docs/*.md and
// examples/**/README.md names a file or directory of the repository, and
// an #anchor names a heading (or an id) of the page it points into.
func TestRelativeLinks(t *testing.T) {
	t.Parallel()
	files := []string{"README.md"}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		files = append(files, "docs/"+filepath.Base(p))
	}
	err = filepath.WalkDir(filepath.Join(root, "examples"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return filepath.SkipAll
			}
			return err
		}
		if !d.IsDir() && d.Name() == "README.md" {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]*doc{}
	load := func(name string) *doc {
		if d, ok := docs[name]; ok {
			return d
		}
		d := parse(t, name)
		docs[name] = d
		return d
	}
	for _, name := range files {
		for _, l := range load(name).links {
			if msg := check(name, l.target, load); msg != "" {
				t.Errorf("%s:%d: link %q: %s", name, l.line, l.target, msg)
			}
		}
	}
}

// check says what is wrong with a relative link target of the page from,
// or "" when it resolves.
func check(from, target string, load func(string) *doc) string {
	file, anchor, hasAnchor := strings.Cut(target, "#")
	dest := from
	if file != "" {
		dest = path.Join(path.Dir(from), file)
		if dest == ".." || strings.HasPrefix(dest, "../") {
			return "leads out of the repository"
		}
		fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest)))
		if err != nil {
			return fmt.Sprintf("%s does not exist", dest)
		}
		if fi.IsDir() {
			if hasAnchor {
				return "an anchor on a directory"
			}
			return ""
		}
	}
	if !hasAnchor {
		return ""
	}
	if !strings.HasSuffix(dest, ".md") {
		return "" // a line anchor of a source file (#L10) is GitHub's
	}
	if !load(dest).anchors[anchor] {
		return fmt.Sprintf("%s has no heading or id for #%s", dest, anchor)
	}
	return ""
}

type link struct {
	target string
	line   int
}

type doc struct {
	links   []link
	anchors map[string]bool
}

var (
	fence = regexp.MustCompile("^\\s*(```|~~~)")
	// An inline link or image, [text](target) or [text](target "title");
	// the text may hold code and brackets one level deep.
	inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	heading    = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlID     = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// parse reads a markdown file of the repository (a slash path from the
// root): its relative links outside code, and the anchors GitHub gives it.
func parse(t *testing.T, name string) *doc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return parseText(string(b))
}

func parseText(text string) *doc {
	d := &doc{anchors: map[string]bool{}}
	seen := map[string]int{}
	inFence := false
	for i, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			d.anchors[m[1]] = true
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := slug(m[2])
			if n := seen[s]; n > 0 {
				d.anchors[fmt.Sprintf("%s-%d", s, n)] = true
			} else {
				d.anchors[s] = true
			}
			seen[s]++
		}
		text := codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
			if scheme.MatchString(m[1]) {
				continue
			}
			d.links = append(d.links, link{target: m[1], line: i + 1})
		}
	}
	return d
}

// slug is GitHub's anchor for a heading: link targets and markup dropped,
// lower case, punctuation other than '-' and '_' removed, spaces made '-'.
func slug(h string) string {
	h = inlineLink.ReplaceAllStringFunc(h, func(s string) string {
		open, close := strings.Index(s, "["), strings.LastIndex(s, "](")
		return s[open+1 : close]
	})
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	t.Parallel()
	for h, want := range map[string]string{
		"Host names (DNS rebinding)":                        "host-names-dns-rebinding",
		"Finding tools (`front_door: {discovery: search}`)": "finding-tools-front_door-discovery-search",
		"npm and PyPI servers (package runtimes)":           "npm-and-pypi-servers-package-runtimes",
		"Per-user credentials (`upstream_auth`)":            "per-user-credentials-upstream_auth",
		"What [the README](../README.md) says":              "what-the-readme-says",
		"Tokens, scopes & errors":                           "tokens-scopes--errors",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}

// TestParse: links in code are not links; headings give anchors, repeated
// ones numbered; an <a id> is an anchor too.
func TestParse(t *testing.T) {
	t.Parallel()
	d := parseText("# Top\n\nSee [a](a.md#x), ![i](img.png) and `[c](code.md)`.\n" +
		"```\n[f](fenced.md)\n# Not a heading\n```\n" +
		"## Top\n<a id=\"here\"></a>[web](https://example.com) [m](mailto:x@example.com)\n")
	var targets []string
	for _, l := range d.links {
		targets = append(targets, l.target)
	}
	if want := []string{"a.md#x", "img.png"}; !slices.Equal(targets, want) {
		t.Errorf("links %v, want %v", targets, want)
	}
	for _, a := range []string{"top", "top-1", "here"} {
		if !d.anchors[a] {
			t.Errorf("no anchor %q in %v", a, d.anchors)
		}
	}
	if d.anchors["not-a-heading"] {
		t.Error("a heading in a fenced block made an anchor")
	}
}
