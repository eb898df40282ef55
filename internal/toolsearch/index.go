// Package toolsearch ranks the tools behind the front door for a
// natural-language query: BM25 (bleve, in memory) over the words of each
// tool's callable and raw names, its title, description and parameter
// names, and its server's ID and summary, with English stemming.
//
// The index is kept off the request path: the front door publishes the
// whole catalog (a cheap map hand-over) whenever it changes, and Run
// applies what changed, rewriting only the servers whose tools changed,
// in one batch. Searches read a snapshot and never wait for a batch, and
// a list or a call never touches the index at all.
package toolsearch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
)

// Doc is one callable tool as the index knows it.
type Doc struct {
	Callable    string // the name agents call
	Server      string // the provider or group it runs on
	Tool        string // the raw name on that server
	Title       string
	Description string
	Params      []string // parameter names of its input schema
	// Summary is the server's one line (config summary: or derived); it
	// is the same for every Doc of a server.
	Summary string
}

// Hit is one ranked match.
type Hit struct {
	Callable, Server string
	// Score is BM25 relevance: higher is better, comparable only within
	// one search.
	Score float64
}

// Query is one search.
type Query struct {
	Text  string
	Limit int
	// Servers, when not empty, keeps hits on these servers only.
	Servers []string
	// Allow, when set, keeps only the hits it accepts (the caller's view:
	// scopes, token servers, policy). It runs in rank order until Limit
	// hits are kept.
	Allow func(callable, server string) bool
}

// Field boosts: a word in a tool's name says more about what it does
// than the same word in a long description.
var fieldBoosts = []struct {
	field string
	boost float64
}{{"names", 6}, {"title", 4}, {"description", 2}, {"params", 1}, {"context", 1.5}}

// synonymWeight is what a synonym's match counts for beside a query
// word's.
const synonymWeight = 0.5

// Index is an in-memory BM25 index of tool docs.
type Index struct {
	idx bleve.Index
	// serverOf maps each indexed callable name to its server; swapped
	// whole after each batch.
	serverOf atomic.Pointer[map[string]string]

	mu        sync.Mutex
	pending   map[string][]Doc // the latest published catalog, not applied yet
	published uint64
	applied   uint64
	appliedCh chan struct{} // closed when applied changes
	wake      chan struct{}

	// sigs is, by server, a hash of the docs applied, and ids their doc
	// IDs (callable names); only Run touches them.
	sigs map[string]uint64
	ids  map[string][]string
}

// New returns an empty index.
func New() (*Index, error) {
	m := bleve.NewIndexMapping()
	m.ScoringModel = "bm25"
	text := bleve.NewTextFieldMapping()
	text.Analyzer = en.AnalyzerName
	text.Store, text.IncludeTermVectors, text.DocValues = false, false, false
	doc := bleve.NewDocumentStaticMapping()
	for _, f := range fieldBoosts {
		doc.AddFieldMappingsAt(f.field, text)
	}
	m.DefaultMapping = doc
	// An empty path keeps scorch in memory.
	idx, err := bleve.NewUsing("", m, scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, fmt.Errorf("toolsearch: create index: %w", err)
	}
	ix := &Index{idx: idx, appliedCh: make(chan struct{}), wake: make(chan struct{}, 1), sigs: map[string]uint64{}, ids: map[string][]string{}}
	ix.serverOf.Store(&map[string]string{})
	return ix, nil
}

// Close releases the index.
func (ix *Index) Close() error { return ix.idx.Close() }

// Publish hands the whole catalog (server → docs) to the index and
// returns its generation; Run applies it. It does no I/O. The caller must
// not change catalog afterwards.
func (ix *Index) Publish(catalog map[string][]Doc) uint64 {
	ix.mu.Lock()
	ix.pending = catalog
	ix.published++
	gen := ix.published
	ix.mu.Unlock()
	select {
	case ix.wake <- struct{}{}:
	default:
	}
	return gen
}

// Published is the generation of the catalog published last.
func (ix *Index) Published() uint64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.published
}

// Applied is the generation of the catalog the index holds.
func (ix *Index) Applied() uint64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.applied
}

// WaitApplied waits until the catalog of generation gen (or a later one)
// is applied.
func (ix *Index) WaitApplied(ctx context.Context, gen uint64) error {
	for {
		ix.mu.Lock()
		done, ch := ix.applied >= gen, ix.appliedCh
		ix.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Run applies published catalogs until ctx ends. Catalogs published while
// one is applied are coalesced: only the latest is applied next.
func (ix *Index) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ix.wake:
		}
		ix.mu.Lock()
		catalog, gen := ix.pending, ix.published
		ix.pending = nil
		ix.mu.Unlock()
		if catalog == nil {
			continue
		}
		// A failed server is retried with the next catalog: its hash is
		// not recorded.
		_ = ix.apply(ctx, catalog)
		ix.mu.Lock()
		if gen > ix.applied {
			ix.applied = gen
		}
		close(ix.appliedCh)
		ix.appliedCh = make(chan struct{})
		ix.mu.Unlock()
	}
}

// apply brings the index to catalog in one batch, rewriting only the
// servers whose docs changed: their old docs are deleted first, so a
// callable name that moved to another server is indexed once.
func (ix *Index) apply(_ context.Context, catalog map[string][]Doc) error {
	batch := ix.idx.NewBatch()
	sigs := map[string]uint64{}
	var changed []string
	for server, docs := range catalog {
		sig := docsHash(docs)
		sigs[server] = sig
		if old, ok := ix.sigs[server]; !ok || old != sig {
			changed = append(changed, server)
		}
	}
	for server := range ix.sigs {
		if _, ok := catalog[server]; !ok {
			changed = append(changed, server)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	for _, server := range changed {
		for _, id := range ix.ids[server] {
			batch.Delete(id)
		}
	}
	var errs []error
	for _, server := range changed {
		for _, d := range catalog[server] {
			err := batch.Index(d.Callable, map[string]any{
				"names":       nameText(d.Callable, d.Tool),
				"title":       d.Title,
				"description": d.Description,
				"params":      nameText(d.Params...),
				"context":     nameText(d.Server) + " " + d.Summary,
			})
			if err != nil {
				errs = append(errs, fmt.Errorf("toolsearch: %s: %w", d.Callable, err))
			}
		}
	}
	if err := ix.idx.Batch(batch); err != nil {
		// Nothing was applied: the next catalog tries every change again.
		return fmt.Errorf("toolsearch: apply: %w", err)
	}
	serverOf := make(map[string]string, len(*ix.serverOf.Load()))
	ids := make(map[string][]string, len(catalog))
	for server, docs := range catalog {
		for _, d := range docs {
			serverOf[d.Callable] = server
			ids[server] = append(ids[server], d.Callable)
		}
	}
	ix.serverOf.Store(&serverOf)
	ix.ids, ix.sigs = ids, sigs
	return errors.Join(errs...)
}

func docsHash(docs []Doc) uint64 {
	h := fnv.New64a()
	for _, d := range docs {
		for _, s := range []string{d.Callable, d.Server, d.Tool, d.Title, d.Description, d.Summary} {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
		for _, p := range d.Params {
			h.Write([]byte(p))
			h.Write([]byte{1})
		}
		h.Write([]byte{2})
	}
	return h.Sum64()
}

// candidates is how many hits a search ranks at first: enough for any
// limit after the caller's view drops some; Search ranks all the matches
// when it is not.
const candidates = 300

// Search ranks the docs for q.Text. A query with no meaningful word finds
// nothing.
func (ix *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	words, syns := queryTerms(q.Text)
	if len(words) == 0 || q.Limit <= 0 {
		return nil, nil
	}
	var parts []query.Query
	add := func(terms []string, weight float64) {
		if len(terms) == 0 {
			return
		}
		text := strings.Join(terms, " ")
		for _, f := range fieldBoosts {
			m := bleve.NewMatchQuery(text)
			m.SetField(f.field)
			m.SetBoost(f.boost * weight)
			parts = append(parts, m)
		}
	}
	add(words, 1)
	add(syns, synonymWeight)
	serverOf := *ix.serverOf.Load()
	for size := candidates; ; {
		req := bleve.NewSearchRequestOptions(bleve.NewDisjunctionQuery(parts...), size, 0, false)
		res, err := ix.idx.SearchInContext(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("toolsearch: search: %w", err)
		}
		// Ties in name order, the same every time.
		slices.SortStableFunc(res.Hits, func(a, b *search.DocumentMatch) int {
			if c := cmp.Compare(b.Score, a.Score); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
		var hits []Hit
		for _, h := range res.Hits {
			server := serverOf[h.ID]
			if server == "" || (len(q.Servers) > 0 && !slices.Contains(q.Servers, server)) ||
				(q.Allow != nil && !q.Allow(h.ID, server)) {
				continue
			}
			hits = append(hits, Hit{Callable: h.ID, Server: server, Score: h.Score})
			if len(hits) == q.Limit {
				break
			}
		}
		if len(hits) == q.Limit || uint64(size) >= res.Total {
			return hits, nil
		}
		// The caller's view dropped too many of the best: rank them all.
		size = int(res.Total)
	}
}
