package discovery

import (
	"context"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/config"
)

func TestResolveFilter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		configured, self, want string
	}{
		{config.ComposeAuto, "stack", "stack"},
		{config.ComposeAuto, "", ""},
		{config.ComposeAny, "stack", ""},
		{"other", "stack", "other"},
		{"", "stack", ""},
	}
	for _, tt := range tests {
		got := ResolveFilter(config.SourceFilters{ComposeProject: tt.configured}, tt.self)
		if got.ComposeProject != tt.want {
			t.Errorf("ResolveFilter(%q, self %q) = %q, want %q", tt.configured, tt.self, got.ComposeProject, tt.want)
		}
	}
}

func TestFilterMatch(t *testing.T) {
	t.Parallel()
	snap := func(project string, labels map[string]string, nets ...string) ContainerSnapshot {
		l := map[string]string{LabelEnabled: "true"}
		if project != "" {
			l[LabelComposeProject] = project
		}
		for k, v := range labels {
			l[k] = v
		}
		n := map[string]string{}
		for _, x := range nets {
			n[x] = ""
		}
		return ContainerSnapshot{Labels: l, Networks: n}
	}
	tests := []struct {
		name   string
		filter Filter
		snap   ContainerSnapshot
		want   bool
	}{
		{"zero filter sees all", Filter{}, snap("a", nil), true},
		{"zero filter sees no project", Filter{}, snap("", nil), true},
		{"own project", Filter{ComposeProject: "a"}, snap("a", nil), true},
		{"other project", Filter{ComposeProject: "a"}, snap("b", nil), false},
		{"no project when one is asked", Filter{ComposeProject: "a"}, snap("", nil), false},
		{"label equal", Filter{Labels: map[string]string{"team": "x"}}, snap("", map[string]string{"team": "x"}), true},
		{"label differs", Filter{Labels: map[string]string{"team": "x"}}, snap("", map[string]string{"team": "y"}), false},
		{"label missing", Filter{Labels: map[string]string{"team": "x"}}, snap("", nil), false},
		{"label presence", Filter{Labels: map[string]string{"team": ""}}, snap("", map[string]string{"team": "y"}), true},
		{"label presence missing", Filter{Labels: map[string]string{"team": ""}}, snap("", nil), false},
		{"all labels needed", Filter{Labels: map[string]string{"a": "1", "b": "2"}}, snap("", map[string]string{"a": "1"}), false},
		{"one of the networks", Filter{Networks: []string{"n1", "n2"}}, snap("", nil, "n2", "bridge"), true},
		{"none of the networks", Filter{Networks: []string{"n1"}}, snap("", nil, "bridge"), false},
		{"every filter at once", Filter{ComposeProject: "a", Labels: map[string]string{"t": "1"}, Networks: []string{"n"}},
			snap("a", map[string]string{"t": "1"}, "n"), true},
		{"every filter but one", Filter{ComposeProject: "a", Labels: map[string]string{"t": "1"}, Networks: []string{"n"}},
			snap("a", map[string]string{"t": "1"}, "m"), false},
	}
	for _, tt := range tests {
		if got := tt.filter.Match(tt.snap); got != tt.want {
			t.Errorf("%s: Match = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// listOnly answers a listing with fixed containers and records its filters.
type listOnly struct {
	fakeDocker
	items []container.Summary
	asked client.Filters
}

func (l *listOnly) ContainerList(_ context.Context, o client.ContainerListOptions) (client.ContainerListResult, error) {
	l.asked = o.Filters
	return client.ContainerListResult{Items: l.items}, nil
}

// A source scoped to one compose project neither lists nor reports the
// containers of another, even broken ones, and asks the engine to filter.
func TestDockerListScoped(t *testing.T) {
	t.Parallel()
	ctr := func(id, project, port string) container.Summary {
		return container.Summary{ID: id, Names: []string{"/" + id}, State: container.StateRunning,
			Labels: map[string]string{LabelEnabled: "true", LabelComposeProject: project, LabelPort: port},
			NetworkSettings: &container.NetworkSettingsSummary{Networks: map[string]*network.EndpointSettings{
				"bridge": {IPAddress: netip.MustParseAddr("172.17.0.2")}}}}
	}
	inspects := &atomic.Int32{}
	api := &listOnly{fakeDocker: fakeDocker{inspects: inspects},
		items: []container.Summary{ctr("mine", "a", "8080"), ctr("theirs-broken", "b", "abc")}}
	d := NewDocker(api, config.Source{Type: "docker", Filters: config.SourceFilters{ComposeProject: "a"}}, nil, quietLog())
	got, err := d.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Problems) != 0 {
		t.Errorf("problems %v: another project's broken container was reported", got.Problems)
	}
	if len(got.Candidates) != 1 || got.Candidates[0].ContainerID != "mine" {
		t.Errorf("candidates %+v, want only the container of project a", got.Candidates)
	}
	if n := inspects.Load(); n != 0 {
		t.Errorf("%d inspects, want none", n)
	}
	if l := api.asked["label"]; !l[LabelComposeProject+"=a"] || !l[LabelEnabled+"=true"] {
		t.Errorf("engine filters %v, want the project and enabled labels", api.asked)
	}
}
