package endpoint_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mcp-hangar/hangar/internal/endpoint"
)

// FuzzParseEnvelope checks the envelope classification's promises on any
// input: it never panics; what it accepts is one JSON object with
// jsonrpc "2.0"; a request or response it accepts has an id that is a
// string or a number; a message it calls a notification has no id at all.
// The seed corpus is testdata/fuzz/FuzzParseEnvelope, replayed by go test.
func FuzzParseEnvelope(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		env, perr := endpoint.ParseEnvelope(body)
		if perr != nil {
			if perr.Code != -32700 && perr.Code != -32600 {
				t.Fatalf("refusal code %d, want -32700 or -32600", perr.Code)
			}
			if perr.Code == -32600 && !json.Valid(body) {
				t.Fatalf("invalid JSON refused as -32600, want -32700")
			}
			if len(perr.ID) > 0 && !isStringOrNumber(perr.ID) {
				t.Fatalf("refusal echoes id %s", perr.ID)
			}
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("accepted a body that is not a JSON object: %v", err)
		}
		if string(bytes.TrimSpace(m["jsonrpc"])) != `"2.0"` {
			t.Fatalf("accepted jsonrpc %s", m["jsonrpc"])
		}
		id, hasID := m["id"]
		switch env.Kind {
		case endpoint.KindRequest, endpoint.KindResponse:
			if !hasID || !isStringOrNumber(id) || !bytes.Equal(env.ID, id) {
				t.Fatalf("%s accepted with id %q (envelope id %q)", env.Kind, id, env.ID)
			}
		case endpoint.KindNotification:
			if hasID {
				t.Fatalf("notification accepted with an id member %q", id)
			}
		default:
			t.Fatalf("accepted with kind %q", env.Kind)
		}
		if (env.Kind == endpoint.KindResponse) != (env.Method == "") {
			t.Fatalf("kind %s with method %q", env.Kind, env.Method)
		}
	})
}

func isStringOrNumber(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}
