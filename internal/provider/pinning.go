package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

// Tool pinning (the rug-pull defence) as the provider sees it: every fresh
// tools/list (start, health check, Probe) goes through Options.ToolGate
// before the gateway serves it. A list that differs from the pinned one
// quarantines the provider: its tools are withheld and calls refused until
// AcceptTools (hangar_approve) re-pins. The hashing, the diff and the
// store live in package pin.

// KindQuarantined is the error kind of a call to a quarantined provider.
const KindQuarantined = "quarantined"

// Quarantine reasons.
const (
	ReasonToolSchemaChanged = "tool_schema_changed"
	// ReasonPinsUnavailable withholds tools while the pins cannot be read:
	// it clears itself at the next successful check.
	ReasonPinsUnavailable = "tool_pins_unavailable"
)

// ToolGate vets a provider's tools against their pins.
type ToolGate interface {
	// Vet pins tools when nothing is pinned for server yet and returns
	// nil; it returns a *ToolsChanged when they differ from the pins, and
	// any other error when the pins cannot be checked.
	Vet(ctx context.Context, server string, tools []mcpconn.Tool) error
	// Accept replaces server's pins with tools.
	Accept(ctx context.Context, server string, tools []mcpconn.Tool) error
}

// ToolChange is one difference between the pinned and the served tools.
type ToolChange struct {
	Tool  string `json:"tool"`
	Field string `json:"field"` // description, inputSchema, …; "tool" when added or removed
	Old   string `json:"old"`   // "" when added
	New   string `json:"new"`   // "" when removed
}

func (c ToolChange) String() string {
	switch {
	case c.Field == "tool" && c.Old == "":
		return fmt.Sprintf("tool %q added", c.Tool)
	case c.Field == "tool" && c.New == "":
		return fmt.Sprintf("tool %q removed", c.Tool)
	}
	return fmt.Sprintf("tool %q %s: %s → %s", c.Tool, c.Field, c.Old, c.New)
}

// ToolsChanged is the gate's verdict on tools that differ from their pins.
type ToolsChanged struct {
	Server  string
	Changes []ToolChange
}

func (e *ToolsChanged) Error() string {
	lines := make([]string, len(e.Changes))
	for i, c := range e.Changes {
		lines[i] = c.String()
	}
	return strings.Join(lines, "\n")
}

// Quarantine is why a provider's tools are withheld.
type Quarantine struct {
	Reason  string
	Detail  string // readable: one line per change
	Changes []ToolChange
	Since   time.Time
	// pending is the tools/list that caused it: what AcceptTools pins.
	pending []mcpconn.Tool
}

// vetTools runs the gate over a fresh tools/list; it does I/O, so it runs
// without p.mu. The result is applied with applyVet under p.mu.
func (p *Provider) vetTools(ctx context.Context, tools []mcpconn.Tool) *Quarantine {
	if p.opts.ToolGate == nil {
		return nil
	}
	err := p.opts.ToolGate.Vet(ctx, p.id, tools)
	if err == nil {
		return nil
	}
	q := &Quarantine{Since: p.opts.Now(), pending: tools}
	if changed, ok := errors.AsType[*ToolsChanged](err); ok {
		q.Reason, q.Changes, q.Detail = ReasonToolSchemaChanged, changed.Changes, changed.Error()
	} else {
		q.Reason, q.Detail = ReasonPinsUnavailable, err.Error()
	}
	return q
}

// applyVet records a vet's verdict; p.mu is held. A tool_schema_changed
// quarantine stays until AcceptTools, even if the provider reverts: the
// operator decides, and a later change replaces what is shown and pinned.
func (p *Provider) applyVet(q *Quarantine, tools []mcpconn.Tool) {
	prev := p.quarantine
	switch {
	case q == nil && prev != nil && prev.Reason == ReasonToolSchemaChanged:
		// Back to the pinned tools: still the operator's call, but what
		// an approval pins is what the provider serves now.
		kept := *prev
		kept.pending = tools
		if !strings.HasSuffix(kept.Detail, revertedNote) {
			kept.Detail += revertedNote
		}
		p.quarantine = &kept
	case q == nil:
		if prev != nil {
			p.log.Info("tools vetted again; quarantine lifted", "reason", prev.Reason)
		}
		p.quarantine = nil
	case prev != nil && prev.Reason == ReasonToolSchemaChanged && q.Reason == ReasonPinsUnavailable:
		// Keep the change the operator has to decide on.
	default:
		if prev != nil && prev.Reason == q.Reason {
			q.Since = prev.Since
		}
		if prev == nil || prev.Detail != q.Detail {
			p.log.Warn("tools withheld: provider quarantined", "reason", q.Reason, "changes", q.Detail)
		}
		p.quarantine = q
	}
}

// revertedNote ends the detail of a quarantine whose provider went back to
// its pinned tools.
const revertedNote = "\n(the provider serves its pinned tools again)"

// Quarantined returns the provider's quarantine, if any.
func (p *Provider) Quarantined() (Quarantine, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.quarantine == nil {
		return Quarantine{}, false
	}
	q := *p.quarantine
	q.Changes = slices.Clone(q.Changes)
	q.pending = nil
	return q, true
}

func (p *Provider) quarantineErr() error {
	p.mu.Lock()
	q := p.quarantine
	p.mu.Unlock()
	if q == nil {
		return nil
	}
	return Errorf(KindQuarantined, p.id, "%s: its tools are withheld; hangar_details shows why, hangar_approve accepts them", q.Reason)
}

// ErrNotQuarantined is AcceptTools' answer for a provider serving its
// pinned tools.
var ErrNotQuarantined = errors.New("not quarantined")

// AcceptTools re-pins the tools that quarantined the provider and serves
// them again. It returns how many tools were pinned.
func (p *Provider) AcceptTools(ctx context.Context) (int, error) {
	p.mu.Lock()
	q := p.quarantine
	p.mu.Unlock()
	if q == nil {
		return 0, ErrNotQuarantined
	}
	if p.opts.ToolGate != nil {
		if err := p.opts.ToolGate.Accept(ctx, p.id, q.pending); err != nil {
			return 0, fmt.Errorf("re-pin %s: %w", p.id, err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.quarantine != nil && p.quarantine.Detail != q.Detail {
		// A different tools/list arrived meanwhile: the operator approved
		// what they saw, not that one.
		return 0, fmt.Errorf("re-pin %s: the tools changed again while approving; look at hangar_details and approve again", p.id)
	}
	p.quarantine = nil
	p.tools = q.pending
	p.log.Info("tools re-pinned; quarantine lifted", "tools", len(q.pending))
	return len(q.pending), nil
}
