package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Figure 4: hangar_list and hangar_tools with 100 configured providers, 10
// of them warm, against the cost of an MCP round trip to the gateway for
// a trivial tool (hangar_health) in the same run.

// ListResult is figure 4.
type ListResult struct {
	Providers, Warm     int
	WarmTook            time.Duration // hangar_warm of the 10
	Health, List, Tools PathResult
	ListBytes           int // size of one hangar_list answer
	ToolsOf             string
}

// providerIDs names n providers p000, p001, ...
func providerIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("p%03d", i)
	}
	return ids
}

// List measures figure 4 on g, which is configured with the providers in
// ids; the first warm of them are warmed.
func (b *Bench) List(ctx context.Context, g *Gateway, c *Client, ids []string, warm int) (*ListResult, error) {
	res := &ListResult{Providers: len(ids), Warm: warm, ToolsOf: ids[0]}
	t := time.Now()
	m, err := c.MustCall(ctx, "hangar_warm", map[string]any{"mcp_servers": strings.Join(ids[:warm], ",")})
	if err != nil {
		return nil, err
	}
	res.WarmTook = time.Since(t)
	if f, _ := m["failed"].([]any); len(f) > 0 {
		return nil, fmt.Errorf("hangar_warm: %d failed: %v", len(f), f)
	}

	lr, err := c.Call(ctx, "hangar_list", nil)
	if err != nil {
		return nil, err
	}
	res.ListBytes = len(resultText(lr))
	if n := strings.Count(resultText(lr), `"mcp_server"`); n != len(ids) {
		return nil, fmt.Errorf("hangar_list lists %d servers, want %d", n, len(ids))
	}

	tool := func(name string, args map[string]any) callFn {
		return func(ctx context.Context, _ int) error {
			r, err := c.Call(ctx, name, args)
			if err != nil {
				return err
			}
			if r.IsError {
				return fmt.Errorf("%s: %s", name, resultText(r))
			}
			return nil
		}
	}
	paths := []path{
		{workers: []callFn{tool("hangar_health", nil)}, cpu: g.CPU},
		{workers: []callFn{tool("hangar_list", nil)}, cpu: g.CPU},
		{workers: []callFn{tool("hangar_tools", map[string]any{"mcp_server": ids[0]})}, cpu: g.CPU},
	}
	n := b.n(500, 100)
	const rounds = 5
	if _, err := interleave(ctx, 1, b.n(50, 10), paths); err != nil { // warm-up
		return nil, err
	}
	r, err := interleave(ctx, rounds, n/rounds, paths)
	if err != nil {
		return nil, err
	}
	res.Health, res.List, res.Tools = r[0], r[1], r[2]
	return res, nil
}
