package discovery

import (
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/config"
)

// LabelComposeProject is the label docker compose puts on a project's
// containers.
const LabelComposeProject = "com.docker.compose.project"

// Filter decides which labelled containers a docker source sees. Its zero
// value sees them all.
type Filter struct {
	// ComposeProject: "" or config.ComposeAny for any project; a project
	// name for that project's containers only. config.ComposeAuto must be
	// resolved first (ResolveFilter).
	ComposeProject string
	Labels         map[string]string // present; equal when the value is not ""
	Networks       []string          // on at least one (none: any)
}

// ResolveFilter turns configured filters into a Filter: "auto" becomes the
// compose project the gateway runs in (selfProject), or any project when
// it runs in none.
func ResolveFilter(f config.SourceFilters, selfProject string) Filter {
	out := Filter{ComposeProject: f.ComposeProject, Labels: f.Labels, Networks: f.Networks}
	if out.ComposeProject == config.ComposeAuto {
		out.ComposeProject = selfProject
	}
	if out.ComposeProject == config.ComposeAny {
		out.ComposeProject = ""
	}
	return out
}

// Match reports whether the container passes every filter.
func (f Filter) Match(s ContainerSnapshot) bool {
	if f.ComposeProject != "" && s.Labels[LabelComposeProject] != f.ComposeProject {
		return false
	}
	for k, v := range f.Labels {
		got, ok := s.Labels[k]
		if !ok || (v != "" && got != v) {
			return false
		}
	}
	if len(f.Networks) == 0 {
		return true
	}
	for _, n := range f.Networks {
		if _, ok := s.Networks[n]; ok {
			return true
		}
	}
	return false
}

// engineFilters narrows a listing or an event stream on the engine's side
// as far as its label filters can (the engine ANDs them); Match still
// decides.
func (f Filter) engineFilters(base client.Filters) client.Filters {
	if f.ComposeProject != "" {
		base = base.Add("label", LabelComposeProject+"="+f.ComposeProject)
	}
	for k, v := range f.Labels {
		if v == "" {
			base = base.Add("label", k)
		} else {
			base = base.Add("label", k+"="+v)
		}
	}
	return base
}
