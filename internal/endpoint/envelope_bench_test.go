package endpoint_test

import (
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/endpoint"
)

func BenchmarkParseEnvelope(b *testing.B) {
	for _, size := range []int{0, 64 << 10} {
		body := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"hangar_call","arguments":{"calls":[{"mcp_server":"math","tool":"add","arguments":{"a":1,"b":2,"pad":"` +
			strings.Repeat("x", size) + `"}}]}}}`)
		b.Run(map[int]string{0: "small", 64 << 10: "64KiB"}[size], func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := endpoint.ParseEnvelope(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
