// Package toolsearch ranks the tools behind the front door for a
// natural-language query: SQLite FTS5 (BM25, porter stemming) over the
// words of each tool's callable and raw names, its title, description and
// parameter names, and its server's ID and summary.
//
// The index is kept off the request path: the front door publishes the
// whole catalog (a cheap map hand-over) whenever it changes, and Run
// applies what changed, server by server, each in its own short
// transaction. A search never waits for more than one server's update,
// and a list or a call never touches the index at all.
package toolsearch

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"

	_ "modernc.org/sqlite" // the "sqlite" driver, with FTS5
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

// Column weights of bm25(): a word in a tool's name says more about what
// it does than the same word in a long description.
const (
	weightNames   = 6.0
	weightTitle   = 4.0
	weightDesc    = 2.0
	weightParams  = 1.0
	weightContext = 1.5 // server ID and summary
)

const schema = `CREATE VIRTUAL TABLE docs USING fts5(
	callable UNINDEXED, server UNINDEXED,
	names, title, description, params, context,
	tokenize = 'porter unicode61 remove_diacritics 2')`

// Index is an in-memory FTS5 index of tool docs.
type Index struct {
	// db has one connection: an in-memory SQLite database lives in its
	// connection, and one connection also makes writes and reads take
	// turns without SQLITE_BUSY.
	db *sql.DB

	mu        sync.Mutex
	pending   map[string][]Doc // the latest published catalog, not applied yet
	published uint64
	applied   uint64
	appliedCh chan struct{} // closed when applied changes
	wake      chan struct{}

	// sigs is, by server, a hash of the docs applied, and rows their
	// rowids (deleting by an UNINDEXED column would scan every doc); only
	// Run touches them.
	sigs map[string]uint64
	rows map[string][]int64
}

// New returns an empty index.
func New() (*Index, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, fmt.Errorf("toolsearch: open: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	if _, err := db.Exec(schema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("toolsearch: create index: %w", err)
	}
	return &Index{db: db, appliedCh: make(chan struct{}), wake: make(chan struct{}, 1), sigs: map[string]uint64{}, rows: map[string][]int64{}}, nil
}

// Close releases the index.
func (ix *Index) Close() error { return ix.db.Close() }

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

// apply brings the index to catalog, rewriting only the servers whose
// docs changed.
func (ix *Index) apply(ctx context.Context, catalog map[string][]Doc) error {
	var errs []error
	for server, docs := range catalog {
		sig := docsHash(docs)
		if old, ok := ix.sigs[server]; ok && old == sig {
			continue
		}
		if err := ix.replace(ctx, server, docs); err != nil {
			delete(ix.sigs, server)
			errs = append(errs, err)
			continue
		}
		ix.sigs[server] = sig
	}
	for server := range ix.sigs {
		if _, ok := catalog[server]; ok {
			continue
		}
		if err := ix.replace(ctx, server, nil); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(ix.sigs, server)
	}
	return errors.Join(errs...)
}

// replace swaps server's docs in one transaction.
func (ix *Index) replace(ctx context.Context, server string, docs []Doc) error {
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("toolsearch: %s: %w", server, err)
	}
	defer func() { _ = tx.Rollback() }()
	if old := ix.rows[server]; len(old) > 0 {
		del, err := tx.PrepareContext(ctx, `DELETE FROM docs WHERE rowid = ?`)
		if err != nil {
			return fmt.Errorf("toolsearch: %s: %w", server, err)
		}
		defer del.Close()
		for _, id := range old {
			if _, err := del.ExecContext(ctx, id); err != nil {
				return fmt.Errorf("toolsearch: %s: %w", server, err)
			}
		}
	}
	var ids []int64
	if len(docs) > 0 {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO docs(callable, server, names, title, description, params, context) VALUES (?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return fmt.Errorf("toolsearch: %s: %w", server, err)
		}
		defer ins.Close()
		for _, d := range docs {
			params := nameText(d.Params...)
			origin := nameText(d.Server) + " " + d.Summary
			res, err := ins.ExecContext(ctx, d.Callable, d.Server, nameText(d.Callable, d.Tool), d.Title, d.Description, params, origin)
			if err != nil {
				return fmt.Errorf("toolsearch: %s: %w", server, err)
			}
			id, err := res.LastInsertId()
			if err != nil {
				return fmt.Errorf("toolsearch: %s: %w", server, err)
			}
			ids = append(ids, id)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("toolsearch: %s: %w", server, err)
	}
	if len(ids) > 0 {
		ix.rows[server] = ids
	} else {
		delete(ix.rows, server)
	}
	return nil
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

// rankSQL ranks every matching doc; servers, a JSON list, narrows it when
// not null.
var rankSQL = fmt.Sprintf(`SELECT callable, server, bm25(docs, 0, 0, %g, %g, %g, %g, %g)
	FROM docs WHERE docs MATCH ?1 AND (?2 IS NULL OR server IN (SELECT value FROM json_each(?2)))`,
	weightNames, weightTitle, weightDesc, weightParams, weightContext)

// synonymWeight is what a synonym's match counts for beside a query
// word's: FTS5 cannot weight terms within one query, so synonyms are
// ranked by a second query and added at this weight.
const synonymWeight = 0.5

// Search ranks the docs for q.Text. A query with no meaningful word finds
// nothing.
func (ix *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	words, syns := queryTerms(q.Text)
	if len(words) == 0 || q.Limit <= 0 {
		return nil, nil
	}
	var servers any
	if len(q.Servers) > 0 {
		b, err := json.Marshal(q.Servers)
		if err != nil {
			return nil, fmt.Errorf("toolsearch: search: %w", err)
		}
		servers = string(b)
	}
	scores := map[string]*Hit{}
	var order []*Hit
	rank := func(terms []string, weight float64) error {
		if len(terms) == 0 {
			return nil
		}
		quoted := make([]string, len(terms))
		for i, t := range terms {
			quoted[i] = `"` + t + `"` // Words yields letters and digits only
		}
		rows, err := ix.db.QueryContext(ctx, rankSQL, strings.Join(quoted, " OR "), servers)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var callable, server string
			var bm25 float64
			if err := rows.Scan(&callable, &server, &bm25); err != nil {
				return err
			}
			h := scores[callable]
			if h == nil {
				h = &Hit{Callable: callable, Server: server}
				scores[callable] = h
				order = append(order, h)
			}
			h.Score += -bm25 * weight // bm25() is lower for better matches
		}
		return rows.Err()
	}
	if err := rank(words, 1); err != nil {
		return nil, fmt.Errorf("toolsearch: search: %w", err)
	}
	if err := rank(syns, synonymWeight); err != nil {
		return nil, fmt.Errorf("toolsearch: search: %w", err)
	}
	slices.SortStableFunc(order, func(a, b *Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.Callable, b.Callable)
	})
	var hits []Hit
	for _, h := range order {
		if q.Allow != nil && !q.Allow(h.Callable, h.Server) {
			continue
		}
		hits = append(hits, *h)
		if len(hits) == q.Limit {
			break
		}
	}
	return hits, nil
}
