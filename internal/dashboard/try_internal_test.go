package dashboard

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/frontdoor"
	"github.com/mcp-hangar/hangar/internal/readmodel"
)

// One field per property, in the schema's order, named after it, typed
// as the form shows it; what the schema cannot say field by field is a
// JSON text.
func TestSchemaFields(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, schema string
		want         string // name:type[*][=value][{options}][<min,max>] …
		note         bool
	}{
		{"order kept, required marked", `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"number"},"m":{"type":"integer","minimum":1,"maximum":9}},"required":["a"]}`,
			"z:string a:number* m:integer<1,9>", false},
		{"enum with a default", `{"properties":{"c":{"type":"string","enum":["red","green"],"default":"green"}}}`,
			`c:enum{red="red",green*="green"}`, false},
		{"enum of numbers", `{"properties":{"n":{"enum":[1,2.5]}}}`, `n:enum{1=1,2.5=2.5}`, false},
		{"boolean", `{"properties":{"b":{"type":"boolean","default":false}}}`, `b:boolean{true=true,false*=false}`, false},
		{"nested object and array as JSON", `{"properties":{"o":{"type":"object","default":{"k":1}},"l":{"type":"array"}}}`, "o:json={\n  \"k\": 1\n} l:json", false},
		{"anyOf as JSON", `{"properties":{"v":{"anyOf":[{"type":"string"},{"type":"number"}]}}}`, "v:json", false},
		{"nullable string", `{"properties":{"s":{"type":["null","string"],"default":"x"}}}`, "s:string=x", false},
		{"no schema", ``, "", false},
		{"no properties", `{"type":"object"}`, "", false},
		{"not an object", `{"type":"array"}`, "", true},
		{"not JSON", `{`, "", true},
	} {
		fields, note := schemaFields(json.RawMessage(c.schema))
		var got []string
		for _, f := range fields {
			s := f.Name + ":" + f.Type
			if f.Required {
				s += "*"
			}
			if f.Value != "" {
				s += "=" + f.Value
			}
			if len(f.Options) > 0 {
				var o []string
				for _, x := range f.Options {
					l := x.Label
					if x.Selected {
						l += "*"
					}
					o = append(o, l+"="+x.Value)
				}
				s += "{" + strings.Join(o, ",") + "}"
			}
			if f.Min != "" || f.Max != "" {
				s += "<" + f.Min + "," + f.Max + ">"
			}
			got = append(got, s)
		}
		if g := strings.Join(got, " "); g != c.want || (note != "") != c.note {
			t.Errorf("%s:\n got %q (note %q)\nwant %q (note %v)", c.name, g, note, c.want, c.note)
		}
	}
}

// Raw mode starts from the defaults the form shows.
func TestStartingArgs(t *testing.T) {
	t.Parallel()
	fields, _ := schemaFields(json.RawMessage(`{"properties":{"s":{"type":"string","default":"hi"},"n":{"type":"integer","default":3},` +
		`"e":{"enum":["a","b"],"default":"b"},"o":{"type":"object","default":{"k":[1]}},"none":{"type":"string"}}}`))
	var got map[string]any
	if err := json.Unmarshal([]byte(startingArgs(fields)), &got); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	if string(b) != `{"e":"b","n":3,"o":{"k":[1]},"s":"hi"}` {
		t.Errorf("starting arguments %s", b)
	}
	if startingArgs(nil) != "{}" {
		t.Errorf("no fields: %q", startingArgs(nil))
	}
}

// The header's search box calls the find tool by the front door's name.
func TestFindToolName(t *testing.T) {
	t.Parallel()
	if findTool != frontdoor.FindToolName {
		t.Errorf("findTool %q, the front door's %q", findTool, frontdoor.FindToolName)
	}
}

// A chart spans the window ending now: a point at now is at the right
// edge, one 15 minutes old at the left; the y axis is a round number
// above the peak; a step without calls breaks the latency lines.
func TestTrafficCharts(t *testing.T) {
	t.Parallel()
	now := time.Unix(10_000, 0)
	tr := &readmodel.Traffic{Step: 5 * time.Second, Points: []readmodel.TrafficPoint{
		{At: now.Add(-readmodel.TrafficWindow), Calls: 10, Errors: 5, P50Ms: 2, P99Ms: 30},
		{At: now.Add(-10 * time.Second), Calls: 0},
		{At: now, Calls: 35, P50Ms: 4, P99Ms: 700},
	}}
	v := trafficCharts("x", tr, tr.Step, now, true)
	if v.Calls != 45 || v.Errors != 5 || v.Points != 3 || len(v.Charts) != 2 {
		t.Fatalf("view %+v", v)
	}
	calls, lat := v.Charts[0], v.Charts[1]
	// 35 calls in 5 s: 7/s, under 10/s.
	if calls.YMax != "10" || len(calls.Series) != 2 || len(calls.Series[0].Lines) != 1 {
		t.Fatalf("calls chart %+v", calls)
	}
	if got := calls.Series[0].Lines[0]; !strings.HasPrefix(got, "52.0,") || !strings.HasSuffix(got, "592.0,45.4") {
		t.Errorf("calls line %q: want from the left edge to the right, 7/s at 7/10 of the height", got)
	}
	if len(calls.Series[0].Areas) != 1 || calls.Series[1].Last != "0" {
		t.Errorf("calls areas %v, errors' last %q", calls.Series[0].Areas, calls.Series[1].Last)
	}
	if lat.YMax != "1s" || len(lat.Series[1].Lines) != 2 || lat.Series[1].Last != "700" {
		t.Errorf("latency chart: y max %q, p99 lines %v, last %q", lat.YMax, lat.Series[1].Lines, lat.Series[1].Last)
	}
	empty := trafficCharts("", nil, 5*time.Second, now, false)
	if len(empty.Charts) != 2 || empty.Charts[0].Empty == "" || len(empty.Charts[0].Series[0].Lines) != 0 {
		t.Errorf("no traffic: %+v", empty)
	}
	for v, want := range map[float64]float64{0: 1, 0.3: 0.5, 1: 1, 1.2: 2, 7: 10, 12: 20, 480: 500, 501: 1000} {
		if got := niceCeil(v); got != want {
			t.Errorf("niceCeil(%v) = %v, want %v", v, got, want)
		}
	}
	for v, want := range map[float64]string{0: "0", 0.125: "0.13", 12.34: "12.3", 2500: "2500"} {
		if got := axisLabel(v); got != want {
			t.Errorf("axisLabel(%v) = %q, want %q", v, got, want)
		}
	}
}
