package config

import (
	"errors"
	"maps"
	"slices"
	"testing"
)

// The filters of a docker (and a swarm) discovery source: defaults, accepted values and
// every rejection, each naming its key path.
func TestSourceFilters(t *testing.T) {
	t.Parallel()
	src := func(filters string) string {
		return "discovery:\n  sources:\n    - type: docker\n" + filters
	}
	swarm := func(filters string) string {
		return "discovery:\n  sources:\n    - type: swarm\n" + filters
	}
	tests := []struct {
		name     string
		yaml     string
		want     SourceFilters
		problems []string
	}{
		{name: "default is auto", yaml: src(""), want: SourceFilters{ComposeProject: ComposeAuto}},
		{name: "empty filters", yaml: src("      filters: {}\n"), want: SourceFilters{ComposeProject: ComposeAuto}},
		{name: "any project", yaml: src("      filters: {compose_project: \"*\"}\n"), want: SourceFilters{ComposeProject: ComposeAny}},
		{name: "named project", yaml: src("      filters: {compose_project: stack_2-b}\n"), want: SourceFilters{ComposeProject: "stack_2-b"}},
		{name: "labels and networks", yaml: src("      filters: {labels: {team: a, present: \"\"}, networks: [n1, n2]}\n"),
			want: SourceFilters{ComposeProject: ComposeAuto, Labels: map[string]string{"team": "a", "present": ""}, Networks: []string{"n1", "n2"}}},
		{name: "bad project", yaml: src("      filters: {compose_project: My Stack}\n"),
			problems: []string{`discovery.sources[0].filters.compose_project: must be "auto", "*" or a compose project name (lowercase letters, digits, '-' and '_') (got "My Stack")`}},
		{name: "empty project", yaml: src("      filters: {compose_project: \"\"}\n"),
			problems: []string{`discovery.sources[0].filters.compose_project: must be "auto", "*" or a compose project name (lowercase letters, digits, '-' and '_') (got "")`}},
		{name: "unknown filter", yaml: src("      filters: {project: x}\n"),
			problems: []string{"discovery.sources[0].filters.project: unknown key"}},
		{name: "filters not a mapping", yaml: src("      filters: [x]\n"),
			problems: []string{"discovery.sources[0].filters: must be a mapping (got a list)"}},
		{name: "labels not a mapping", yaml: src("      filters: {labels: [a]}\n"),
			problems: []string{"discovery.sources[0].filters.labels: must be a mapping of strings (got a list)"}},
		{name: "label value not a string", yaml: src("      filters: {labels: {a: [1]}}\n"),
			problems: []string{"discovery.sources[0].filters.labels.a: must be a string (got a list)"}},
		{name: "networks not a list", yaml: src("      filters: {networks: front}\n"),
			problems: []string{`discovery.sources[0].filters.networks: must be a list of strings (got "front")`}},
		{name: "empty network", yaml: src("      filters: {networks: [\"\"]}\n"),
			problems: []string{"discovery.sources[0].filters.networks[0]: must not be empty"}},
		{name: "filesystem source", yaml: "discovery:\n  sources:\n    - {type: filesystem, path: /x, filters: {compose_project: a}}\n",
			problems: []string{"discovery.sources[0].filters: not allowed for type filesystem"}},
		{name: "swarm default", yaml: swarm(""), want: SourceFilters{}},
		{name: "swarm labels and networks", yaml: swarm("      filters: {labels: {com.docker.stack.namespace: hangar}, networks: [hangar_mcp]}\n"),
			want: SourceFilters{Labels: map[string]string{"com.docker.stack.namespace": "hangar"}, Networks: []string{"hangar_mcp"}}},
		{name: "swarm compose project", yaml: swarm("      filters: {compose_project: a}\n"),
			problems: []string{"discovery.sources[0].filters.compose_project: not allowed for type swarm (a stack's services carry the label com.docker.stack.namespace: filter on labels)"}},
		{name: "swarm empty network", yaml: swarm("      filters: {networks: [\" \"]}\n"),
			problems: []string{"discovery.sources[0].filters.networks[0]: must not be empty"}},
		{name: "swarm unknown filter", yaml: swarm("      filters: {stack: x}\n"),
			problems: []string{"discovery.sources[0].filters.stack: unknown key"}},
		{name: "swarm with path", yaml: "discovery:\n  sources:\n    - {type: swarm, path: /p, watch: true}\n",
			problems: []string{"discovery.sources[0].path: not allowed for type swarm", "discovery.sources[0].watch: not allowed for type swarm"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(tt.yaml), nil)
			if tt.problems != nil {
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("Parse = %v, want problems %q", err, tt.problems)
				}
				var got []string
				for _, p := range ve.Problems {
					got = append(got, p.String())
				}
				if !slices.Equal(got, tt.problems) {
					t.Errorf("problems:\n  got:  %q\n  want: %q", got, tt.problems)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			f := cfg.Discovery.Sources[0].Filters
			if f.ComposeProject != tt.want.ComposeProject || !maps.Equal(f.Labels, tt.want.Labels) || !slices.Equal(f.Networks, tt.want.Networks) {
				t.Errorf("filters = %+v, want %+v", f, tt.want)
			}
		})
	}
}
