package toolsearch

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The labelled set: testdata/servers/<server>.txt holds one real MCP
// server's published tools ("name | description | param,param"), with the
// repository it was taken from in its "# source:" line;
// testdata/queries.txt holds natural-language queries with the callable
// names that answer them.

type labelled struct {
	query  string
	expect []string
}

// loadCatalog reads testdata/servers into a catalog keyed by server, with
// callable names as the front door's prefixed naming makes them.
func loadCatalog(t testing.TB) (map[string][]Doc, int) {
	t.Helper()
	files, err := filepath.Glob("testdata/servers/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no server files: %v", err)
	}
	catalog := map[string][]Doc{}
	total := 0
	for _, f := range files {
		server := strings.TrimSuffix(filepath.Base(f), ".txt")
		summary, source := "", ""
		for i, line := range readLines(t, f) {
			if rest, ok := strings.CutPrefix(line, "# source:"); ok {
				source = strings.TrimSpace(rest)
				continue
			}
			if rest, ok := strings.CutPrefix(line, "# summary:"); ok {
				summary = strings.TrimSpace(rest)
				continue
			}
			if strings.HasPrefix(line, "#") {
				continue
			}
			name, rest, ok := strings.Cut(line, "|")
			cut := strings.LastIndex(rest, "|")
			if !ok || cut < 0 {
				t.Fatalf("%s:%d: want name | description | params, got %q", f, i+1, line)
			}
			name = strings.TrimSpace(name)
			d := Doc{Callable: server + "__" + name, Server: server, Tool: name, Description: strings.TrimSpace(rest[:cut]), Summary: summary}
			for _, p := range strings.Split(rest[cut+1:], ",") {
				if p = strings.TrimSpace(p); p != "" {
					d.Params = append(d.Params, p)
				}
			}
			catalog[server] = append(catalog[server], d)
			total++
		}
		if source == "" {
			t.Fatalf("%s: no # source: line naming where the tools come from", f)
		}
	}
	return catalog, total
}

func loadQueries(t testing.TB, catalog map[string][]Doc) []labelled {
	t.Helper()
	known := map[string]bool{}
	for _, docs := range catalog {
		for _, d := range docs {
			known[d.Callable] = true
		}
	}
	var out []labelled
	for i, line := range readLines(t, "testdata/queries.txt") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		q, names, ok := strings.Cut(line, " | ")
		if !ok {
			t.Fatalf("queries.txt:%d: want query | names, got %q", i+1, line)
		}
		l := labelled{query: q}
		for _, n := range strings.Split(names, ",") {
			n = strings.TrimSpace(n)
			if !known[n] {
				t.Fatalf("queries.txt:%d: %q is no tool of the catalog", i+1, n)
			}
			l.expect = append(l.expect, n)
		}
		out = append(out, l)
	}
	return out
}

func readLines(t testing.TB, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// loaded returns an index holding the labelled catalog.
func loaded(t testing.TB) (*Index, map[string][]Doc, int) {
	t.Helper()
	catalog, total := loadCatalog(t)
	ix, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	ctx := t.Context()
	go ix.Run(ctx)
	if err := ix.WaitApplied(ctx, ix.Publish(catalog)); err != nil {
		t.Fatal(err)
	}
	return ix, catalog, total
}

// TestQuality measures recall@1, recall@5 and MRR (over the first 10) on
// the labelled set, and holds recall@5 to 0.9.
func TestQuality(t *testing.T) {
	t.Parallel()
	ix, catalog, total := loaded(t)
	queries := loadQueries(t, catalog)
	if total < 600 || len(queries) < 150 {
		t.Fatalf("labelled set too small: %d tools, %d queries (want 600 and 150)", total, len(queries))
	}
	var at1, at5, rr float64
	for _, l := range queries {
		hits, err := ix.Search(t.Context(), Query{Text: l.query, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		rank := 0
		for i, h := range hits {
			if slices.Contains(l.expect, h.Callable) {
				rank = i + 1
				break
			}
		}
		switch {
		case rank == 1:
			at1++
			fallthrough
		case rank >= 1 && rank <= 5:
			at5++
		}
		if rank > 0 {
			rr += 1 / float64(rank)
		}
		if rank == 0 || rank > 5 {
			var got []string
			for _, h := range hits[:min(5, len(hits))] {
				got = append(got, h.Callable)
			}
			t.Logf("miss (rank %d): %q want %v got %v", rank, l.query, l.expect, got)
		}
	}
	n := float64(len(queries))
	t.Logf("labelled set: %d servers, %d tools, %d queries", len(catalog), total, len(queries))
	t.Logf("recall@1 %.3f  recall@5 %.3f  MRR@10 %.3f", at1/n, at5/n, rr/n)
	if at5/n < 0.9 {
		t.Errorf("recall@5 %.3f, want at least 0.9", at5/n)
	}
}
