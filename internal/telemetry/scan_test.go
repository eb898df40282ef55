package telemetry

import (
	"encoding/json"
	"testing"
)

// TestScanParams: the scan reads what encoding/json reads, or says it
// cannot.
func TestScanParams(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{"name":"math__add","arguments":{"a":1,"b":[2,{"c":"}\"]"}]},"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","progressToken":7}}`,
		` { "uri" : "file:///x" , "_meta" : { "tracestate":"a=b", "baggage":"k=v" } } `,
		`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`,
		`{"name":"a","name":"b"}`,
		`{"arguments":"{\"name\":\"no\"}","name":"yes"}`,
		`{"_meta":null,"name":"x","n":-1.5e3,"t":true}`,
		`{}`,
		`{"name":"tab\tescaped\\"}`,
		`{"na\u006de":"x"}`,
		`{"name":5}`,
		`[1]`,
	} {
		var want, got params
		_ = json.Unmarshal([]byte(in), &want)
		if !scanParams([]byte(in), &got) {
			continue // the caller decodes with encoding/json
		}
		if got != want {
			t.Errorf("scanParams(%s) = %+v, want %+v", in, got, want)
		}
	}
	var p params
	if !scanParams([]byte(`{"name":"math__add","arguments":{"a":1},"_meta":{"traceparent":"tp"}}`), &p) || p.Name != "math__add" || p.Meta.Traceparent != "tp" {
		t.Errorf("a plain tools/call was not scanned: %+v", p)
	}
}

func FuzzScanParams(f *testing.F) {
	f.Add(`{"name":"x","arguments":{"a":[1,"]"]},"_meta":{"traceparent":"t"}}`)
	f.Fuzz(func(t *testing.T, in string) {
		var want params
		if json.Unmarshal([]byte(in), &want) != nil {
			return
		}
		var got params
		if scanParams([]byte(in), &got) && got != want {
			t.Errorf("scanParams(%s) = %+v, want %+v", in, got, want)
		}
	})
}
