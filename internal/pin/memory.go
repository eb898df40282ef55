package pin

import (
	"context"
	"slices"
	"sync"

	"github.com/mcp-hangar/hangar/internal/store"
)

// Memory is a store.Pins that forgets on restart, for a gateway run
// without the durable store.
type Memory struct {
	mu   sync.Mutex
	pins map[string][]store.ToolPin
}

var _ store.Pins = (*Memory)(nil)

// NewMemory returns an empty pin store.
func NewMemory() *Memory { return &Memory{pins: map[string][]store.ToolPin{}} }

// ToolPins implements store.Pins.
func (m *Memory) ToolPins(_ context.Context, server string) ([]store.ToolPin, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.pins[server]), nil
}

// ReplaceToolPins implements store.Pins.
func (m *Memory) ReplaceToolPins(_ context.Context, server string, pins []store.ToolPin) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(pins) == 0 {
		delete(m.pins, server)
		return nil
	}
	m.pins[server] = slices.Clone(pins)
	return nil
}
