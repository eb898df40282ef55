// Package pin is the rug-pull defence: it records a hash of each provider
// tool (name, title, description, input and output schemas, annotations)
// the first time the provider serves it, or when an operator approves a
// discovered server the catalog the gateway showed them (Approved), and
// compares every later tools/list with the record. A difference comes back as a
// *provider.ToolsChanged naming the tool, the field and old → new, so the
// provider is quarantined until an operator accepts the new set.
package pin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/store"
)

// Gate vets tools against the pins in a store.
type Gate struct {
	Pins store.Pins
	Now  func() time.Time
}

var _ provider.ToolGate = (*Gate)(nil)

// New returns a gate over pins.
func New(pins store.Pins) *Gate { return &Gate{Pins: pins, Now: time.Now} }

// definition is what a pin covers, in a canonical form: schemas and
// annotations re-encoded with sorted keys, so that key order or spacing
// is no change while any value is.
type definition struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	// Approved marks a pin an operator's approval wrote (Approved), not
	// a start: stored with the definition, never part of the hash.
	Approved bool `json:"approved,omitempty"`
}

func canonical(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw // not JSON: compare as sent
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}

func defOf(t mcpconn.Tool) definition {
	return definition{
		Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema:  canonical(t.InputSchema),
		OutputSchema: canonical(t.OutputSchema),
		Annotations:  canonical(t.Annotations),
	}
}

func (d definition) encode() []byte {
	b, _ := json.Marshal(d) // only strings and valid raw JSON
	return b
}

// Hash is the pin of one tool: sha256 over its canonical definition.
func Hash(t mcpconn.Tool) string {
	sum := sha256.Sum256(defOf(t).encode())
	return hex.EncodeToString(sum[:])
}

// emptySet marks a pinned empty tool list, so that a provider that starts
// with no tools and grows some later is a change, not a first pinning.
const emptySet = "empty-tool-set"

// Pins returns the pins of tools, stamped at.
func Pins(server string, tools []mcpconn.Tool, at time.Time) []store.ToolPin {
	if len(tools) == 0 {
		return []store.ToolPin{{Server: server, Tool: "", Hash: emptySet, Definition: json.RawMessage("null"), PinnedAt: at}}
	}
	out := make([]store.ToolPin, 0, len(tools))
	for _, t := range tools {
		out = append(out, store.ToolPin{Server: server, Tool: t.Name, Hash: Hash(t), Definition: defOf(t).encode(), PinnedAt: at})
	}
	return out
}

// Approved returns the pins of the catalog an operator approved: what the
// gateway showed of a discovered server while it waited for approval
// (hangar_details, the dashboard). Its first start is vetted against
// them like any pins, and a difference is reported as changed since the
// approval (provider.ReasonToolsChangedSinceApproval). An empty catalog
// (none was read before the approval) is pinned as such: whatever the
// server then serves is new to the operator.
func Approved(server string, tools []mcpconn.Tool, at time.Time) []store.ToolPin {
	if len(tools) == 0 {
		return []store.ToolPin{{Server: server, Tool: "", Hash: emptySet, Definition: json.RawMessage(`{"approved":true}`), PinnedAt: at}}
	}
	out := make([]store.ToolPin, 0, len(tools))
	for _, t := range tools {
		d := defOf(t)
		h := Hash(t)
		d.Approved = true
		out = append(out, store.ToolPin{Server: server, Tool: t.Name, Hash: h, Definition: d.encode(), PinnedAt: at})
	}
	return out
}

// approved reports whether pinned came from an approval (Approved).
func approved(pinned []store.ToolPin) bool {
	for _, p := range pinned {
		var d struct {
			Approved bool `json:"approved"`
		}
		if json.Unmarshal(p.Definition, &d) == nil && d.Approved {
			return true
		}
	}
	return false
}

// Vet implements provider.ToolGate: nothing pinned yet pins tools.
func (g *Gate) Vet(ctx context.Context, server string, tools []mcpconn.Tool) error {
	pinned, err := g.Pins.ToolPins(ctx, server)
	if err != nil {
		return fmt.Errorf("read tool pins of %s: %w", server, err)
	}
	if len(pinned) == 0 {
		err := g.Accept(ctx, server, tools)
		if err == nil {
			return nil
		}
		// Replicas sharing the store vet a new server at the same moment:
		// the one whose pins collided with another's judges the tools
		// against the pins that won.
		var rerr error
		if pinned, rerr = g.Pins.ToolPins(ctx, server); rerr != nil || len(pinned) == 0 {
			return err
		}
	}
	if changes := Diff(pinned, tools); len(changes) > 0 {
		return &provider.ToolsChanged{Server: server, Changes: changes, SinceApproval: approved(pinned)}
	}
	return nil
}

// Accept implements provider.ToolGate: tools become server's pins.
func (g *Gate) Accept(ctx context.Context, server string, tools []mcpconn.Tool) error {
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	if err := g.Pins.ReplaceToolPins(ctx, server, Pins(server, tools, now().UTC())); err != nil {
		return fmt.Errorf("pin tools of %s: %w", server, err)
	}
	return nil
}

// Diff lists how tools differ from pinned, by tool then field; empty when
// they match.
func Diff(pinned []store.ToolPin, tools []mcpconn.Tool) []provider.ToolChange {
	old := make(map[string]store.ToolPin, len(pinned))
	for _, p := range pinned {
		if p.Tool == "" && p.Hash == emptySet {
			continue
		}
		old[p.Tool] = p
	}
	var changes []provider.ToolChange
	seen := make(map[string]bool, len(tools))
	for _, t := range tools {
		seen[t.Name] = true
		p, ok := old[t.Name]
		if !ok {
			changes = append(changes, provider.ToolChange{Tool: t.Name, Field: "tool", New: "added"})
			continue
		}
		if p.Hash == Hash(t) {
			continue
		}
		var was definition
		if json.Unmarshal(p.Definition, &was) != nil {
			changes = append(changes, provider.ToolChange{Tool: t.Name, Field: "definition", Old: "(pinned definition unreadable)", New: shorten(string(defOf(t).encode()))})
			continue
		}
		changes = append(changes, fieldChanges(was, defOf(t))...)
	}
	for _, p := range old {
		if !seen[p.Tool] {
			changes = append(changes, provider.ToolChange{Tool: p.Tool, Field: "tool", Old: "pinned"})
		}
	}
	// By tool; within a tool the fields keep their fixed order.
	slices.SortStableFunc(changes, func(a, b provider.ToolChange) int { return strings.Compare(a.Tool, b.Tool) })
	return changes
}

func fieldChanges(was, now definition) []provider.ToolChange {
	var out []provider.ToolChange
	add := func(field, a, b string) {
		if a != b {
			out = append(out, provider.ToolChange{Tool: now.Name, Field: field, Old: shown(a), New: shown(b)})
		}
	}
	text := func(field, a, b string) {
		if a != b {
			out = append(out, provider.ToolChange{Tool: now.Name, Field: field, Old: strconv.Quote(shorten(a)), New: strconv.Quote(shorten(b))})
		}
	}
	text("title", was.Title, now.Title)
	text("description", was.Description, now.Description)
	add("inputSchema", string(was.InputSchema), string(now.InputSchema))
	add("outputSchema", string(was.OutputSchema), string(now.OutputSchema))
	add("annotations", string(was.Annotations), string(now.Annotations))
	if len(out) == 0 {
		// Same fields, different hash: the pin came from another hashing.
		out = append(out, provider.ToolChange{Tool: now.Name, Field: "definition", Old: "(pinned hash)", New: "(different hash)"})
	}
	return out
}

// maxShown bounds each old/new value in a diff: enough to read the change.
const maxShown = 300

// shown renders a JSON value of a diff; absent is "(none)".
func shown(s string) string {
	if s == "" {
		return "(none)"
	}
	return shorten(s)
}

func shorten(s string) string {
	if utf8.RuneCountInString(s) <= maxShown {
		return s
	}
	r := []rune(s)
	return string(r[:maxShown]) + "…"
}
