package gateway

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// FuzzCallParamsAsMCPGo: the plain call's decoding of tools/call params
// (callParams) gives the handler what mcp-go's would: the same name, raw
// arguments and _meta fields, and the same values from mcp.Meta's
// accessors; a progress token is never taken for a plain call.
func FuzzCallParamsAsMCPGo(f *testing.F) {
	for _, seed := range []string{
		`{"name":"math__add","arguments":{"a":1,"b":2},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}`,
		`{"name":"x","_meta":{"io.modelcontextprotocol/clientCapabilities":{"sampling":{},"roots":{"listChanged":true}},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","n":12345678901234567890}}`,
		`{"name":"x","_meta":{"progressToken":null,"io.modelcontextprotocol/protocolVersion":null,"io.modelcontextprotocol/logLevel":"debug"}}`,
		`{"name":"x","_meta":{"progressToken":"p1"}}`,
		`{"name":"x","_meta":{"io.modelcontextprotocol/clientInfo":5,"io.modelcontextprotocol/clientCapabilities":[],"io.modelcontextprotocol/protocolVersion":7}}`,
		`{"name":"x","_meta":{"io.modelcontextprotocol/clientInfo":{"name":"a","NAME":"b"},"io.modelcontextprotocol/protocolVersion":"a","io.modelcontextprotocol/protocolVersion":"b"}}`,
		`{"name":"x","_meta":null,"arguments":null}`,
		`{"name":"x","arguments":"text","_meta":{}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		var want mcp.CallToolParams
		wantErr := json.Unmarshal(params, &want)
		var got callParams
		if err := json.Unmarshal(params, &got); (err != nil) != (wantErr != nil) {
			t.Fatalf("%s: decoding errs %v, mcp-go's %v", params, err, wantErr)
		} else if err != nil {
			return
		}
		if foldedTwice(got.Meta) {
			return // the one case read otherwise (see callParams)
		}
		cache := &clientMeta{}
		m, ok := got.meta(cache)
		// Decoded again from what the first decoding kept: the same.
		if again, okAgain := got.meta(cache); okAgain != ok || !reflect.DeepEqual(again, m) {
			t.Fatalf("%s: decoded again %+v, first %+v", params, again, m)
		}
		if want.Meta != nil && want.Meta.ProgressToken != nil {
			if ok {
				t.Fatalf("%s: a progress token taken for a plain call", params)
			}
			return
		}
		if !ok {
			if _, err := json.Marshal(want.Meta); err == nil && want.Meta != nil {
				// Only a value mcp-go cannot decode either refuses.
				var probe any
				for _, v := range got.Meta {
					if json.Unmarshal(v, &probe) != nil {
						return
					}
				}
				t.Fatalf("%s: refused a _meta mcp-go reads", params)
			}
			return
		}
		if got.Name != want.Name || string(got.Arguments) != string(want.RawArguments) {
			t.Fatalf("%s: name %q args %s, mcp-go %q %s", params, got.Name, got.Arguments, want.Name, want.RawArguments)
		}
		meta := &mcp.Meta{AdditionalFields: m.fields}
		if m.version != want.Meta.ProtocolVersion() || meta.ProtocolVersion() != m.version || m.level != want.Meta.LogLevel() {
			t.Fatalf("%s: version %q level %q, mcp-go %q %q", params, m.version, m.level, want.Meta.ProtocolVersion(), want.Meta.LogLevel())
		}
		if !reflect.DeepEqual(m.caps, want.Meta.ClientCapabilities()) || !reflect.DeepEqual(m.info, want.Meta.ClientInfo()) ||
			!reflect.DeepEqual(meta.ClientCapabilities(), m.caps) || !reflect.DeepEqual(meta.ClientInfo(), m.info) {
			t.Fatalf("%s: caps %+v info %+v, mcp-go %+v %+v", params, m.caps, m.info, want.Meta.ClientCapabilities(), want.Meta.ClientInfo())
		}
		var wantFields map[string]any
		if want.Meta != nil {
			wantFields = want.Meta.AdditionalFields
		}
		if len(m.fields) != len(wantFields) {
			t.Fatalf("%s: fields %v, mcp-go %v", params, m.fields, wantFields)
		}
		for k, v := range wantFields {
			g, present := m.fields[k]
			if !present {
				t.Fatalf("%s: field %q missing", params, k)
			}
			if reflect.TypeOf(g) == reflect.TypeOf(v) && !reflect.DeepEqual(g, v) {
				t.Fatalf("%s: field %q %v, mcp-go %v", params, k, g, v)
			}
		}
	})
}

// foldedTwice reports whether an object in meta's values has two keys
// that differ only in letter case.
func foldedTwice(meta map[string]json.RawMessage) bool {
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case map[string]any:
			seen := map[string]bool{}
			for k, e := range v {
				if seen[strings.ToLower(k)] || walk(e) {
					return true
				}
				seen[strings.ToLower(k)] = true
			}
		case []any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	for _, raw := range meta {
		var v any
		if json.Unmarshal(raw, &v) == nil && walk(v) {
			return true
		}
	}
	return false
}

// gatewayResult is ok's result for v: the gateway's own answers.
func gatewayResult(t *testing.T, v any) *mcp.CallToolResult {
	t.Helper()
	res, err := ok(v)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestResultAnswerAsMCPGo: resultAnswer writes the bytes json.Encoder
// writes for mcp-go's JSON-RPC answer, for every member a result can have.
func TestResultAnswerAsMCPGo(t *testing.T) {
	meta := &mcp.Meta{AdditionalFields: map[string]any{"io.modelcontextprotocol/serverInfo": mcp.Implementation{Name: "hangar", Version: "1"}, "k": "<&>"}}
	results := map[string]*mcp.CallToolResult{
		"empty":      {},
		"text":       mcp.NewToolResultText("a <b> & \u2028 c"),
		"error":      {Content: []mcp.Content{mcp.NewTextContent("failed")}, IsError: true},
		"meta":       {Result: mcp.Result{Meta: meta, ResultType: mcp.ResultTypeComplete}, Content: []mcp.Content{mcp.NewTextContent("x")}},
		"raw struct": {Content: []mcp.Content{mcp.NewTextContent("{}")}, RawStructuredContent: json.RawMessage(` {"n": 1, "s":"<x>"} `)},
		"struct":     {StructuredContent: map[string]any{"z": 1, "a": []any{"<", 2.5}}},
		"gateway's":  gatewayResult(t, map[string]any{"z": "<&> \u2028", "a": []any{1.5, nil}}),
		"every kind": {Content: []mcp.Content{mcp.NewImageContent("aGk=", "image/png"), mcp.NewAudioContent("aGk=", "audio/wav"),
			mcp.NewResourceLink("file:///x", "x", "d", "text/plain"), mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "file:///y", Text: "y"})}},
		"input required": {Result: mcp.Result{ResultType: mcp.ResultTypeInputRequired}, MultiRoundTripResult: mcp.MultiRoundTripResult{RequestState: "st<1>",
			InputRequests: mcp.InputRequests{"a": mcp.NewElicitationInputRequest(mcp.ElicitationParams{Message: "ok?"})}}},
	}
	for name, res := range results {
		for _, id := range []any{float64(1), "s-<1>", float64(12345678901234567890)} {
			var want bytes.Buffer
			if err := json.NewEncoder(&want).Encode(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(id), res)); err != nil {
				t.Fatal(err)
			}
			got, err := resultAnswer(id, res, nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if string(got) != want.String() {
				t.Errorf("%s, id %v:\n got  %s\n want %s", name, id, got, want.Bytes())
			}
		}
	}
	// A result without _meta, with the _meta mcp-go stamps on it given
	// encoded.
	impl := mcp.Implementation{Name: "hangar", Version: "v1 <x>"}
	stamp := &mcp.Meta{}
	stamp.SetServerInfo(impl)
	encoded, err := json.Marshal(stamp)
	if err != nil {
		t.Fatal(err)
	}
	for name, res := range results {
		if res.Meta != nil {
			continue
		}
		stamped := *res
		stamped.EnsureResultMeta().SetServerInfo(impl)
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(float64(1)), &stamped)); err != nil {
			t.Fatal(err)
		}
		got, err := resultAnswer(float64(1), res, encoded)
		if err != nil || string(got) != want.String() {
			t.Errorf("%s stamped (%v):\n got  %s\n want %s", name, err, got, want.Bytes())
		}
		if res.Meta != nil {
			t.Errorf("%s: resultAnswer changed the result", name)
		}
	}
}
