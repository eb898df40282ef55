package provider_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/pin"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// learningBackend knows no tools until told (as a backend of per-caller
// sessions learns them from its first caller).
type learningBackend struct {
	*fakeBackend
	mu      sync.Mutex
	known   []mcpconn.Tool
	learned chan struct{}
}

func (b *learningBackend) ListTools(context.Context) ([]mcpconn.Tool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.known == nil {
		return nil, provider.ErrToolsUnknown
	}
	return b.known, nil
}

func (b *learningBackend) Learned() <-chan struct{} { return b.learned }

func (b *learningBackend) learn(tools []mcpconn.Tool) {
	b.mu.Lock()
	b.known = tools
	b.mu.Unlock()
	b.learned <- struct{}{}
}

type learningLauncher struct {
	mu       sync.Mutex
	backends []*learningBackend
}

func (l *learningLauncher) Launch(context.Context, *config.Server) (provider.Backend, error) {
	b := &learningBackend{fakeBackend: newFakeBackend("kit", nil), learned: make(chan struct{}, 1)}
	l.mu.Lock()
	l.backends = append(l.backends, b)
	l.mu.Unlock()
	return b, nil
}

// TestToolsLearnedLater: a backend whose tools are unknown at its start
// runs without tools and pins nothing (an empty set pinned would
// quarantine the tools it learns); the tools it learns are vetted,
// pinned and served; after a restart, until it learns again, the
// provider keeps serving them.
func TestToolsLearnedLater(t *testing.T) {
	t.Parallel()
	l := &learningLauncher{}
	pins := pin.NewMemory()
	p := provider.New(spec("kit"), l, provider.Options{ToolGate: pin.New(pins)})
	if _, err := p.Start(t.Context(), call.Progress{}); err != nil {
		t.Fatalf("start: %v", err)
	}
	if got, _ := pins.ToolPins(t.Context(), "kit"); len(got) != 0 || len(p.Tools()) != 0 {
		t.Fatalf("before learning: %d pins, %d tools; want none", len(got), len(p.Tools()))
	}
	if p.State() != provider.Ready {
		t.Fatalf("state %s with its tools unknown, want ready", p.State())
	}
	l.backends[0].learn([]mcpconn.Tool{{Name: "whoami", Description: "who"}})
	deadline := time.Now().Add(5 * time.Second)
	for len(p.Tools()) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("learned tools not served: %v", p.Tools())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, q := p.Quarantined(); q {
		t.Fatal("quarantined by the tools it learned")
	}
	if got, _ := pins.ToolPins(t.Context(), "kit"); len(got) != 1 {
		t.Errorf("%d pins after learning, want 1", len(got))
	}
	if err := p.Stop(t.Context(), "test", false); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Start(t.Context(), call.Progress{}); err != nil {
		t.Fatal(err)
	}
	if len(p.Tools()) != 1 {
		t.Errorf("after a restart: %v, want the learned tool kept", p.Tools())
	}
}
