package batch

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/call"
)

// Benchmarks of hangar_call's own work per call (go test -bench . -benchmem).

// BenchmarkRunOneCall is a batch of one call whose provider answers "3".
func BenchmarkRunOneCall(b *testing.B) {
	f := &fakeInvoker{handle: func(context.Context, *call.Request, string, string, map[string]any) (*mcp.CallToolResult, error) {
		return text("3"), nil
	}}
	e := newExecutor(f, DefaultLimits(), NewCache(time.Minute, 1<<20))
	req := Request{Calls: []Call{{Server: "math", Tool: "add", Arguments: map[string]any{"a": 1, "b": 2}}}, MaxConcurrency: 10, Timeout: time.Minute, MaxAttempts: 1}
	b.ReportAllocs()
	for b.Loop() {
		if r := e.Run(b.Context(), nil, req); !r.Success {
			b.Fatal(r)
		}
	}
}

// BenchmarkResultJSONObject is a provider's JSON text (2 KiB object) made
// into a result and encoded into the answer.
func BenchmarkResultJSONObject(b *testing.B) {
	var s strings.Builder
	s.WriteString(`{"items":[`)
	for i := range 40 {
		if i > 0 {
			s.WriteByte(',')
		}
		s.WriteString(`{"id":` + strconv.Itoa(i) + `,"name":"item number ` + strconv.Itoa(i) + `","ok":true}`)
	}
	s.WriteString(`]}`)
	res := text(s.String())
	b.ReportAllocs()
	for b.Loop() {
		r := fromResultLimit(res, 10<<20)
		if _, err := json.Marshal(r); err != nil {
			b.Fatal(err)
		}
	}
}
