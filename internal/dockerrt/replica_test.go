package dockerrt

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// labelEngine lists its containers as the engine does: every label filter
// must match.
type labelEngine struct {
	API // unused methods panic
	mu  sync.Mutex
	// items: id → labels
	items   map[string]map[string]string
	removed []string
}

func (e *labelEngine) ContainerList(_ context.Context, o client.ContainerListOptions) (client.ContainerListResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out client.ContainerListResult
	for id, labels := range e.items {
		match := true
		for f := range o.Filters["label"] {
			k, v, _ := strings.Cut(f, "=")
			match = match && labels[k] == v
		}
		if match {
			out.Items = append(out.Items, container.Summary{ID: id, Labels: labels})
		}
	}
	return out, nil
}

func (e *labelEngine) ContainerRemove(_ context.Context, id string, _ client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.items, id)
	e.removed = append(e.removed, id)
	return client.ContainerRemoveResult{}, nil
}

func (e *labelEngine) takeRemoved() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.removed
	e.removed = nil
	slices.Sort(out)
	return out
}

// TestReplicaLabelsAndReaps: a replica labels its containers with its
// name, reaps only its own, and reaps all of another replica's on demand.
func TestReplicaLabelsAndReaps(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		replica string
		want    map[string]string
	}{
		{"gw-1", map[string]string{LabelReplica: "gw-1"}},
		{"", nil},
	} {
		cfg, _, _, err := Build(Spec{ServerID: "x", Image: "img", Owner: "prod", Replica: tt.replica})
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := cfg.Labels[LabelReplica]; ok != (tt.want != nil) || v != tt.want[LabelReplica] {
			t.Errorf("replica %q: label %q (present %v)", tt.replica, v, ok)
		}
	}

	managed := func(owner, replica string) map[string]string {
		l := map[string]string{LabelManaged: "true", LabelOwner: owner, LabelServer: "s"}
		if replica != "" {
			l[LabelReplica] = replica
		}
		return l
	}
	eng := &labelEngine{items: map[string]map[string]string{
		"mine":         managed("prod", "gw-1"),
		"mine2":        managed("prod", "gw-1"),
		"other":        managed("prod", "gw-2"),
		"unreplicated": managed("prod", ""),
		"staging":      managed("staging", "gw-2"),
	}}
	r := New(eng, "prod", slog.New(slog.NewTextHandler(io.Discard, nil)))
	r.SetReplica("gw-1")
	if n, err := r.ReapAll(t.Context()); err != nil || n != 2 {
		t.Errorf("ReapAll = %d, %v", n, err)
	}
	if got := eng.takeRemoved(); !slices.Equal(got, []string{"mine", "mine2"}) {
		t.Errorf("ReapAll removed %v, want this replica's only", got)
	}
	if n, err := r.ReapReplica(t.Context(), "gw-2"); err != nil || n != 1 {
		t.Errorf("ReapReplica(gw-2) = %d, %v", n, err)
	}
	if got := eng.takeRemoved(); !slices.Equal(got, []string{"other"}) {
		t.Errorf("ReapReplica removed %v, want gw-2's of this instance only", got)
	}
	for _, bad := range []string{"gw-1", ""} {
		if _, err := r.ReapReplica(t.Context(), bad); err == nil {
			t.Errorf("ReapReplica(%q): no error", bad)
		}
	}
	if got := eng.takeRemoved(); got != nil {
		t.Errorf("refused reaps removed %v", got)
	}
}
