package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Figure 9: MCP tools/list of a gateway with 100 providers declaring 1,000
// tools in its config (predefined schemas, so no provider starts): the
// front door lists them as <server>__<tool> beside the hangar_* tools.

const (
	listProviders       = 100
	listToolsPer        = 10
	targetToolsListMed  = 5 * time.Millisecond
	frontDoorToolsCount = listProviders * listToolsPer
)

// ToolsListResult is figure 9.
type ToolsListResult struct {
	Providers, Declared int
	Listed              int // tools in one tools/list answer
	ProviderTools       int // of them, named <server>__<tool>
	// List is a plain HTTP client that reads the answer and keeps the
	// tools as JSON, as a gateway or proxy does; Typed is mcp-go's
	// ListTools, whose transport decodes the answer from the socket as it
	// arrives and then every schema into Go types: the client's own cost.
	List, Typed, Health PathResult
}

// toolsListYAML declares listToolsPer tools with a small schema on each
// provider.
func toolsListYAML(ids []string) string {
	var s strings.Builder
	s.WriteString("execution:\n  max_concurrency: 200\n  default_provider_concurrency: 64\n")
	s.WriteString("logging:\n  level: INFO\n  json_format: true\n")
	s.WriteString("mcp_servers:\n")
	for _, id := range ids {
		fmt.Fprintf(&s, "  %s:\n    mode: docker\n    image: %s\n    idle_ttl_s: 3600\n    tools:\n", id, mathImage)
		for t := range listToolsPer {
			fmt.Fprintf(&s, "      - name: tool%02d\n        description: Tool %d of %s, which adds two numbers and says so at some length.\n", t, t, id)
			s.WriteString("        inputSchema: {type: object, properties: {a: {type: number, description: first}, b: {type: number, description: second}}, required: [a, b]}\n")
		}
	}
	return s.String()
}

// ToolsList measures figure 9 on its own gateway.
func (b *Bench) ToolsList(ctx context.Context) (*ToolsListResult, error) {
	ids := providerIDs(listProviders)
	g, err := b.StartGateway("toolslist", toolsListYAML(ids))
	if err != nil {
		return nil, err
	}
	defer stopGateway(g, b.log)
	c, err := Dial(ctx, g.MCPURL)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	res := &ToolsListResult{Providers: len(ids), Declared: frontDoorToolsCount}
	// The front door builds its list in the background after start-up:
	// measure once it lists every declared tool.
	deadline := time.Now().Add(30 * time.Second)
	for {
		tools, err := c.ToolNames(ctx)
		if err != nil {
			return nil, err
		}
		res.Listed, res.ProviderTools = len(tools), 0
		for name := range tools {
			if strings.Contains(name, "__") {
				res.ProviderTools++
			}
		}
		if res.ProviderTools >= frontDoorToolsCount {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("tools/list: the front door lists %d of the %d declared tools after 30 s", res.ProviderTools, frontDoorToolsCount)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	typed := func(ctx context.Context, _ int) error {
		lctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		r, err := c.ListTools(lctx, mcp.ListToolsRequest{})
		if err != nil {
			return err
		}
		if len(r.Tools) != res.Listed {
			return fmt.Errorf("tools/list: %d tools, first answer had %d", len(r.Tools), res.Listed)
		}
		return nil
	}
	// The raw answer is checked once for its tools, then by its size
	// (its envelope is parsed every time).
	hc := ownHTTPClient()
	first, err := rawToolsList(ctx, hc, g.MCPURL)
	if err != nil {
		return nil, err
	}
	var tools struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(first, &tools); err != nil || len(tools.Tools) != res.Listed {
		return nil, fmt.Errorf("raw tools/list: %d tools (%v), typed ListTools had %d", len(tools.Tools), err, res.Listed)
	}
	list := func(ctx context.Context, _ int) error {
		lctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		r, err := rawToolsList(lctx, hc, g.MCPURL)
		if err != nil {
			return err
		}
		if len(r) != len(first) {
			return fmt.Errorf("tools/list: a %d-byte answer, the first had %d", len(r), len(first))
		}
		return nil
	}
	paths := []path{
		{workers: []callFn{list}, cpu: g.CPU},
		{workers: []callFn{typed}, cpu: g.CPU},
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
	res.List, res.Typed, res.Health = r[0], r[1], r[2]
	return res, nil
}

// rawToolsList posts tools/list as mcp-go's client does on the stateless
// protocol (the same headers and _meta) and returns the result as JSON.
// It reads the answer whole before parsing it: mcp-go's transport decodes
// it from the socket as it arrives, which for a 290 kB answer makes it a
// slow reader that costs both sides several times the list itself.
func rawToolsList(ctx context.Context, hc *http.Client, url string) (json.RawMessage, error) {
	data, status, err := postToolsList(ctx, hc, url)
	if err != nil {
		return nil, err
	}
	return toolsListResult(data, status)
}

// postToolsList posts tools/list as rawToolsList does and returns the
// whole answer, undecoded, with its HTTP status.
func postToolsList(ctx context.Context, hc *http.Client, url string) ([]byte, int, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": 1, "method": mcp.MethodToolsList,
		"params": map[string]any{"_meta": map[string]any{
			mcp.MetaKeyProtocolVersion:    mcp.LATEST_PROTOCOL_VERSION,
			mcp.MetaKeyClientCapabilities: map[string]any{},
			mcp.MetaKeyClientInfo:         mcp.Implementation{Name: "hangar-bench", Version: "0"},
		}}})
	if err != nil {
		return nil, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.LATEST_PROTOCOL_VERSION)
	req.Header.Set(mcp.HeaderMethod, string(mcp.MethodToolsList))
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, err
	}
	return data, resp.StatusCode, nil
}

// toolsListResult decodes a tools/list answer's envelope and returns its
// result as JSON.
func toolsListResult(data []byte, status int) (json.RawMessage, error) {
	var msg struct {
		Result json.RawMessage          `json:"result"`
		Error  *mcp.JSONRPCErrorDetails `json:"error"`
	}
	if err := json.Unmarshal(data, &msg); err != nil {
		return nil, fmt.Errorf("tools/list: HTTP %d: %w", status, err)
	}
	if msg.Error != nil || status != http.StatusOK {
		return nil, fmt.Errorf("tools/list: HTTP %d: %+v", status, msg.Error)
	}
	return msg.Result, nil
}

func (r *Report) figure9(b *strings.Builder) {
	b.WriteString("## 9. tools/list with 100 providers and 1,000 tools\n\n")
	if r.failed(9, b) {
		return
	}
	x := r.ToolsList
	if x == nil {
		b.WriteString("Not run.\n\n")
		return
	}
	head := append(append([]string{}, latencyHead...), "Gateway CPU per call")
	t := &table{head: head}
	t.add(append(latencyRow(fmt.Sprintf("tools/list (%d tools listed, %d of them provider tools), read whole and kept as JSON", x.Listed, x.ProviderTools), x.List.Lat, "hangar_health round trip", x.Health.Lat,
		x.target()), FormatDuration(x.List.CPUPerCall))...)
	t.add(append(latencyRow("the same with mcp-go's ListTools (typed decode)", x.Typed.Lat, "hangar_health round trip", x.Health.Lat, "—"), FormatDuration(x.Typed.CPUPerCall))...)
	t.add(append(latencyRow("hangar_health (the baseline)", x.Health.Lat, "—", Summary{}, "—"), FormatDuration(x.Health.CPUPerCall))...)
	b.WriteString(t.String())
	fmt.Fprintf(b, "\n%d docker providers each declare %d tools in the config (`tools:` with name, description and inputSchema), so the gateway knows %d tools without starting anything. "+
		"The front door lists them as `<server>__<tool>` beside the gateway's own tools; the figure is taken once all are listed. "+
		"The first row is a plain HTTP client with mcp-go's headers and `_meta` that reads the answer whole and keeps the tools as JSON, as a relaying client does; "+
		"the second is mcp-go's ListTools on its own connection, whose transport decodes the answer from the socket as it arrives (a slow reader, which also costs the gateway CPU) "+
		"and then every schema into Go types: %s more at the median, all of it on the client.\n\n",
		x.Providers, listToolsPer, x.Declared, FormatDuration(max(x.Typed.Lat.P50-x.List.Lat.P50, 0)))
}

func (x *ToolsListResult) target() string {
	return fmt.Sprintf("< %s median: %s", FormatDuration(targetToolsListMed), verdict(x.List.Lat.P50 < targetToolsListMed))
}

func (x *ToolsListResult) result() string {
	return verdict(x.List.Lat.P50 < targetToolsListMed)
}
