package integration

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const testkitConfig = `
mcp_servers:
  testkit:
    mode: docker
    image: mcp-hangar/testkit:dev
    start_timeout_s: 30
`

// toolNames returns the names of a hangar_tools answer's tools.
func toolNames(ans map[string]any) []string {
	list, _ := ans["tools"].([]any)
	var names []string
	for _, x := range list {
		m, _ := x.(map[string]any)
		names = append(names, str(m, "name"))
	}
	slices.Sort(names)
	return names
}

// The allow and deny lists decide what is listed and what may be called.
func TestToolPolicy(t *testing.T) {
	g := startGateway(t, `
mcp_servers:
  testkit:
    mode: docker
    image: mcp-hangar/testkit:dev
    start_timeout_s: 30
    tools:
      allow_list: ["e*", "big"]
      deny_list: ["env"]
`)
	s := connect(t, g.MCPURL)

	ans := s.mustCall(t, "hangar_tools", map[string]any{"mcp_server": "testkit"})
	names := toolNames(ans)
	for _, want := range []string{"echo", "big"} {
		if !slices.Contains(names, want) {
			t.Errorf("hangar_tools lists %v, want %s in it", names, want)
		}
	}
	for _, hidden := range []string{"env", "sleep", "crash", "schema"} {
		if slices.Contains(names, hidden) {
			t.Errorf("hangar_tools lists %v, want %s hidden by the policy", names, hidden)
		}
	}
	if want := []string{"big", "echo", "echo_meta"}; !slices.Equal(names, want) {
		t.Errorf("hangar_tools lists %v, want exactly %v", names, want)
	}

	r := s.callOne(t, "testkit", "sleep", map[string]any{"ms": 1})
	if r["success"] != false || str(r, "error_type") != "tool_not_allowed" {
		t.Errorf("calling sleep = %v, want success false with error_type tool_not_allowed", r)
	}
	r = s.callOne(t, "testkit", "env", map[string]any{"name": "PATH"})
	if r["success"] != false || str(r, "error_type") != "tool_not_allowed" {
		t.Errorf("calling env (denied) = %v, want error_type tool_not_allowed", r)
	}
	r = s.callOne(t, "testkit", "echo", map[string]any{"text": "allowed"})
	if r["success"] != true || r["result"] != "allowed" {
		t.Errorf("calling echo = %v, want success", r)
	}
}

// Input schemas pass through as the provider sent them: anyOf is not lost
// to a typed schema model.
func TestSchemasKeptRaw(t *testing.T) {
	g := startGateway(t, testkitConfig)
	s := connect(t, g.MCPURL)

	_, isErr, text := s.call(t, "hangar_tools", map[string]any{"mcp_server": "testkit"})
	if isErr {
		t.Fatalf("hangar_tools: %s", text)
	}
	// Decode by hand so that nothing between the wire and the test could
	// re-type the schema.
	var ans struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(text), &ans); err != nil {
		t.Fatalf("hangar_tools answer: %v: %s", err, text)
	}
	var raw json.RawMessage
	for _, tool := range ans.Tools {
		if tool.Name == "schema" {
			raw = tool.InputSchema
		}
	}
	if raw == nil {
		t.Fatalf("hangar_tools does not list the schema tool: %s", text)
	}
	const want = `{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"number"}]}}}`
	var got, exp any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal([]byte(want), &exp)
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("schema tool inputSchema = %s, want %s", raw, want)
	}
	if !strings.Contains(string(raw), `"anyOf"`) {
		t.Errorf("schema tool inputSchema = %s, lost anyOf", raw)
	}

	r := s.callOne(t, "testkit", "schema", map[string]any{"v": "s"})
	if r["success"] != true {
		t.Errorf("calling schema with a string = %v, want success", r)
	}
}

// A result over the per-call size limit is truncated into the continuation
// cache, can be read back in pieces, and deleted.
func TestLargeOutputTruncated(t *testing.T) {
	testLargeOutput(t, 300000, 100000)
}

// Over 1 MiB a continuation waits on disk in the data dir, and the answer
// is read from the provider without mcp-go's copies.
func TestLargeOutputOnDisk(t *testing.T) {
	testLargeOutput(t, 5<<20, 2000000)
}

func testLargeOutput(t *testing.T, size, limit int) {
	g := startGateway(t, testkitConfig+fmt.Sprintf(`
batch:
  max_response_size_bytes: %d
`, limit))
	s := connect(t, g.MCPURL)

	r := s.callOne(t, "testkit", "big", map[string]any{"bytes": size})
	if r["success"] != true || r["truncated"] != true {
		t.Fatalf("big(%d) = success %v truncated %v, want a truncated success (keys %v)", size, r["success"], r["truncated"], keys(r))
	}
	id := str(r, "continuation_id")
	if !strings.HasPrefix(id, "cont_") {
		t.Fatalf("continuation_id = %q, want cont_...", id)
	}
	if n, _ := r["total_size_bytes"].(float64); int(n) != size {
		t.Errorf("total_size_bytes = %v, want %d", r["total_size_bytes"], size)
	}
	if preview, _ := r["result"].(string); len(preview) > limit || strings.Trim(preview, "x") != "" {
		t.Errorf("inline result is %d bytes (non-x: %v), want at most %d x's", len(preview), strings.Trim(preview, "x") != "", limit)
	}

	var data strings.Builder
	for offset, rounds := 0, 0; ; rounds++ {
		if rounds > size/limit+2 {
			t.Fatalf("still not complete after %d fetches", rounds)
		}
		f := s.mustCall(t, "hangar_fetch_continuation", map[string]any{"continuation_id": id, "offset": offset, "limit": limit})
		if f["found"] != true {
			t.Fatalf("fetch at offset %d: %v", offset, f)
		}
		chunk, _ := f["data"].(string)
		if len(chunk) > limit {
			t.Errorf("fetch returned %d bytes, more than the limit %d", len(chunk), limit)
		}
		data.WriteString(chunk)
		offset += len(chunk)
		if f["complete"] == true {
			if f["has_more"] != false {
				t.Errorf("complete fetch says has_more %v", f["has_more"])
			}
			break
		}
		if len(chunk) == 0 {
			t.Fatalf("fetch at offset %d returned nothing but is not complete: %v", offset, keys(f))
		}
	}
	if got := data.String(); len(got) != size || strings.Trim(got, "x") != "" {
		t.Errorf("reassembled %d bytes (all x: %v), want exactly %d x's", len(got), strings.Trim(got, "x") == "", size)
	}

	del := s.mustCall(t, "hangar_delete_continuation", map[string]any{"continuation_id": id})
	if del["deleted"] != true {
		t.Errorf("delete = %v, want deleted true", del)
	}
	f := s.mustCall(t, "hangar_fetch_continuation", map[string]any{"continuation_id": id})
	if f["found"] != false {
		t.Errorf("fetch after delete = found %v, want false", f["found"])
	}
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
