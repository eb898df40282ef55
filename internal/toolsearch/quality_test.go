package toolsearch

import (
	"slices"
	"testing"

	"github.com/mcp-hangar/hangar/internal/toolsearch/labelled"
)

// The labelled set: testdata/servers/<server>.txt holds one real MCP
// server's published tools ("name | description | param,param"), with the
// repository it was taken from in its "# source:" line;
// testdata/queries.txt holds natural-language queries with the callable
// names that answer them.

// loadCatalog reads testdata/servers into a catalog keyed by server, with
// callable names as the front door's prefixed naming makes them.
func loadCatalog(t testing.TB) (map[string][]Doc, int) {
	t.Helper()
	servers, err := labelled.Servers("testdata/servers")
	if err != nil {
		t.Fatal(err)
	}
	catalog := map[string][]Doc{}
	total := 0
	for _, s := range servers {
		for _, tool := range s.Tools {
			catalog[s.ID] = append(catalog[s.ID], Doc{Callable: s.ID + "__" + tool.Name, Server: s.ID, Tool: tool.Name,
				Description: tool.Description, Summary: s.Summary, Params: tool.Params})
			total++
		}
	}
	return catalog, total
}

// loadQueries reads the labelled queries, each naming only tools of the
// catalog.
func loadQueries(t testing.TB, catalog map[string][]Doc) []labelled.Query {
	t.Helper()
	known := map[string]bool{}
	for _, docs := range catalog {
		for _, d := range docs {
			known[d.Callable] = true
		}
	}
	queries, err := labelled.Queries("testdata/queries.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		for _, n := range q.Expect {
			if !known[n] {
				t.Fatalf("queries.txt: %q (for %q) is no tool of the catalog", n, q.Text)
			}
		}
	}
	return queries
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
		hits, err := ix.Search(t.Context(), Query{Text: l.Text, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		rank := 0
		for i, h := range hits {
			if slices.Contains(l.Expect, h.Callable) {
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
			t.Logf("miss (rank %d): %q want %v got %v", rank, l.Text, l.Expect, got)
		}
	}
	n := float64(len(queries))
	t.Logf("labelled set: %d servers, %d tools, %d queries", len(catalog), total, len(queries))
	t.Logf("recall@1 %.3f  recall@5 %.3f  MRR@10 %.3f", at1/n, at5/n, rr/n)
	if at5/n < 0.9 {
		t.Errorf("recall@5 %.3f, want at least 0.9", at5/n)
	}
}
