package gateway_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
)

// TestContinuationBoundToCaller: a continuation is readable and deletable
// only by the identity whose hangar_call created it; any other identity, even
// an admin, gets exactly the answer for an unknown ID.
func TestContinuationBoundToCaller(t *testing.T) {
	t.Parallel()
	a := newAuthGateway(t, func(c *config.Config) { c.Batch.MaxResponseSizeBytes = 100 })
	payload := strings.Repeat("x", 300)
	resp := a.structured(t, callTok, "hangar_call", map[string]any{"calls": []any{
		map[string]any{"mcp_server": "math", "tool": "echo", "arguments": map[string]any{"p": payload}}}})
	results, _ := resp["results"].([]any)
	if len(results) != 1 {
		t.Fatalf("hangar_call = %v", resp)
	}
	r, _ := results[0].(map[string]any)
	id, _ := r["continuation_id"].(string)
	if r["truncated"] != true || id == "" {
		t.Fatalf("result not truncated: %v", r)
	}

	unknown := "cont_000000000000000000000000"
	for _, other := range []string{adminTok, a.idp.token(t, nil, audience, time.Now().Add(time.Hour), "hangar:read hangar:call")} {
		got := a.structured(t, other, "hangar_fetch_continuation", map[string]any{"continuation_id": id})
		want := a.structured(t, other, "hangar_fetch_continuation", map[string]any{"continuation_id": unknown})
		if got["found"] != false || !reflect.DeepEqual(got, want) {
			t.Errorf("fetch by another identity = %v, want the unknown-id answer %v", got, want)
		}
		del := a.structured(t, other, "hangar_delete_continuation", map[string]any{"continuation_id": id})
		if del["deleted"] != false {
			t.Errorf("delete by another identity = %v, want deleted false", del)
		}
	}

	own := a.structured(t, callTok, "hangar_fetch_continuation", map[string]any{"continuation_id": id})
	if own["found"] != true || !strings.Contains(own["data"].(string), payload) {
		t.Errorf("fetch by the creator = %v", own)
	}
	if del := a.structured(t, callTok, "hangar_delete_continuation", map[string]any{"continuation_id": id}); del["deleted"] != true {
		t.Errorf("delete by the creator = %v", del)
	}
}
