package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/toolsearch"
	"github.com/mcp-hangar/hangar/internal/toolsearch/labelled"
)

// Figure 12: progressive tool discovery (issue 24). Quality on the
// labelled set (real MCP servers' published tools and natural-language
// queries, internal/toolsearch/testdata); hangar_find_tools and search-mode
// tools/list on a gateway whose front door holds that set twice over; and
// how long the index takes to catch up with a changed server.

const (
	labelledDir     = "internal/toolsearch/testdata/servers"
	labelledQueries = "internal/toolsearch/testdata/queries.txt"
	searchCopies    = 2

	targetRecall5    = 0.9
	targetFindP50    = 2 * time.Millisecond
	targetFindP99    = 10 * time.Millisecond
	targetSearchList = time.Millisecond
	targetCatchUp    = 100 * time.Millisecond
)

// SearchResult is figure 12.
type SearchResult struct {
	Servers, Tools, Queries int
	Recall1, Recall5, MRR   float64
	// Indexed is the tools behind the gateway's front door.
	Indexed int
	// Find is hangar_find_tools {query, limit: 10} over the labelled
	// queries; Modern and Legacy are tools/list in search mode on the
	// stateless protocol and on a 2025-11-25 session; Health the baseline.
	Find, Modern, Legacy, Health PathResult
	Listed                       int // tools in a search-mode tools/list
	// CatchUp is, in process, from publishing a catalog with one changed
	// server to the index holding it, with Indexed tools.
	CatchUp Summary
}

// labelledCatalog is the labelled set copies times over (a copy's
// servers are <id>-<n>), as toolsearch docs by server.
func labelledCatalog(copies int) ([]labelled.Server, map[string][]toolsearch.Doc, error) {
	set, err := labelled.Servers(labelledDir)
	if err != nil {
		return nil, nil, err
	}
	var servers []labelled.Server
	catalog := map[string][]toolsearch.Doc{}
	for c := range copies {
		for _, s := range set {
			if c > 0 {
				s.ID = fmt.Sprintf("%s-%d", s.ID, c)
			}
			servers = append(servers, s)
			for _, t := range s.Tools {
				catalog[s.ID] = append(catalog[s.ID], toolsearch.Doc{Callable: s.ID + "__" + t.Name, Server: s.ID, Tool: t.Name,
					Description: t.Description, Summary: s.Summary, Params: t.Params})
			}
		}
	}
	return servers, catalog, nil
}

// searchYAML serves servers in search mode with their tools predefined
// (nothing starts). Strings are written as JSON, which YAML reads as is.
func searchYAML(servers []labelled.Server) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var s strings.Builder
	s.WriteString("logging:\n  level: INFO\n  json_format: true\n")
	s.WriteString("front_door:\n  discovery: search\n")
	s.WriteString("mcp_servers:\n")
	for _, srv := range servers {
		fmt.Fprintf(&s, "  %s:\n    mode: docker\n    image: %s\n", q(srv.ID), mathImage)
		if srv.Summary != "" { // else the front door derives one
			fmt.Fprintf(&s, "    summary: %s\n", q(srv.Summary))
		}
		s.WriteString("    tools:\n")
		for _, t := range srv.Tools {
			props := map[string]any{}
			for _, p := range t.Params {
				props[p] = map[string]any{"type": "string"}
			}
			schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
			fmt.Fprintf(&s, "      - {name: %s, description: %s, inputSchema: %s}\n", q(t.Name), q(t.Description), schema)
		}
	}
	return s.String()
}

// searchQuality is recall@1, recall@5 and MRR (over the first 10) of the
// labelled queries on the labelled set, once over, as TestQuality in
// internal/toolsearch computes them.
func searchQuality(ctx context.Context, res *SearchResult) error {
	servers, catalog, err := labelledCatalog(1)
	if err != nil {
		return err
	}
	queries, err := labelled.Queries(labelledQueries)
	if err != nil {
		return err
	}
	ix, err := toolsearch.New()
	if err != nil {
		return err
	}
	defer ix.Close()
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	go ix.Run(ictx)
	if err := ix.WaitApplied(ctx, ix.Publish(catalog)); err != nil {
		return err
	}
	res.Servers, res.Queries = len(servers), len(queries)
	for _, docs := range catalog {
		res.Tools += len(docs)
	}
	var at1, at5, rr float64
	for _, q := range queries {
		hits, err := ix.Search(ctx, toolsearch.Query{Text: q.Text, Limit: 10})
		if err != nil {
			return err
		}
		for i, h := range hits {
			if slices.Contains(q.Expect, h.Callable) {
				if i == 0 {
					at1++
				}
				if i < 5 {
					at5++
				}
				rr += 1 / float64(i+1)
				break
			}
		}
	}
	n := float64(len(queries))
	res.Recall1, res.Recall5, res.MRR = at1/n, at5/n, rr/n
	return nil
}

// searchCatchUp times, in process, the index taking a catalog in which
// one server changed, with the figure's catalog indexed.
func (b *Bench) searchCatchUp(ctx context.Context, catalog map[string][]toolsearch.Doc, res *SearchResult) error {
	ix, err := toolsearch.New()
	if err != nil {
		return err
	}
	defer ix.Close()
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	go ix.Run(ictx)
	if err := ix.WaitApplied(ctx, ix.Publish(catalog)); err != nil {
		return err
	}
	var took []time.Duration
	for i := range b.n(50, 10) {
		next := make(map[string][]toolsearch.Doc, len(catalog)+1)
		for k, v := range catalog {
			next[k] = v
		}
		next["fresh"] = []toolsearch.Doc{{Callable: fmt.Sprintf("fresh__frobnicate_%d", i), Server: "fresh", Tool: "frobnicate", Description: "Frobnicate the quux"}}
		began := time.Now()
		if err := ix.WaitApplied(ctx, ix.Publish(next)); err != nil {
			return err
		}
		took = append(took, time.Since(began))
	}
	res.CatchUp = Summarize(took)
	return nil
}

// Search measures figure 12; the gateway part on its own gateway.
func (b *Bench) Search(ctx context.Context) (*SearchResult, error) {
	res := &SearchResult{}
	if err := searchQuality(ctx, res); err != nil {
		return nil, fmt.Errorf("quality: %w", err)
	}
	servers, catalog, err := labelledCatalog(searchCopies)
	if err != nil {
		return nil, err
	}
	for _, docs := range catalog {
		res.Indexed += len(docs)
	}
	if err := b.searchCatchUp(ctx, catalog, res); err != nil {
		return nil, fmt.Errorf("catch-up: %w", err)
	}
	queries, err := labelled.Queries(labelledQueries)
	if err != nil {
		return nil, err
	}

	g, err := b.StartGateway("search", searchYAML(servers))
	if err != nil {
		return nil, err
	}
	defer stopGateway(g, b.log)
	c, err := Dial(ctx, g.MCPURL)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	legacy, err := DialLegacy(ctx, g.MCPURL)
	if err != nil {
		return nil, err
	}
	defer legacy.Close()
	find := func(ctx context.Context, i int) error {
		r, err := c.Call(ctx, "hangar_find_tools", map[string]any{"query": queries[i%len(queries)].Text, "limit": 10})
		if err != nil {
			return err
		}
		if r.IsError || !strings.Contains(resultText(r), `"matches"`) {
			return fmt.Errorf("hangar_find_tools: %.300s", resultText(r))
		}
		return nil
	}
	// The index follows the front door's catalog in the background: start
	// once a query finds the tool it is labelled with.
	probe := queries[0]
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := c.Call(ctx, "hangar_find_tools", map[string]any{"query": probe.Text, "limit": 10})
		if err == nil && !r.IsError && strings.Contains(resultText(r), probe.Expect[0]) {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("hangar_find_tools does not find %s for %q after 30 s (%v)", probe.Expect[0], probe.Text, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	hc := ownHTTPClient()
	first, err := rawToolsList(ctx, hc, g.MCPURL)
	if err != nil {
		return nil, err
	}
	var listed struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(first, &listed); err != nil {
		return nil, err
	}
	res.Listed = len(listed.Tools)
	if res.Listed >= res.Indexed {
		return nil, fmt.Errorf("search mode lists %d tools of %d: not search mode", res.Listed, res.Indexed)
	}
	modern := func(ctx context.Context, _ int) error {
		lctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		r, err := rawToolsList(lctx, hc, g.MCPURL)
		if err == nil && len(r) != len(first) {
			err = fmt.Errorf("tools/list: a %d-byte answer, the first had %d", len(r), len(first))
		}
		return err
	}
	old := func(ctx context.Context, _ int) error {
		lctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		r, err := legacy.ListTools(lctx, mcp.ListToolsRequest{})
		if err == nil && len(r.Tools) != res.Listed {
			err = fmt.Errorf("tools/list on 2025-11-25: %d tools, 2026-07-28 lists %d", len(r.Tools), res.Listed)
		}
		return err
	}
	paths := []path{
		{workers: []callFn{find}, cpu: g.CPU},
		{workers: []callFn{modern}, cpu: g.CPU},
		{workers: []callFn{old}, cpu: g.CPU},
		{workers: []callFn{gatewayTool(c, "hangar_health")}, cpu: g.CPU},
	}
	if _, err := interleave(ctx, 1, b.n(50, 10), paths); err != nil { // warm-up
		return nil, err
	}
	const rounds = 5
	r, err := interleave(ctx, rounds, b.n(500, 100)/rounds, paths)
	if err != nil {
		return nil, err
	}
	res.Find, res.Modern, res.Legacy, res.Health = r[0], r[1], r[2], r[3]
	return res, nil
}

func (x *SearchResult) findOK() bool {
	return x.Find.Lat.P50 <= targetFindP50 && x.Find.Lat.P99 <= targetFindP99
}

func (x *SearchResult) listOK() bool {
	return x.Modern.CPUPerCall <= targetSearchList && x.Legacy.CPUPerCall <= targetSearchList
}

func (r *Report) figure12(b *strings.Builder) {
	b.WriteString("## 12. Tool search: quality and speed\n\n")
	if r.failed(12, b) {
		return
	}
	x := r.Search
	if x == nil {
		b.WriteString("Not run.\n\n")
		return
	}
	q := &table{head: []string{"Labelled set", "recall@1", "recall@5", "MRR (first 10)", "Target"}}
	q.add(fmt.Sprintf("%d queries over %d tools of %d real MCP servers", x.Queries, x.Tools, x.Servers),
		fmt.Sprintf("%.3f", x.Recall1), fmt.Sprintf("%.3f", x.Recall5), fmt.Sprintf("%.3f", x.MRR),
		fmt.Sprintf("recall@5 ≥ %.1f: %s", targetRecall5, verdict(x.Recall5 >= targetRecall5)))
	b.WriteString(q.String())
	b.WriteString("\n")
	head := append(append([]string{}, latencyHead...), "Gateway CPU per call")
	t := &table{head: head}
	t.add(append(latencyRow(fmt.Sprintf("hangar_find_tools {query, limit 10}, %d tools indexed", x.Indexed), x.Find.Lat, "hangar_health round trip", x.Health.Lat,
		fmt.Sprintf("p50 ≤ %s, p99 ≤ %s: %s", FormatDuration(targetFindP50), FormatDuration(targetFindP99), verdict(x.findOK()))), FormatDuration(x.Find.CPUPerCall))...)
	t.add(append(latencyRow(fmt.Sprintf("tools/list in search mode (%d tools listed), 2026-07-28", x.Listed), x.Modern.Lat, "hangar_health round trip", x.Health.Lat,
		fmt.Sprintf("CPU ≤ %s: %s", FormatDuration(targetSearchList), verdict(x.Modern.CPUPerCall <= targetSearchList))), FormatDuration(x.Modern.CPUPerCall))...)
	t.add(append(latencyRow("the same on a 2025-11-25 session (mcp-go's client)", x.Legacy.Lat, "hangar_health round trip", x.Health.Lat,
		fmt.Sprintf("CPU ≤ %s: %s", FormatDuration(targetSearchList), verdict(x.Legacy.CPUPerCall <= targetSearchList))), FormatDuration(x.Legacy.CPUPerCall))...)
	t.add(append(latencyRow("hangar_health (the baseline)", x.Health.Lat, "—", Summary{}, "—"), FormatDuration(x.Health.CPUPerCall))...)
	t.add(append(latencyRow(fmt.Sprintf("index catch-up: one server changed among %d tools (in process)", x.Indexed), x.CatchUp, "—", Summary{},
		fmt.Sprintf("≤ %s: %s", FormatDuration(targetCatchUp), verdict(x.CatchUp.Max <= targetCatchUp))), "—")...)
	b.WriteString(t.String())
	fmt.Fprintf(b, "\nQuality is `internal/toolsearch`'s index over its labelled set (`go test -run TestQuality -v ./internal/toolsearch/` computes the same). "+
		"The gateway serves the set %d times over (copies named `<server>-<n>`), every tool predefined in the config so nothing starts, with `front_door.discovery: search`; "+
		"the find tool is called with the labelled queries in turn, and the lists come from a plain HTTP client on 2026-07-28 (served from the encoded listing) and from mcp-go's client on a 2025-11-25 session "+
		"(served from the same listing, which keeps mcp-go's answer per caller view and session activations, whenever no notification waits for the session; "+
		"mcp-go itself copies and sorts all %d registered tools before the search-mode filter keeps %d). "+
		"Latencies are client-observed; gateway CPU per call is the gateway process's user+system time over the rounds, which a shared machine disturbs least. "+
		"Catch-up (its maximum is the target's) is timed in the bench process from publishing a catalog with one new server to the index having applied it; searches never wait for it.\n\n",
		searchCopies, x.Indexed, x.Listed)
}
