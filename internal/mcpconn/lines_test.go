package mcpconn_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

// texts of the big tool's answer: what each must come back as.
func bigTexts() []string {
	var mixed strings.Builder
	for mixed.Len() < 600<<10 {
		// Every JSON escape, multi-byte UTF-8 and a surrogate pair.
		mixed.WriteString("quote\" back\\ slash/ \b\f\n\r\t ctl\x01 é ✓ 😀 <>&\u2028 ")
	}
	return []string{
		strings.Repeat("x", 1<<20), // plain: decoded without a copy
		"short text beside the long ones",
		mixed.String(),
	}
}

func TestCallToolLongAnswers(t *testing.T) {
	t.Parallel()
	want := bigTexts()
	c, err := connect(t, &rpcServer{rpcOptions: rpcOptions{big: want}}, mcpconn.ProtocolLegacy)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	for range 3 { // the reader is reused across long lines
		res, err := c.CallTool(t.Context(), "big", nil, nil)
		if err != nil {
			t.Fatalf("CallTool: %v", err)
		}
		if len(res.Content) != len(want) {
			t.Fatalf("%d contents, want %d", len(res.Content), len(want))
		}
		for i, w := range want {
			got := res.Content[i].(mcp.TextContent).Text
			if got != w {
				n := 0
				for n < min(len(got), len(w)) && got[n] == w[n] {
					n++
				}
				t.Errorf("text %d: %d bytes, want %d; first difference at %d: %.40q", i, len(got), len(w), n, got[n:])
			}
		}
		// Short calls still work between long ones.
		if res, err := c.CallTool(t.Context(), "echo", map[string]any{"a": 1}, nil); err != nil || res.Content[0].(mcp.TextContent).Text != `{"a":1}` {
			t.Errorf("echo after a long answer: %v %v", res, err)
		}
	}
}

// allocated is how many bytes the process allocates while f runs; the
// tests that use it are not parallel, so nothing else runs meanwhile.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A long answer is read into memory about twice (its pieces, then one
// buffer its texts share) rather than the six or more copies mcp-go's own
// reading and decoding take.
func TestCallToolLongAnswerAllocations(t *testing.T) {
	const n = 16 << 20
	c, err := connect(t, &rpcServer{rpcOptions: rpcOptions{big: []string{strings.Repeat("y", n)}}}, mcpconn.ProtocolLegacy)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	if _, err := c.CallTool(t.Context(), "big", nil, nil); err != nil { // the server prepares its answer
		t.Fatalf("CallTool: %v", err)
	}
	var res *mcp.CallToolResult
	got := allocated(func() {
		res, err = c.CallTool(t.Context(), "big", nil, nil)
	})
	if err != nil || len(res.Content[0].(mcp.TextContent).Text) != n {
		t.Fatalf("CallTool: %v", err)
	}
	if limit := uint64(5 * n / 2); got > limit {
		t.Errorf("a %d MiB answer allocated %d MiB, want at most %d MiB", n>>20, got>>20, limit>>20)
	}
}

func TestCallToolOverReadLimit(t *testing.T) {
	mcpconn.SetMaxMessageBytes(2 << 20)
	defer mcpconn.SetMaxMessageBytes(0)
	s := &rpcServer{rpcOptions: rpcOptions{big: []string{strings.Repeat("z", 8<<20)}}}
	c, err := connect(t, s, mcpconn.ProtocolLegacy)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	if _, err := c.CallTool(t.Context(), "big", nil, nil); err == nil { // the server prepares its answer
		t.Fatal("CallTool of an over-limit answer succeeded")
	}
	var callErr error
	got := allocated(func() { _, callErr = c.CallTool(t.Context(), "big", nil, nil) })
	if callErr == nil || !strings.Contains(callErr.Error(), "over the read limit of 2097152 bytes") {
		t.Fatalf("CallTool of an over-limit answer: %v, want a read-limit error", callErr)
	}
	// The reader holds at most the read limit, not the 8 MiB line.
	if got > 3<<20 {
		t.Errorf("an over-limit answer allocated %d MiB", got>>20)
	}
	// The session goes on.
	if res, err := c.CallTool(t.Context(), "echo", map[string]any{"b": 2}, nil); err != nil || res.Content[0].(mcp.TextContent).Text != `{"b":2}` {
		t.Errorf("echo after a dropped answer: %v %v", res, err)
	}
}
