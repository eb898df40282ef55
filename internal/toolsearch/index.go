// Package toolsearch ranks the tools behind the front door for a
// natural-language query: BM25 (in memory) over the words of each
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
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

// The indexed fields, in fieldBoosts' order.
const (
	fieldNames = iota
	fieldTitle
	fieldDescription
	fieldParams
	fieldContext
	numFields
)

// Field boosts: a word in a tool's name says more about what it does
// than the same word in a long description.
var fieldBoosts = [numFields]struct {
	field string
	boost float64
}{{"names", 6}, {"title", 4}, {"description", 2}, {"params", 1}, {"context", 1.5}}

// synonymWeight is what a synonym's match counts for beside a query
// word's.
const synonymWeight = 0.5

// Index is an in-memory BM25 index of tool docs. Run builds an immutable
// snapshot per applied catalog; Search reads the current one without a
// lock, so a search never waits for a catalog change and never sees half
// of one.
type Index struct {
	snap   atomic.Pointer[snapshot]
	closed atomic.Bool

	mu        sync.Mutex
	pending   map[string][]Doc // the latest published catalog, not applied yet
	published uint64
	applied   uint64
	appliedCh chan struct{} // closed when applied changes
	wake      chan struct{}

	// servers is, by server, the docs applied last, analyzed; a server
	// whose docs did not change is not analyzed again. Only Run touches it.
	servers map[string]analyzedServer
}

// analyzedServer is one server's docs as terms, field by field.
type analyzedServer struct {
	sig  uint64
	docs []analyzedDoc
}

type analyzedDoc struct {
	callable, server string
	fields           [numFields]analyzedField
}

// analyzedField is one field of a doc: its terms with their counts, in
// first-seen order, and its length in terms.
type analyzedField struct {
	terms  []termCount
	length int
}

type termCount struct {
	term  string
	count int
}

// count turns analyzed terms into an analyzedField.
func count(terms []string) analyzedField {
	af := analyzedField{length: len(terms)}
	for _, t := range terms {
		i := slices.IndexFunc(af.terms, func(tc termCount) bool { return tc.term == t })
		if i < 0 {
			af.terms = append(af.terms, termCount{term: t, count: 1})
		} else {
			af.terms[i].count++
		}
	}
	return af
}

// snapshot is what one applied catalog indexes: for each field, the
// postings of each term and each doc's length in terms.
type snapshot struct {
	docs   []docRef // by doc number; sorted by callable name
	fields [numFields]fieldIndex
}

type docRef struct{ callable, server string }

type fieldIndex struct {
	postings map[string][]posting
	length   []float64 // by doc number, in terms
	avg      float64   // what BM25 divides length by
}

type posting struct {
	doc int32
	tf  float64 // the square root of the term's count, as bleve's BM25 had it
}

// New returns an empty index.
func New() (*Index, error) {
	ix := &Index{appliedCh: make(chan struct{}), wake: make(chan struct{}, 1), servers: map[string]analyzedServer{}}
	ix.snap.Store(&snapshot{})
	return ix, nil
}

// Close releases the index: searches after it fail rather than read a
// catalog nobody keeps current.
func (ix *Index) Close() error {
	ix.closed.Store(true)
	ix.snap.Store(&snapshot{})
	return nil
}

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

// apply brings the index to catalog: only the servers whose docs changed
// are analyzed again, then one new snapshot replaces the old one.
func (ix *Index) apply(_ context.Context, catalog map[string][]Doc) error {
	next := make(map[string]analyzedServer, len(catalog))
	n := 0
	for server, docs := range catalog {
		sig := docsHash(docs)
		if old, ok := ix.servers[server]; ok && old.sig == sig {
			next[server] = old
		} else {
			next[server] = analyzedServer{sig: sig, docs: analyzeDocs(server, docs)}
		}
		n += len(docs)
	}
	ix.servers = next

	// A callable name that moved between servers is indexed once: the
	// server the catalog names last in name order wins, the same every time.
	all := make([]*analyzedDoc, 0, n)
	for _, as := range next {
		for i := range as.docs {
			all = append(all, &as.docs[i])
		}
	}
	slices.SortFunc(all, func(a, b *analyzedDoc) int {
		return cmp.Or(strings.Compare(a.callable, b.callable), strings.Compare(a.server, b.server))
	})
	all = slices.CompactFunc(all, func(a, b *analyzedDoc) bool { return a.callable == b.callable })

	s := &snapshot{docs: make([]docRef, len(all))}
	for f := range s.fields {
		s.fields[f] = fieldIndex{postings: map[string][]posting{}, length: make([]float64, len(all))}
	}
	for d, ad := range all {
		s.docs[d] = docRef{callable: ad.callable, server: ad.server}
		for f, af := range ad.fields {
			fi := &s.fields[f]
			fi.length[d] = float64(af.length)
			for _, tc := range af.terms {
				fi.postings[tc.term] = append(fi.postings[tc.term], posting{doc: int32(d), tf: math.Sqrt(float64(tc.count))})
			}
		}
	}
	// The "average length" is bleve's: the field's distinct terms per
	// doc, rounded up. It is not the mean length, but the labelled set's
	// ranking was tuned with it (recall@1 0.80 against 0.77 with the mean length).
	for f := range s.fields {
		if len(all) > 0 {
			s.fields[f].avg = math.Ceil(float64(len(s.fields[f].postings)) / float64(len(all)))
		}
	}
	ix.snap.Store(s)
	return nil
}

func analyzeDocs(server string, docs []Doc) []analyzedDoc {
	out := make([]analyzedDoc, len(docs))
	for i, d := range docs {
		out[i] = analyzedDoc{callable: d.Callable, server: server}
		out[i].fields[fieldNames] = count(analyze(nameText(d.Callable, d.Tool)))
		out[i].fields[fieldTitle] = count(analyze(d.Title))
		out[i].fields[fieldDescription] = count(analyze(d.Description))
		out[i].fields[fieldParams] = count(analyze(nameText(d.Params...)))
		out[i].fields[fieldContext] = count(analyze(nameText(d.Server) + " " + d.Summary))
	}
	return out
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

// BM25's parameters, as bleve (and Lucene) set them.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// ErrClosed is a search on a closed index.
var ErrClosed = errors.New("toolsearch: index closed")

// Search ranks the docs for q.Text. A query with no meaningful word finds
// nothing.
//
// The score is the one the bleve index computed: a disjunction, over each
// field and each of the two term sets (the query's words, and at
// synonymWeight their synonyms), of the BM25 scores of the set's terms in
// that field times the field's boost; each disjunction's sum is scaled by
// the share of its parts that matched (coordination), so a tool matching
// more of the query ranks above one matching a single word often.
func (ix *Index) Search(_ context.Context, q Query) ([]Hit, error) {
	if ix.closed.Load() {
		return nil, ErrClosed
	}
	words, syns := queryTerms(q.Text)
	if len(words) == 0 || q.Limit <= 0 {
		return nil, nil
	}
	s := ix.snap.Load()
	n := len(s.docs)
	if n == 0 {
		return nil, nil
	}
	type part struct {
		terms  []string
		weight float64
	}
	var parts []part
	for _, set := range []struct {
		words  []string
		weight float64
	}{{words, 1}, {syns, synonymWeight}} {
		if len(set.words) == 0 {
			continue
		}
		terms := analyze(strings.Join(set.words, " "))
		if len(terms) == 0 {
			continue
		}
		for _, f := range fieldBoosts {
			parts = append(parts, part{terms, f.boost * set.weight})
		}
	}
	if len(parts) == 0 {
		return nil, nil
	}

	score := make([]float64, n)
	matchedParts := make([]int32, n)
	partScore := make([]float64, n)
	partTerms := make([]int32, n)
	var touched []int32
	for p, pt := range parts {
		fi := &s.fields[p%numFields]
		touched = touched[:0]
		for _, t := range pt.terms {
			ps := fi.postings[t]
			if len(ps) == 0 {
				continue
			}
			idf := math.Log(1 + (float64(n)-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
			for _, po := range ps {
				norm := 1 - bm25B + bm25B*fi.length[po.doc]/fi.avg
				if partTerms[po.doc] == 0 {
					touched = append(touched, po.doc)
				}
				partScore[po.doc] += idf * po.tf * bm25K1 / (po.tf + bm25K1*norm) * pt.weight
				partTerms[po.doc]++
			}
		}
		for _, d := range touched {
			score[d] += partScore[d] * float64(partTerms[d]) / float64(len(pt.terms))
			matchedParts[d]++
			partScore[d], partTerms[d] = 0, 0
		}
	}
	var ranked []int32
	for d := range score {
		if matchedParts[d] > 0 {
			score[d] *= float64(matchedParts[d]) / float64(len(parts))
			ranked = append(ranked, int32(d))
		}
	}
	// Ties in name order (doc numbers are), the same every time.
	slices.SortFunc(ranked, func(a, b int32) int {
		return cmp.Or(cmp.Compare(score[b], score[a]), cmp.Compare(a, b))
	})
	var hits []Hit
	for _, d := range ranked {
		ref := s.docs[d]
		if (len(q.Servers) > 0 && !slices.Contains(q.Servers, ref.server)) ||
			(q.Allow != nil && !q.Allow(ref.callable, ref.server)) {
			continue
		}
		hits = append(hits, Hit{Callable: ref.callable, Server: ref.server, Score: score[d]})
		if len(hits) == q.Limit {
			break
		}
	}
	return hits, nil
}
