package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
)

// BenchmarkFrontDoorToolsList is tools/list of 100 servers with 10
// predefined tools each (issue 14's 1,000-tool figure), in process:
//
//	go test -run '^$' -bench FrontDoorToolsList -benchmem ./internal/gateway/
func BenchmarkFrontDoorToolsList(b *testing.B) {
	var servers []*config.Server
	for i := range 100 {
		s := server(fmt.Sprintf("srv%03d", i))
		for j := range 10 {
			s.Tools.Predefined = append(s.Tools.Predefined, config.ToolDef{Name: fmt.Sprintf("tool%02d", j),
				Description: "adds two numbers and says so at some length",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)})
		}
		servers = append(servers, s)
	}
	h := newFrontDoor(b, nil, nil, nil, servers...)
	h.g.FrontDoor.Refresh(context.Background())
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := json.Marshal(h.srv.HandleMessage(context.Background(), msg)); err != nil {
			b.Fatal(err)
		}
	}
}
