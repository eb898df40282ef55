package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
)

// fakeRegistry serves GET <prefix>/servers from a list of entries, in
// pages of pageLen, with the official registry's answer shape.
type fakeRegistry struct {
	prefix  string
	entries []map[string]any
	pageLen int
	// fail503 answers the first n requests with 503.
	fail503 atomic.Int32
	delay   time.Duration
	hits    atomic.Int32
	queries []string // the raw queries, in order
	endless bool     // always offer a next cursor
}

func (f *fakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.hits.Add(1)
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return
		}
	}
	if f.fail503.Load() > 0 {
		f.fail503.Add(-1)
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	if r.URL.Path != f.prefix+"/servers" {
		http.NotFound(w, r)
		return
	}
	f.queries = append(f.queries, r.URL.RawQuery)
	q := r.URL.Query()
	search := strings.ToLower(q.Get("search"))
	var hits []map[string]any
	for _, e := range f.entries {
		name := e["server"].(map[string]any)["name"].(string)
		if strings.Contains(strings.ToLower(name), search) {
			hits = append(hits, e)
		}
	}
	start := 0
	if c := q.Get("cursor"); c != "" {
		fmt.Sscanf(c, "c%d", &start)
	}
	end := min(start+f.pageLen, len(hits))
	if start > end {
		start = end
	}
	meta := map[string]any{"count": end - start}
	if end < len(hits) || f.endless {
		meta["nextCursor"] = fmt.Sprintf("c%d-%d", end, f.hits.Load())
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"servers": hits[start:end], "metadata": meta})
}

func regEntry(name, status string) map[string]any {
	return map[string]any{
		"server": map[string]any{
			"$schema": "https://static.modelcontextprotocol.io/schemas/2025-10-17/server.schema.json",
			"name":    name, "description": "d", "version": "1.0.0",
			"packages": []any{map[string]any{"registryType": "oci", "identifier": "img/" + lastSegment(name) + ":1", "transport": map[string]any{"type": "stdio"}}},
		},
		"_meta": map[string]any{MetaOfficial: map[string]any{"status": status, "isLatest": true, "publishedAt": "2025-10-01T00:00:00Z"}},
	}
}

func newTestClient(t *testing.T, url, catalog string, timeout time.Duration) *Client {
	t.Helper()
	c := NewClient(config.Registry{URL: url, CatalogFile: catalog, Timeout: timeout}, nil)
	c.http.RetryWaitMin = time.Millisecond
	c.http.RetryWaitMax = 5 * time.Millisecond
	return c
}

func names(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Server.Name)
	}
	return out
}

func TestSearchPagination(t *testing.T) {
	t.Parallel()
	f := &fakeRegistry{prefix: "/v0.1", pageLen: 2}
	for i := range 5 {
		f.entries = append(f.entries, regEntry(fmt.Sprintf("io.github.u%d/fs", i), StatusActive))
	}
	f.entries = append(f.entries, regEntry("io.github.gone/fs", StatusDeleted), regEntry("io.github.x/other", StatusActive))
	srv := httptest.NewServer(f)
	defer srv.Close()

	got, err := newTestClient(t, srv.URL, "", time.Second).Search(context.Background(), "fs")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"io.github.u0/fs", "io.github.u1/fs", "io.github.u2/fs", "io.github.u3/fs", "io.github.u4/fs"}
	if !slices.Equal(names(got), want) {
		t.Errorf("Search = %v, want %v (deleted left out)", names(got), want)
	}
	if len(f.queries) != 3 {
		t.Fatalf("%d requests, want 3 pages: %v", len(f.queries), f.queries)
	}
	if f.queries[0] != "limit=100&search=fs&version=latest" || !strings.Contains(f.queries[1], "cursor=c2") {
		t.Errorf("queries = %v", f.queries)
	}
	if got[0].Source != SourceRegistry || got[0].Official == nil || !got[0].Official.IsLatest || got[0].Official.Status != StatusActive {
		t.Errorf("entry = %+v, official %+v", got[0], got[0].Official)
	}
	if p := got[0].Server.Packages; len(p) != 1 || p[0].Identifier != "img/fs:1" || p[0].Transport.Type != "stdio" {
		t.Errorf("packages = %+v", p)
	}
}

func TestSearchPagesAreBounded(t *testing.T) {
	t.Parallel()
	f := &fakeRegistry{prefix: "/v0.1", pageLen: 1, endless: true, entries: []map[string]any{regEntry("io.github.a/fs", StatusActive)}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	if _, err := newTestClient(t, srv.URL, "", time.Second).Search(context.Background(), "fs"); err != nil {
		t.Fatal(err)
	}
	if n := f.hits.Load(); n != maxPages {
		t.Errorf("%d requests for an endless cursor, want %d", n, maxPages)
	}

	// A cursor seen before ends the search.
	var hits atomic.Int32
	same := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"servers":[],"metadata":{"nextCursor":"again"}}`))
	}))
	defer same.Close()
	if _, err := newTestClient(t, same.URL, "", time.Second).Search(context.Background(), "fs"); err != nil {
		t.Fatal(err)
	}
	if n := hits.Load(); n != 2 {
		t.Errorf("%d requests for a repeating cursor, want 2", n)
	}
}

func TestSearchRetries503(t *testing.T) {
	t.Parallel()
	f := &fakeRegistry{prefix: "/v0.1", pageLen: 10, entries: []map[string]any{regEntry("io.github.a/fs", StatusActive)}}
	f.fail503.Store(2)
	srv := httptest.NewServer(f)
	defer srv.Close()
	got, err := newTestClient(t, srv.URL, "", time.Second).Search(context.Background(), "fs")
	if err != nil || len(got) != 1 {
		t.Fatalf("Search = %v, %v; want the entry after two 503s", names(got), err)
	}
	if n := f.hits.Load(); n != 3 {
		t.Errorf("%d requests, want 3 (two retried 503s)", n)
	}

	// Always 503: give up after the retries, with a clear error.
	f.fail503.Store(100)
	f.hits.Store(0)
	_, err = newTestClient(t, srv.URL, "", time.Second).Search(context.Background(), "fs")
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("err = %v, want the registry unreachable", err)
	}
	if n := f.hits.Load(); n != 4 {
		t.Errorf("%d requests, want 4 (1 + 3 retries)", n)
	}
}

func TestSearchTimeout(t *testing.T) {
	t.Parallel()
	f := &fakeRegistry{prefix: "/v0.1", pageLen: 10, delay: 5 * time.Second}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := newTestClient(t, srv.URL, "", 100*time.Millisecond)
	began := time.Now()
	_, err := c.Search(context.Background(), "fs")
	if err == nil {
		t.Fatal("Search of a registry that never answers succeeded")
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("Search took %s, want it bounded by the timeout", d)
	}
	if !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("err = %v, want it to name the registry", err)
	}
}

func TestSearchFallsBackToV0(t *testing.T) {
	t.Parallel()
	f := &fakeRegistry{prefix: "/v0", pageLen: 10, entries: []map[string]any{regEntry("io.github.a/fs", StatusActive)}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	got, err := newTestClient(t, srv.URL, "", time.Second).Search(context.Background(), "fs")
	if err != nil || len(got) != 1 {
		t.Fatalf("Search = %v, %v", names(got), err)
	}
	// A URL that names the API version is used as it is.
	got, err = newTestClient(t, srv.URL+"/v0", "", time.Second).Search(context.Background(), "fs")
	if err != nil || len(got) != 1 {
		t.Fatalf("Search with /v0 URL = %v, %v", names(got), err)
	}
	// Neither version: an error, not an empty answer.
	_, err = newTestClient(t, srv.URL+"/nothing", "", time.Second).Search(context.Background(), "fs")
	if err == nil || !strings.Contains(err.Error(), "404 on /v0.1/servers and /v0/servers") {
		t.Errorf("err = %v, want a 404 on both API versions", err)
	}
}

func TestSearchErrorStatus(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"title":"Bad Request","detail":"invalid cursor"}`, http.StatusBadRequest)
	}))
	defer srv.Close()
	_, err := newTestClient(t, srv.URL, "", time.Second).Search(context.Background(), "fs")
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "invalid cursor") {
		t.Errorf("err = %v, want the status and the body", err)
	}
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("<html>")) }))
	defer srv2.Close()
	if _, err := newTestClient(t, srv2.URL, "", time.Second).Search(context.Background(), "fs"); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("err = %v, want a malformed answer", err)
	}
}

func writeCatalog(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSearchCatalogFirst(t *testing.T) {
	t.Parallel()
	f := &fakeRegistry{prefix: "/v0.1", pageLen: 10, entries: []map[string]any{
		regEntry("io.github.reg/fs", StatusActive), regEntry("io.github.reg/weather", StatusActive),
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	catalog := writeCatalog(t, []any{
		map[string]any{"name": "io.github.local/fs", "packages": []any{map[string]any{"registryType": "oci", "identifier": "local/fs"}}},
		map[string]any{"name": "io.github.local/other"},
	})
	c := newTestClient(t, srv.URL, catalog, time.Second)

	got, err := c.Search(context.Background(), "fs")
	if err != nil || !slices.Equal(names(got), []string{"io.github.local/fs"}) {
		t.Fatalf("Search(fs) = %v, %v; want the catalog's entry only", names(got), err)
	}
	if got[0].Source != SourceCatalog || got[0].Official != nil {
		t.Errorf("catalog entry = %+v", got[0])
	}
	if f.hits.Load() != 0 {
		t.Errorf("the registry was asked although the catalog had the name")
	}
	got, err = c.Search(context.Background(), "weather")
	if err != nil || !slices.Equal(names(got), []string{"io.github.reg/weather"}) {
		t.Fatalf("Search(weather) = %v, %v; want the registry's entry", names(got), err)
	}
	// A substring of a catalog name is not a catalog match.
	if got, _ := c.Search(context.Background(), "oth"); len(got) != 0 {
		t.Errorf("Search(oth) = %v, want nothing", names(got))
	}

	// Catalog only.
	c = newTestClient(t, "", catalog, time.Second)
	if got, err := c.Search(context.Background(), "weather"); err != nil || len(got) != 0 {
		t.Errorf("catalog-only Search(weather) = %v, %v; want nothing", names(got), err)
	}
	if got, err := c.Search(context.Background(), "IO.GITHUB.LOCAL/OTHER"); err != nil || len(got) != 1 {
		t.Errorf("catalog-only Search(full name, other case) = %v, %v", names(got), err)
	}

	// An unreadable catalog is an error, not a silent fall-through.
	c = newTestClient(t, srv.URL, filepath.Join(t.TempDir(), "missing.json"), time.Second)
	if _, err := c.Search(context.Background(), "weather"); err == nil || !strings.Contains(err.Error(), "catalog file") {
		t.Errorf("err = %v, want a catalog file error", err)
	}
}

func TestParseCatalog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, json string
		want       []string
		official   bool
		wantErr    string
	}{
		{"bare documents", `[{"name":"a/x"},{"name":"b/y"}]`, []string{"a/x", "b/y"}, false, ""},
		{"registry entries", `[{"server":{"name":"a/x"},"_meta":{"io.modelcontextprotocol.registry/official":{"status":"active"}}}]`,
			[]string{"a/x"}, true, ""},
		{"registry answer", `{"servers":[{"server":{"name":"a/x"}}],"metadata":{}}`, []string{"a/x"}, false, ""},
		{"single document", `{"name":"a/x","_meta":{"io.modelcontextprotocol.registry/official":{"status":"active"}}}`, []string{"a/x"}, true, ""},
		{"empty file", "  ", nil, false, ""},
		{"empty list", "[]", nil, false, ""},
		{"not JSON", "name: x", nil, false, "want a JSON list"},
		{"broken JSON", "[{", nil, false, "not a JSON list"},
		{"item without name", `[{"name":"a/x"},{"description":"no name"}]`, nil, false, "item 1: server.json has no name"},
		{"item not an object", `[1]`, nil, false, "item 0: not a server.json object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseCatalog([]byte(tt.json))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(names(got), tt.want) {
				t.Errorf("names = %v, want %v", names(got), tt.want)
			}
			if len(got) > 0 && (got[0].Official != nil) != tt.official {
				t.Errorf("official = %+v, want present %v", got[0].Official, tt.official)
			}
		})
	}
}

func TestWhere(t *testing.T) {
	t.Parallel()
	if w := NewClient(config.Registry{URL: "https://r", CatalogFile: "/c.json"}, nil).Where(); w != "catalog file /c.json and registry https://r" {
		t.Errorf("Where = %q", w)
	}
	if w := NewClient(config.Registry{}, nil).Where(); !strings.Contains(w, "nowhere") {
		t.Errorf("Where = %q", w)
	}
}
