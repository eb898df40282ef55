package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
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
	// List keeps the tools as JSON, as a gateway or proxy does (and as
	// hangar's own client must: mcp-go's typed decode of a schema is
	// lossy); Typed is mcp-go's ListTools, whose decode of 1,000 schemas
	// is the client's own cost.
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
	list := func(ctx context.Context, _ int) error {
		lctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		n, err := c.rawToolsList(lctx)
		if err != nil {
			return err
		}
		if n != res.Listed {
			return fmt.Errorf("tools/list: %d tools, first answer had %d", n, res.Listed)
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

// rawListID numbers raw requests apart from the client's own.
var rawListID = func() *atomic.Int64 { var n atomic.Int64; n.Store(1 << 40); return &n }()

// rawToolsList sends tools/list on c's connection with the headers and
// _meta mcp-go's client sends, and counts the tools of the answer, kept as
// JSON.
func (c *Client) rawToolsList(ctx context.Context) (int, error) {
	params := map[string]any{"_meta": map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.LATEST_PROTOCOL_VERSION,
		mcp.MetaKeyClientCapabilities: map[string]any{},
		mcp.MetaKeyClientInfo:         mcp.Implementation{Name: "hangar-bench", Version: "0"},
	}}
	encoded, err := json.Marshal(params)
	if err != nil {
		return 0, err
	}
	header := http.Header{}
	header.Set(mcp.HeaderProtocolVersion, mcp.LATEST_PROTOCOL_VERSION)
	for k, v := range mcp.StandardHeaders(mcp.LATEST_PROTOCOL_VERSION, mcp.MethodToolsList, encoded) {
		header.Set(k, v)
	}
	resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION,
		ID: mcp.NewRequestId(rawListID.Add(1)), Method: string(mcp.MethodToolsList), Params: json.RawMessage(encoded), Header: header})
	if err != nil {
		return 0, err
	}
	if resp.Error != nil {
		return 0, fmt.Errorf("tools/list: %d %s", resp.Error.Code, resp.Error.Message)
	}
	var r struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil {
		return 0, fmt.Errorf("tools/list: %w", err)
	}
	return len(r.Tools), nil
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
	t.add(append(latencyRow(fmt.Sprintf("tools/list (%d tools listed, %d of them provider tools), kept as JSON", x.Listed, x.ProviderTools), x.List.Lat, "hangar_health round trip", x.Health.Lat,
		x.target()), FormatDuration(x.List.CPUPerCall))...)
	t.add(append(latencyRow("the same with mcp-go's ListTools (typed decode)", x.Typed.Lat, "hangar_health round trip", x.Health.Lat, "—"), FormatDuration(x.Typed.CPUPerCall))...)
	t.add(append(latencyRow("hangar_health (the baseline)", x.Health.Lat, "—", Summary{}, "—"), FormatDuration(x.Health.CPUPerCall))...)
	b.WriteString(t.String())
	fmt.Fprintf(b, "\n%d docker providers each declare %d tools in the config (`tools:` with name, description and inputSchema), so the gateway knows %d tools without starting anything. "+
		"The front door lists them as `<server>__<tool>` beside the gateway's own tools; the figure is taken once all are listed. "+
		"The first row is the round trip of a client that keeps the tools as JSON (a gateway's own client must: mcp-go's typed schema decode is lossy); "+
		"the second is mcp-go's ListTools on the same connection, which adds the client's decode of every schema (%s at the median).\n\n",
		x.Providers, listToolsPer, x.Declared, FormatDuration(max(x.Typed.Lat.P50-x.List.Lat.P50, 0)))
}

func (x *ToolsListResult) target() string {
	return fmt.Sprintf("< %s median: %s", FormatDuration(targetToolsListMed), verdict(x.List.Lat.P50 < targetToolsListMed))
}

func (x *ToolsListResult) result() string {
	return verdict(x.List.Lat.P50 < targetToolsListMed)
}
