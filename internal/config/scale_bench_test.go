package config

import (
	"fmt"
	"strings"
	"testing"
)

// scaleYAML is a config of n docker servers declaring ten tools each, as
// the bench's figure 14 writes it (bench/toolslist.go toolsListYAML).
func scaleYAML(n int) []byte {
	var s strings.Builder
	s.WriteString("mcp_servers:\n")
	for i := range n {
		fmt.Fprintf(&s, "  p%04d:\n    mode: docker\n    image: mcp-hangar/math:dev\n    idle_ttl_s: 3600\n    tools:\n", i)
		for t := range 10 {
			fmt.Fprintf(&s, "      - name: tool%02d\n        description: Tool %d of p%04d, which adds two numbers.\n", t, t, i)
			s.WriteString("        inputSchema: {type: object, properties: {a: {type: number, description: first}, b: {type: number, description: second}}, required: [a, b]}\n")
		}
	}
	return []byte(s.String())
}

// BenchmarkParseScale parses the config of 1,000 servers declaring 10,000
// tools: its allocations are most of a large gateway's start-up peak.
func BenchmarkParseScale(b *testing.B) {
	data := scaleYAML(1000)
	b.ReportAllocs()
	for b.Loop() {
		cfg, err := Parse(data, nil)
		if err != nil || len(cfg.Servers) != 1000 {
			b.Fatal(err)
		}
	}
}
