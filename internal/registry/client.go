package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/mcp-hangar/hangar/internal/config"
)

// Limits of a search.
const (
	// pageSize is the registry's maximum page (limit) size.
	pageSize = 100
	// maxPages bounds how many pages one search follows (nextCursor).
	maxPages = 10
	// maxPageBytes bounds one page of a registry answer.
	maxPageBytes = 8 << 20
	// maxCatalogBytes bounds the catalog file.
	maxCatalogBytes = 16 << 20
	// searchBudget is how many request timeouts one whole search may take
	// (its pages and their retries together).
	searchBudget = 3
)

// API paths of the list endpoint: v0.1 is the frozen API of the official
// registry; v0 is tried when a registry does not serve v0.1.
var listPaths = []string{"/v0.1/servers", "/v0/servers"}

// Client searches the catalog file, then the registry.
type Client struct {
	base    string // registry URL without a trailing slash; "" for none
	catalog string // catalog file; "" for none
	timeout time.Duration
	http    *retryablehttp.Client
	log     *slog.Logger
}

// NewClient returns a client for cfg's registry URL and catalog file.
// Registry requests are retried (with backoff) on connection errors, 429
// and 5xx answers; each attempt is bounded by cfg.Timeout.
func NewClient(cfg config.Registry, log *slog.Logger) *Client {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	hc := retryablehttp.NewClient()
	hc.HTTPClient = cleanhttp.DefaultPooledClient()
	hc.HTTPClient.Timeout = timeout
	hc.RetryMax = 3
	hc.RetryWaitMin = 200 * time.Millisecond
	hc.RetryWaitMax = 2 * time.Second
	hc.Logger = nil
	hc.RequestLogHook = func(_ retryablehttp.Logger, req *http.Request, attempt int) {
		if attempt > 0 {
			log.Debug("registry request retried", "url", req.URL.Redacted(), "attempt", attempt)
		}
	}
	return &Client{
		base:    strings.TrimRight(cfg.URL, "/"),
		catalog: cfg.CatalogFile,
		timeout: timeout,
		http:    hc,
		log:     log,
	}
}

// Where describes where searches look, for messages.
func (c *Client) Where() string {
	var parts []string
	if c.catalog != "" {
		parts = append(parts, "catalog file "+c.catalog)
	}
	if c.base != "" {
		parts = append(parts, "registry "+c.base)
	}
	if len(parts) == 0 {
		return "nowhere (no registry.url nor registry.catalog_file)"
	}
	return strings.Join(parts, " and ")
}

// Search returns the entries that may be the server called name. The
// catalog file, when there is one, is read first: if it holds an entry
// named name, or whose last name segment is name, those entries are the
// answer and the registry is not asked. Otherwise the registry is asked
// for the latest versions of servers whose name contains name, following
// nextCursor for at most maxPages pages. Deleted entries are left out.
func (c *Client) Search(ctx context.Context, name string) ([]Entry, error) {
	name = strings.TrimSpace(name)
	if c.catalog != "" {
		all, err := ReadCatalog(c.catalog)
		if err != nil {
			return nil, err
		}
		var hits []Entry
		for _, e := range all {
			if nameMatches(e.Server.Name, name) && !deleted(e) {
				hits = append(hits, e)
			}
		}
		if len(hits) > 0 || c.base == "" {
			return hits, nil
		}
	}
	if c.base == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, searchBudget*c.timeout)
	defer cancel()
	paths := listPaths
	if strings.HasSuffix(c.base, "/v0") || strings.HasSuffix(c.base, "/v0.1") {
		paths = []string{"/servers"}
	}
	for _, p := range paths {
		entries, err := c.list(ctx, c.base+p, name)
		if errors.Is(err, errNoEndpoint) {
			continue
		}
		return entries, err
	}
	return nil, fmt.Errorf("registry %s answered 404 on %s: is registry.url an MCP registry?", c.base, strings.Join(paths, " and "))
}

// errNoEndpoint is a 404 on the list endpoint itself.
var errNoEndpoint = errors.New("no such endpoint")

// list follows the pages of one list endpoint.
func (c *Client) list(ctx context.Context, endpoint, name string) ([]Entry, error) {
	var out []Entry
	cursor := ""
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page == maxPages {
			c.log.Warn("registry search truncated", "search", name, "pages", maxPages, "entries", len(out))
			break
		}
		q := url.Values{"search": {name}, "version": {"latest"}, "limit": {strconv.Itoa(pageSize)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		body, err := c.get(ctx, endpoint+"?"+q.Encode())
		if err != nil {
			return nil, err
		}
		var resp struct {
			Servers  []json.RawMessage `json:"servers"`
			Metadata struct {
				NextCursor string `json:"nextCursor"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(body, &resp); err != nil {
			return nil, fmt.Errorf("registry %s: malformed answer: %w", c.base, err)
		}
		for i, raw := range resp.Servers {
			e, err := decodeEntry(raw, SourceRegistry)
			if err != nil {
				c.log.Warn("registry entry skipped", "page", page, "index", i, "error", err)
				continue
			}
			if !deleted(e) {
				out = append(out, e)
			}
		}
		cursor = resp.Metadata.NextCursor
		if cursor == "" || seen[cursor] {
			break
		}
		seen[cursor] = true
	}
	return out, nil
}

// get fetches one page with retries.
func (c *Client) get(ctx context.Context, u string) ([]byte, error) {
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", c.base, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "mcp-hangar")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("registry %s did not answer in time: %w", c.base, ctx.Err())
		}
		return nil, fmt.Errorf("registry %s unreachable: %w", c.base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPageBytes+1))
	if err != nil {
		return nil, fmt.Errorf("registry %s: reading the answer: %w", c.base, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, errNoEndpoint
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("registry %s answered %s: %s", c.base, resp.Status, snippet(body))
	case len(body) > maxPageBytes:
		return nil, fmt.Errorf("registry %s: answer larger than %d bytes", c.base, maxPageBytes)
	}
	return body, nil
}

func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// ReadCatalog reads a catalog file: a JSON list whose items are server.json
// documents or registry entries ({server, _meta}), or a registry answer
// ({servers: [...]}), or a single server.json document.
func ReadCatalog(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("catalog file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCatalogBytes+1))
	if err != nil {
		return nil, fmt.Errorf("catalog file %s: %w", path, err)
	}
	if len(b) > maxCatalogBytes {
		return nil, fmt.Errorf("catalog file %s: larger than %d bytes", path, maxCatalogBytes)
	}
	entries, err := ParseCatalog(b)
	if err != nil {
		return nil, fmt.Errorf("catalog file %s: %w", path, err)
	}
	return entries, nil
}

// ParseCatalog is ReadCatalog for bytes.
func ParseCatalog(b []byte) ([]Entry, error) {
	b = bytes.TrimSpace(b)
	var items []json.RawMessage
	switch {
	case len(b) == 0:
		return nil, nil
	case b[0] == '[':
		if err := json.Unmarshal(b, &items); err != nil {
			return nil, fmt.Errorf("not a JSON list of server.json documents: %w", err)
		}
	case b[0] == '{':
		var probe struct {
			Servers []json.RawMessage `json:"servers"`
		}
		if err := json.Unmarshal(b, &probe); err != nil {
			return nil, fmt.Errorf("malformed JSON: %w", err)
		}
		items = probe.Servers
		if probe.Servers == nil {
			items = []json.RawMessage{b}
		}
	default:
		return nil, errors.New("want a JSON list of server.json documents")
	}
	out := make([]Entry, 0, len(items))
	for i, raw := range items {
		e, err := decodeEntry(raw, SourceCatalog)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// decodeEntry decodes a registry entry {server, _meta} or a bare
// server.json (which older registry answers carried with the official
// metadata in its own _meta).
func decodeEntry(raw json.RawMessage, source string) (Entry, error) {
	var probe struct {
		Server json.RawMessage            `json:"server"`
		Meta   map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return Entry{}, fmt.Errorf("not a server.json object: %w", err)
	}
	doc := raw
	if len(probe.Server) > 0 && string(probe.Server) != "null" {
		doc = probe.Server
	}
	e := Entry{Source: source}
	if err := json.Unmarshal(doc, &e.Server); err != nil {
		return Entry{}, fmt.Errorf("malformed server.json: %w", err)
	}
	if strings.TrimSpace(e.Server.Name) == "" {
		return Entry{}, errors.New("server.json has no name")
	}
	if o, ok := probe.Meta[MetaOfficial]; ok {
		var off Official
		if err := json.Unmarshal(o, &off); err == nil {
			e.Official = &off
		}
	}
	return e, nil
}

func deleted(e Entry) bool { return e.Official != nil && e.Official.Status == StatusDeleted }
