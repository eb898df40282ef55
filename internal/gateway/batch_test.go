package gateway_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-hangar/hangar/internal/config"
)

func callEntry(server, tool string, args map[string]any) map[string]any {
	c := map[string]any{"mcp_server": server, "tool": tool}
	if args != nil {
		c["arguments"] = args
	}
	return c
}

func TestCallValidationErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, nil, server("s"))
	good := []any{callEntry("s", "add", nil)}
	many := make([]any, 101)
	for i := range many {
		many[i] = callEntry("s", "add", nil)
	}
	tests := []struct {
		name  string
		args  map[string]any
		field string
		index any // nil for a batch-level problem, else float64
	}{
		{"max_concurrency 0", map[string]any{"calls": good, "max_concurrency": 0}, "max_concurrency", nil},
		{"max_concurrency 51", map[string]any{"calls": good, "max_concurrency": 51}, "max_concurrency", nil},
		{"max_concurrency 2.5", map[string]any{"calls": good, "max_concurrency": 2.5}, "max_concurrency", nil},
		{"timeout 0.5", map[string]any{"calls": good, "timeout": 0.5}, "timeout", nil},
		{"timeout 301", map[string]any{"calls": good, "timeout": 301}, "timeout", nil},
		{"max_attempts 0", map[string]any{"calls": good, "max_attempts": 0}, "max_attempts", nil},
		{"max_attempts 11", map[string]any{"calls": good, "max_attempts": 11}, "max_attempts", nil},
		{"fail_fast string", map[string]any{"calls": good, "fail_fast": "yes"}, "fail_fast", nil},
		{"no calls", map[string]any{}, "calls", nil},
		{"empty calls", map[string]any{"calls": []any{}}, "calls", nil},
		{"101 calls", map[string]any{"calls": many}, "calls", nil},
		{"item not an object", map[string]any{"calls": []any{"x"}}, "calls", float64(0)},
		{"item without server", map[string]any{"calls": []any{callEntry("s", "add", nil), map[string]any{"tool": "t"}}}, "mcp_server", float64(1)},
		{"item without tool", map[string]any{"calls": []any{map[string]any{"mcp_server": "s"}}}, "tool", float64(0)},
		{"item with bad arguments", map[string]any{"calls": []any{map[string]any{"mcp_server": "s", "tool": "t", "arguments": "x"}}}, "arguments", float64(0)},
		{"item with bad timeout", map[string]any{"calls": []any{map[string]any{"mcp_server": "s", "tool": "t", "timeout": 0}}}, "timeout", float64(0)},
		{"item with unknown field", map[string]any{"calls": []any{map[string]any{"mcp_server": "s", "tool": "t", "server": "s"}}}, "server", float64(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := h.ok(t, "hangar_call", tt.args)
			errs := list(t, resp["validation_errors"])
			if len(errs) != 1 {
				t.Fatalf("validation_errors = %v", errs)
			}
			e := obj(t, errs[0])
			if e["field"] != tt.field || e["index"] != tt.index || e["message"] == "" {
				t.Errorf("validation error = %v, want field %q index %v", e, tt.field, tt.index)
			}
			if resp["success"] != false || resp["total"] != float64(0) {
				t.Errorf("response = %v", resp)
			}
			if _, ok := resp["results"]; ok {
				t.Errorf("results present with validation errors: %v", resp["results"])
			}
			if !strings.HasPrefix(resp["batch_id"].(string), "batch-") {
				t.Errorf("batch_id = %v", resp["batch_id"])
			}
		})
	}
	if n := h.l.launchCount("s"); n != 0 {
		t.Errorf("an invalid batch launched the server %d times", n)
	}
}

func TestCallResults(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, nil, server("s"))
	resp := h.ok(t, "hangar_call", map[string]any{
		"calls": []any{
			callEntry("s", "add", map[string]any{"a": 1, "b": 2}),
			callEntry("s", "fail", nil),
			callEntry("s", "echo", map[string]any{"x": "y", "n": 1}),
			callEntry("s", "plain", nil),
		},
		"max_concurrency": 2,
	})
	if resp["total"] != float64(4) || resp["succeeded"] != float64(3) || resp["failed"] != float64(1) || resp["success"] != false {
		t.Errorf("response = %v", resp)
	}
	results := list(t, resp["results"])
	if len(results) != 4 {
		t.Fatalf("results = %v", results)
	}
	want := []struct {
		success bool
		result  any
		errType any
		err     any
	}{
		{true, float64(3), nil, nil},
		{false, nil, "tool_error", "bad input"},
		{true, map[string]any{"x": "y", "n": float64(1)}, nil, nil},
		{true, "ok", nil, nil},
	}
	for i, w := range want {
		r := obj(t, results[i])
		if r["index"] != float64(i) || !strings.HasPrefix(r["call_id"].(string), "call-") {
			t.Errorf("results[%d] index/call_id = %v %v", i, r["index"], r["call_id"])
		}
		if r["success"] != w.success || !reflect.DeepEqual(r["result"], w.result) || r["error_type"] != w.errType || r["error"] != w.err {
			t.Errorf("results[%d] = %v, want %+v", i, r, w)
		}
		if _, ok := r["elapsed_ms"].(float64); !ok {
			t.Errorf("results[%d] has no elapsed_ms", i)
		}
		if _, ok := r["retry_metadata"]; ok {
			t.Errorf("results[%d] has retry_metadata without max_attempts", i)
		}
	}
}

func TestCallRetryMetadata(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, nil, server("s"))
	resp := h.ok(t, "hangar_call", map[string]any{"calls": []any{callEntry("s", "add", nil)}, "max_attempts": 3})
	r := obj(t, list(t, resp["results"])[0])
	if !reflect.DeepEqual(r["retry_metadata"], map[string]any{"attempts": float64(1), "retries": float64(0)}) {
		t.Errorf("retry_metadata = %v", r["retry_metadata"])
	}
}

func TestTruncationAndContinuation(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher()
	var b strings.Builder
	for i := range 50 {
		fmt.Fprintf(&b, "%04d|", i) // 250 bytes, not JSON
	}
	big := b.String()
	l.bigText = big
	h := newHarness(t, l, func(c *config.Config) { c.Batch.MaxResponseSizeBytes = 100 }, server("s"))

	resp := h.ok(t, "hangar_call", map[string]any{"calls": []any{callEntry("s", "big", nil), callEntry("s", "add", nil)}})
	results := list(t, resp["results"])
	r := obj(t, results[0])
	id, _ := r["continuation_id"].(string)
	if r["truncated"] != true || !strings.HasPrefix(id, "cont_") || r["total_size_bytes"] != float64(250) || r["result"] != big[:100] {
		t.Fatalf("truncated result = %v", r)
	}
	if small := obj(t, results[1]); small["truncated"] != nil || small["continuation_id"] != nil {
		t.Errorf("small result marked truncated: %v", small)
	}

	// Read it back in pieces.
	var got strings.Builder
	for _, step := range []struct {
		offset    int
		size      int
		hasMore   bool
		completed bool
	}{{0, 100, true, false}, {100, 100, true, false}, {200, 50, false, true}} {
		piece := h.ok(t, "hangar_fetch_continuation", map[string]any{"continuation_id": id, "offset": step.offset, "limit": 100})
		data, _ := piece["data"].(string)
		if piece["found"] != true || len(data) != step.size || piece["offset"] != float64(step.offset) ||
			piece["has_more"] != step.hasMore || piece["complete"] != step.completed || piece["total_size_bytes"] != float64(250) {
			t.Errorf("piece at %d = %v", step.offset, piece)
		}
		got.WriteString(data)
	}
	if got.String() != big {
		t.Errorf("reassembled %q, want %q", got.String(), big)
	}

	whole := h.ok(t, "hangar_fetch_continuation", map[string]any{"continuation_id": id})
	if whole["data"] != big || whole["complete"] != true || whole["has_more"] != false {
		t.Errorf("default limit = %v", whole)
	}
	past := h.ok(t, "hangar_fetch_continuation", map[string]any{"continuation_id": id, "offset": 1000})
	if past["data"] != "" || past["complete"] != true || past["offset"] != float64(250) {
		t.Errorf("offset past the end = %v", past)
	}

	del := h.ok(t, "hangar_delete_continuation", map[string]any{"continuation_id": id})
	if del["deleted"] != true || del["continuation_id"] != id {
		t.Errorf("delete = %v", del)
	}
	gone := h.ok(t, "hangar_fetch_continuation", map[string]any{"continuation_id": id})
	if gone["found"] != false || gone["error"] == nil {
		t.Errorf("fetch after delete = %v", gone)
	}
	if again := h.ok(t, "hangar_delete_continuation", map[string]any{"continuation_id": id}); again["deleted"] != false {
		t.Errorf("second delete = %v", again)
	}
}

func TestContinuationArgumentErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, nil)
	tests := []struct {
		name string
		tool string
		args map[string]any
		want string
	}{
		{"fetch without id", "hangar_fetch_continuation", map[string]any{}, "continuation_id is required"},
		{"fetch with empty id", "hangar_fetch_continuation", map[string]any{"continuation_id": ""}, "continuation_id is required"},
		{"fetch without prefix", "hangar_fetch_continuation", map[string]any{"continuation_id": "abc123"}, `must start with "cont_"`},
		{"fetch with prefix later", "hangar_fetch_continuation", map[string]any{"continuation_id": "x_cont_1"}, `must start with "cont_"`},
		{"negative offset", "hangar_fetch_continuation", map[string]any{"continuation_id": "cont_1", "offset": -1}, "offset"},
		{"fractional offset", "hangar_fetch_continuation", map[string]any{"continuation_id": "cont_1", "offset": 1.5}, "offset"},
		{"zero limit", "hangar_fetch_continuation", map[string]any{"continuation_id": "cont_1", "limit": 0}, "limit"},
		{"limit too big", "hangar_fetch_continuation", map[string]any{"continuation_id": "cont_1", "limit": 2000001}, "limit"},
		{"fractional limit", "hangar_fetch_continuation", map[string]any{"continuation_id": "cont_1", "limit": 10.5}, "limit"},
		{"delete without id", "hangar_delete_continuation", map[string]any{}, "continuation_id is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := h.fail(t, tt.tool, tt.args); !strings.Contains(got, tt.want) {
				t.Errorf("error = %q, want it to contain %q", got, tt.want)
			}
		})
	}
	resp := h.ok(t, "hangar_fetch_continuation", map[string]any{"continuation_id": "cont_unknown"})
	if resp["found"] != false {
		t.Errorf("unknown id = %v", resp)
	}
	if resp := h.ok(t, "hangar_delete_continuation", map[string]any{"continuation_id": "cont_unknown"}); resp["deleted"] != false {
		t.Errorf("delete unknown = %v", resp)
	}
}

// TestContinuationPiecesKeepUTF8: hangar_fetch_continuation slices the
// cached text at byte offsets (data[off:end]) without regard to UTF-8, and
// the JSON encoder turns the split rune's bytes into U+FFFD. A client that
// reads a multi-byte result in pieces gets corrupted text.
func TestContinuationPiecesKeepUTF8(t *testing.T) {
	t.Parallel()
	l := newFakeLauncher()
	big := strings.Repeat("é", 150) // 300 bytes, 2 per rune
	l.bigText = big
	h := newHarness(t, l, func(c *config.Config) { c.Batch.MaxResponseSizeBytes = 100 }, server("s"))

	resp := h.ok(t, "hangar_call", map[string]any{"calls": []any{callEntry("s", "big", nil)}})
	r := obj(t, list(t, resp["results"])[0])
	id, _ := r["continuation_id"].(string)
	if inline, _ := r["result"].(string); r["truncated"] != true || !utf8.ValidString(inline) || strings.ContainsRune(inline, utf8.RuneError) {
		t.Fatalf("truncated result = %v", r)
	}

	var got strings.Builder
	offset := 0
	for i := 0; i < 20; i++ {
		piece := h.ok(t, "hangar_fetch_continuation", map[string]any{"continuation_id": id, "offset": offset, "limit": 99})
		data, _ := piece["data"].(string)
		if strings.ContainsRune(data, utf8.RuneError) {
			t.Errorf("piece at offset %d contains U+FFFD: %q", offset, data)
		}
		got.WriteString(data)
		offset += len(data)
		if piece["complete"] == true || data == "" {
			break
		}
	}
	if got.String() != big {
		t.Errorf("reassembled %d bytes, want the original %d bytes", got.Len(), len(big))
	}
}
