package mcpconn_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

// BenchmarkCallToolStdio is one small call over a stdio session (pipes to
// an in-process server): the client side of every provider call.
func BenchmarkCallToolStdio(b *testing.B) {
	s := &rpcServer{}
	stdout, stdin := s.startB(b)
	c, err := mcpconn.Connect(b.Context(), mcpconn.Stdio(stdout, stdin), mcpconn.ProtocolLegacy)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	args := map[string]any{"a": 1, "b": 2}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.CallTool(b.Context(), "echo", args, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallToolStdioRaw is BenchmarkCallToolStdio for a caller that
// forwards the raw result (the front door), with a result of about 8 KiB.
func BenchmarkCallToolStdioRaw(b *testing.B) {
	s := &rpcServer{}
	stdout, stdin := s.startB(b)
	c, err := mcpconn.Connect(b.Context(), mcpconn.Stdio(stdout, stdin), mcpconn.ProtocolLegacy)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	args := map[string]any{"text": strings.Repeat("lorem ipsum ", 700)}
	var raw json.RawMessage
	ctx, opts := b.Context(), &mcpconn.CallOptions{Raw: &raw}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.CallTool(ctx, "echo", args, opts); err != nil {
			b.Fatal(err)
		}
	}
}
