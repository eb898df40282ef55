package config

import (
	"reflect"
	"testing"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	const base = `
mcp_servers:
  keep: {mode: docker, image: img}
  change: {mode: docker, image: img}
  drop: {mode: docker, image: img}
  pool: {mode: group, members: [{id: m, mode: docker, image: img}]}
  tools: {mode: docker, image: img, tools: [{name: t, inputSchema: {type: object}}]}
`
	tests := []struct {
		name     string
		old, new string
		env      []string
		want     ServerDiff
	}{
		{"identical", base, base, nil, ServerDiff{Unchanged: []string{"change", "drop", "keep", "pool", "tools"}}},
		{"add remove update", base, `
mcp_servers:
  keep: {mode: docker, image: img}
  change: {mode: docker, image: img2}
  pool: {mode: group, members: [{id: m, mode: docker, image: img, weight: 2}]}
  tools: {mode: docker, image: img, tools: [{name: t, inputSchema: {type: string}}]}
  new: {mode: remote, endpoint: "https://x"}
`, nil, ServerDiff{
			Added:     []string{"new"},
			Removed:   []string{"drop"},
			Updated:   []string{"change", "pool", "tools"},
			Unchanged: []string{"keep"},
		}},
		{"defaults written out are no change", "mcp_servers:\n  s: {mode: docker, image: img}\n",
			"mcp_servers:\n  s: {mode: container, image: img, port: 8080, read_only: true, args: [], env: {}}\n", nil,
			ServerDiff{Unchanged: []string{"s"}}},
		{"global default change updates servers that inherit it", "mcp_servers:\n  s: {mode: docker, image: img}\n",
			"execution: {default_provider_concurrency: 2}\nmcp_servers:\n  s: {mode: docker, image: img}\n", nil,
			ServerDiff{Updated: []string{"s"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Diff(mustParse(t, tt.old, tt.env...), mustParse(t, tt.new, tt.env...))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Diff = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDiffNil(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, "mcp_servers:\n  a: {mode: docker, image: img}\n  b: {mode: docker, image: img}\n")
	if got, want := Diff(nil, cfg), (ServerDiff{Added: []string{"a", "b"}}); !reflect.DeepEqual(got, want) {
		t.Errorf("Diff(nil, cfg) = %+v, want %+v", got, want)
	}
	if got, want := Diff(cfg, nil), (ServerDiff{Removed: []string{"a", "b"}}); !reflect.DeepEqual(got, want) {
		t.Errorf("Diff(cfg, nil) = %+v, want %+v", got, want)
	}
	if got := Diff(nil, Default()); !reflect.DeepEqual(got, ServerDiff{}) {
		t.Errorf("Diff(nil, Default()) = %+v, want empty", got)
	}
}
