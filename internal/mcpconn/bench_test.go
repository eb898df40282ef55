package mcpconn_test

import (
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
		if _, err := c.CallTool(b.Context(), "echo", args); err != nil {
			b.Fatal(err)
		}
	}
}
