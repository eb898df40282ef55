package dockerrt

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// reapEngine lists what it holds; creation and attach wait for the test.
type reapEngine struct {
	API       // unused methods panic
	mu        sync.Mutex
	items     map[string]map[string]string // id → labels
	removed   []string
	createIn  chan struct{} // closed when ContainerCreate is entered
	createGo  chan struct{}
	attachIn  chan struct{}
	attachErr chan error
}

func (e *reapEngine) ImageInspect(context.Context, string, ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	return client.ImageInspectResult{}, nil
}

func (e *reapEngine) ContainerCreate(_ context.Context, o client.ContainerCreateOptions) (client.ContainerCreateResult, error) {
	e.mu.Lock()
	e.items["new"] = o.Config.Labels
	e.mu.Unlock()
	close(e.createIn)
	<-e.createGo
	return client.ContainerCreateResult{ID: "new"}, nil
}

func (e *reapEngine) ContainerAttach(context.Context, string, client.ContainerAttachOptions) (client.ContainerAttachResult, error) {
	close(e.attachIn)
	return client.ContainerAttachResult{}, <-e.attachErr
}

func (e *reapEngine) ContainerList(context.Context, client.ContainerListOptions) (client.ContainerListResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out client.ContainerListResult
	for id, l := range e.items {
		out.Items = append(out.Items, container.Summary{ID: id, Labels: l})
	}
	return out, nil
}

func (e *reapEngine) ContainerRemove(_ context.Context, id string, _ client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.items, id)
	e.removed = append(e.removed, id)
	return client.ContainerRemoveResult{}, nil
}

func (e *reapEngine) has(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.items[id]
	return ok
}

// A reap during a start (a reconcile after an engine reconnect) removes
// the orphan but never the container being created and attached, neither
// before its ID is known nor after; once the start has failed and the
// container is gone from the Runtime's view it is fair game.
func TestReapSparesContainersBeingStarted(t *testing.T) {
	t.Parallel()
	eng := &reapEngine{
		items:     map[string]map[string]string{"orphan": {LabelManaged: "true"}},
		createIn:  make(chan struct{}),
		createGo:  make(chan struct{}),
		attachIn:  make(chan struct{}),
		attachErr: make(chan error),
	}
	r := New(eng, "me", slog.New(slog.NewTextHandler(io.Discard, nil)))
	runErr := make(chan error, 1)
	go func() {
		_, err := r.Run(context.Background(), Spec{ServerID: "math", Image: "img", Stdio: true})
		runErr <- err
	}()

	<-eng.createIn // created on the engine, ID not known to the Runtime yet
	if n, err := r.Reap(t.Context(), nil); err != nil || n != 1 {
		t.Fatalf("Reap during create = %d, %v; want the orphan only", n, err)
	}
	if !eng.has("new") || eng.has("orphan") {
		t.Fatalf("after the reap during create: removed %v", eng.removed)
	}

	close(eng.createGo)
	<-eng.attachIn // ID known, not yet returned to a provider
	eng.mu.Lock()
	delete(eng.items["new"], LabelCreate) // only the ID can protect it now
	eng.mu.Unlock()
	if n, err := r.Reap(t.Context(), nil); err != nil || n != 0 {
		t.Fatalf("Reap during attach = %d, %v; want nothing removed", n, err)
	}

	eng.attachErr <- errors.New("attach failed")
	if err := <-runErr; err == nil {
		t.Fatal("Run succeeded though attach failed")
	}
	eng.mu.Lock()
	eng.items["new"] = map[string]string{} // as if the failed start's removal had not worked
	eng.mu.Unlock()
	if n, _ := r.Reap(t.Context(), nil); n != 1 || eng.has("new") {
		t.Errorf("Reap after the failed start removed %d (all removals: %v); want the dead container", n, eng.removed)
	}
}

func TestReapAllAndGuard(t *testing.T) {
	t.Parallel()
	eng := &reapEngine{items: map[string]map[string]string{"a": {}, "b": {}}}
	r := New(eng, "me", slog.New(slog.NewTextHandler(io.Discard, nil)))
	r.live.add("a")
	if n, err := r.Reap(t.Context(), func(id string) bool { return id == "b" }); err != nil || n != 0 {
		t.Errorf("Reap = %d, %v; want both kept", n, err)
	}
	held := errors.New("lease held elsewhere")
	r.SetGuard(func(context.Context) error { return held })
	if _, err := r.ReapAll(t.Context()); !errors.Is(err, held) {
		t.Errorf("ReapAll under a failing guard = %v", err)
	}
	if _, err := r.Run(t.Context(), Spec{ServerID: "x", Image: "img"}); !errors.Is(err, held) {
		t.Errorf("Run under a failing guard = %v", err)
	}
	r.SetGuard(nil)
	if n, err := r.ReapAll(t.Context()); err != nil || n != 2 {
		t.Errorf("ReapAll = %d, %v; want both removed", n, err)
	}
	slices.Sort(eng.removed)
	if !slices.Equal(eng.removed, []string{"a", "b"}) {
		t.Errorf("removed %v", eng.removed)
	}
}
