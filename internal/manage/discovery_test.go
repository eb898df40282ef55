package manage_test

import (
	"context"
	"testing"

	"github.com/mcp-hangar/hangar/internal/manage"
)

// A move between discovery's lists reaches /events as one mcp/changed,
// to each reader with the servers it may reach only.
func TestDiscoveryChangedReachesEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	ev := h.subscribe("reader")
	filtered := h.subscribe("filtered")

	h.Svc.DiscoveryChanged(context.Background(), []string{"mine-a", "other"})
	h.Svc.DiscoveryChanged(context.Background(), nil) // nothing moved: no notification

	changed := func(n map[string]any) []map[string]any {
		var out []map[string]any
		for _, c := range n["params"].(map[string]any)["changed"].([]any) {
			out = append(out, c.(map[string]any))
		}
		return out
	}
	if c := changed(ev.next(t, manage.MethodChanged)); len(c) != 2 || c[0]["name"] != "mine-a" || c[1]["name"] != "other" ||
		c[0]["action"] != manage.ActionDiscovery {
		t.Errorf("reader's changes = %v", c)
	}
	if c := changed(filtered.next(t, manage.MethodChanged)); len(c) != 1 || c[0]["name"] != "mine-a" {
		t.Errorf("filtered reader's changes = %v", c)
	}
	// The empty call sent nothing: the next notification is this one.
	h.Svc.DiscoveryChanged(context.Background(), []string{"last"})
	if c := changed(ev.next(t, manage.MethodChanged)); len(c) != 1 || c[0]["name"] != "last" {
		t.Errorf("next change = %v", c)
	}
}
