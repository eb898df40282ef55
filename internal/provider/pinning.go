package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
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
	// ReasonToolsChangedSinceApproval: a discovered server serves other
	// tools than the catalog its approval pinned (what the operator was
	// shown while it was pending).
	ReasonToolsChangedSinceApproval = "tools_changed_since_approval"
	// ReasonPinsUnavailable withholds tools while the pins cannot be read:
	// it clears itself at the next successful check.
	ReasonPinsUnavailable = "tool_pins_unavailable"
	// ReasonImageChanged and ReasonSignatureInvalid come from the image
	// gate (a Preparer): the provider is not started at all until
	// approved, since what would run is not what was approved.
	ReasonImageChanged     = "image_changed"
	ReasonSignatureInvalid = "signature_invalid"
)

// Refusal is a Preparer's error that quarantines the provider rather than
// only failing the start: the image gate's image_changed and
// signature_invalid (backend.RefusedError).
type Refusal interface {
	error
	QuarantineReason() (reason, detail string)
}

// ImageApprover records the image a provider's reference resolves to now
// as the approved one (backend.ImageGate.Approve); hangar_approve of an
// image_changed quarantine calls it.
type ImageApprover interface {
	Approve(ctx context.Context, spec *config.Server) error
}

// QuarantineStore keeps quarantines across restarts, so that one is shown
// and enforced from the start until an operator approves it.
type QuarantineStore interface {
	// Restored is the quarantine server had when the gateway last ran.
	Restored(server string) (Quarantine, bool)
	// Save records server's quarantine (a new one or a changed detail).
	Save(ctx context.Context, server string, q Quarantine) error
	// Lift forgets server's quarantine; none is not an error.
	Lift(ctx context.Context, server string) error
}

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
	// SinceApproval: the pins are the catalog an operator approved, not
	// one the server served before.
	SinceApproval bool
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
	// Image is the image reference an image verdict (image_changed,
	// signature_invalid) was about; "" for a tool verdict. A restored one
	// no longer applies once the server runs another reference.
	Image string
	// pending is the tools/list that caused it: what AcceptTools pins.
	pending []mcpconn.Tool
	// restored: read back from the QuarantineStore at start-up, so
	// pending is unknown until the provider runs and is vetted again.
	restored bool
}

// toolChange reports whether the quarantine is about tools that differ
// from their pins (whoever pinned them): it holds until an approval,
// whatever the provider serves meanwhile.
func (q *Quarantine) toolChange() bool {
	return q.Reason == ReasonToolSchemaChanged || q.Reason == ReasonToolsChangedSinceApproval
}

// blocksStart reports whether the quarantine keeps the provider from being
// started at all (its image is not the approved one), rather than only
// withholding its tools.
func (q *Quarantine) blocksStart() bool {
	return q.Reason == ReasonImageChanged || q.Reason == ReasonSignatureInvalid
}

// persistKey is what a QuarantineStore holds of q; "" for none. A
// tool_pins_unavailable quarantine clears itself and is not kept.
func persistKey(q *Quarantine) string {
	if q == nil || q.Reason == ReasonPinsUnavailable {
		return ""
	}
	return q.Reason + "\x00" + q.Detail
}

// restoreQuarantine puts back the quarantine the store kept for p; called
// by New before p is shared.
func (p *Provider) restoreQuarantine() {
	if p.opts.Quarantines == nil {
		return
	}
	q, ok := p.opts.Quarantines.Restored(p.id)
	if !ok {
		return
	}
	if q.blocksStart() && q.Image != p.spec.Image {
		// An image verdict about a reference the server no longer runs
		// (the operator changed it): the image gate judges the new one,
		// and the next sync deletes the stale record.
		p.savedQuarantine = persistKey(&q)
		return
	}
	q.restored, q.pending, q.Changes = true, nil, slices.Clone(q.Changes)
	p.quarantine = &q
	p.savedQuarantine = persistKey(&q)
}

// syncQuarantine writes p's quarantine to the QuarantineStore when it
// differs from what was last written. It does I/O, so it runs without
// p.mu; persistMu orders concurrent syncs so the last one writes the
// latest state. A failed write is logged: the quarantine still holds in
// memory, and the next sync retries.
func (p *Provider) syncQuarantine(ctx context.Context) {
	qs := p.opts.Quarantines
	p.persistMu.Lock()
	defer p.persistMu.Unlock()
	p.mu.Lock()
	var q *Quarantine
	if p.quarantine != nil {
		c := *p.quarantine
		q = &c
	}
	p.mu.Unlock()
	want := persistKey(q)
	if want != p.toldQuarantine {
		p.toldQuarantine = want
		p.events().QuarantineChanged(p.id)
	}
	if qs == nil || want == p.savedQuarantine {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), quarantineWriteTimeout)
	defer cancel()
	var err error
	if want == "" {
		err = qs.Lift(ctx, p.id)
	} else {
		err = qs.Save(ctx, p.id, *q)
	}
	if err != nil {
		p.log.Error("quarantine not recorded in the store; it holds until this gateway stops", "error", err)
		return
	}
	p.savedQuarantine = want
}

const quarantineWriteTimeout = 10 * time.Second

// refused quarantines p for a Preparer's Refusal; p.mu is held.
func (p *Provider) refused(r Refusal) *Error {
	reason, detail := r.QuarantineReason()
	prev := p.quarantine
	q := &Quarantine{Reason: reason, Detail: detail, Since: p.opts.Now(), Image: p.spec.Image}
	if prev != nil && prev.Reason == reason {
		q.Since = prev.Since
	}
	if prev == nil || prev.Detail != detail {
		p.log.Warn("image refused: provider quarantined", "reason", reason, "detail", detail)
	}
	p.quarantine = q
	return p.quarantineErrLocked()
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
		if changed.SinceApproval {
			q.Reason = ReasonToolsChangedSinceApproval
		}
	} else {
		q.Reason, q.Detail = ReasonPinsUnavailable, err.Error()
	}
	return q
}

// applyVet records a vet's verdict; p.mu is held. A tool_schema_changed
// (or tools_changed_since_approval) quarantine stays until AcceptTools,
// even if the provider reverts: the
// operator decides, and a later change replaces what is shown and pinned.
func (p *Provider) applyVet(q *Quarantine, tools []mcpconn.Tool) {
	prev := p.quarantine
	switch {
	case prev != nil && prev.blocksStart():
		// Not reached in practice (such a provider is not started); the
		// image verdict is the one the operator has to decide on.
	case q == nil && prev != nil && prev.toolChange():
		// Back to the pinned tools: still the operator's call, but what
		// an approval pins is what the provider serves now.
		kept := *prev
		kept.pending, kept.restored = tools, false
		if !strings.HasSuffix(kept.Detail, revertedNote) {
			kept.Detail += revertedNote
		}
		p.quarantine = &kept
	case q == nil:
		if prev != nil {
			p.log.Info("tools vetted again; quarantine lifted", "reason", prev.Reason)
		}
		p.quarantine = nil
	case prev != nil && prev.toolChange() && q.Reason == ReasonPinsUnavailable:
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

// InQuarantine reports whether the provider is quarantined, without the
// copy Quarantined makes (asked per listed tool).
func (p *Provider) InQuarantine() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.quarantine != nil
}

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
	defer p.mu.Unlock()
	if p.quarantine == nil {
		return nil
	}
	return p.quarantineErrLocked()
}

// quarantineErrLocked is the answer to a call while quarantined; p.mu is
// held and p.quarantine set. An image verdict names both digests (no
// secret): the operator needs them to decide; a tool diff can be long and
// is in hangar_details.
func (p *Provider) quarantineErrLocked() *Error {
	q := p.quarantine
	if q.blocksStart() {
		return Errorf(KindQuarantined, p.id, "%s: %s; it is not started until hangar_approve accepts it", q.Reason, q.Detail)
	}
	return Errorf(KindQuarantined, p.id, "%s: its tools are withheld; hangar_details shows why, hangar_approve accepts them", q.Reason)
}

// ErrNotQuarantined is AcceptTools' answer for a provider serving its
// pinned tools.
var ErrNotQuarantined = errors.New("not quarantined")

// Approval is what hangar_approve lifted.
type Approval struct {
	Reason string
	// Tools is how many tools were pinned (tool_schema_changed).
	Tools int
}

// AcceptTools approves p's quarantine (Approve) and returns how many tools
// were pinned.
func (p *Provider) AcceptTools(ctx context.Context) (int, error) {
	a, err := p.Approve(ctx)
	return a.Tools, err
}

// Approve lifts p's quarantine, whichever reason caused it: a changed
// tools/list is re-pinned (ToolGate.Accept), a changed image's digest is
// recorded as approved (ImageApprover). The store's record goes with it.
func (p *Provider) Approve(ctx context.Context) (Approval, error) {
	p.mu.Lock()
	q := p.quarantine
	p.mu.Unlock()
	if q == nil {
		return Approval{}, ErrNotQuarantined
	}
	var a Approval
	var err error
	if q.blocksStart() {
		a, err = p.approveImage(ctx, q)
	} else {
		a, err = p.acceptTools(ctx, q)
	}
	if err == nil {
		p.syncQuarantine(ctx)
	}
	return a, err
}

// approveImage records the image the reference resolves to now as the
// approved one; the next call starts it.
func (p *Provider) approveImage(ctx context.Context, q *Quarantine) (Approval, error) {
	if p.opts.Images != nil {
		if err := p.opts.Images.Approve(ctx, p.spec); err != nil {
			return Approval{}, fmt.Errorf("approve the image of %s: %w", p.id, err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.quarantine != nil && p.quarantine.Detail != q.Detail {
		return Approval{}, fmt.Errorf("approve %s: the image changed again while approving; look at hangar_details and approve again", p.id)
	}
	p.quarantine = nil
	// What failed was the image, not the server: no backoff is owed.
	p.startFailures, p.retryAt, p.lastErr = 0, time.Time{}, nil
	p.log.Info("image approved; quarantine lifted", "reason", q.Reason)
	return Approval{Reason: q.Reason}, nil
}

// acceptTools re-pins the tools that quarantined the provider and serves
// them again.
func (p *Provider) acceptTools(ctx context.Context, q *Quarantine) (Approval, error) {
	if q.restored {
		// Kept from before a restart: what the provider serves now is
		// unknown until it runs and is vetted again. Its image was
		// pulled when it first ran: this start reports no progress.
		if _, err := p.Ensure(ctx, call.Progress{}, true, false); err != nil {
			return Approval{}, fmt.Errorf("re-pin %s: start it to see the tools it serves: %w", p.id, err)
		}
		p.mu.Lock()
		q = p.quarantine
		p.mu.Unlock()
		if q == nil {
			return Approval{}, ErrNotQuarantined
		}
		if q.restored {
			return Approval{}, fmt.Errorf("re-pin %s: its tools could not be vetted; look at hangar_details and approve again", p.id)
		}
	}
	if p.opts.ToolGate != nil {
		if err := p.opts.ToolGate.Accept(ctx, p.id, q.pending); err != nil {
			return Approval{}, fmt.Errorf("re-pin %s: %w", p.id, err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.quarantine != nil && p.quarantine.Detail != q.Detail {
		// A different tools/list arrived meanwhile: the operator approved
		// what they saw, not that one.
		return Approval{}, fmt.Errorf("re-pin %s: the tools changed again while approving; look at hangar_details and approve again", p.id)
	}
	p.quarantine = nil
	p.tools = q.pending
	p.log.Info("tools re-pinned; quarantine lifted", "tools", len(q.pending))
	return Approval{Reason: q.Reason, Tools: len(q.pending)}, nil
}

// Reconsider lifts p's quarantine once another gateway replica approved
// it (the caller saw its record leave the shared store), where that is
// safe without asking the operator again:
//   - an image verdict: lifted; the image gate judges the next start
//     against the digest approved now (and quarantines again if it
//     differs);
//   - changed tools it holds back: lifted only if they match the pins now
//     (the approval re-pinned them);
//   - a quarantine restored at start-up, whose tools were not seen since:
//     lifted; the next start vets them.
//
// It reports whether it lifted the quarantine.
func (p *Provider) Reconsider(ctx context.Context) bool {
	p.mu.Lock()
	q := p.quarantine
	p.mu.Unlock()
	if q == nil || q.Reason == ReasonPinsUnavailable {
		return false
	}
	vetted := !q.blocksStart() && !q.restored
	if vetted {
		if p.opts.ToolGate == nil || q.pending == nil || p.opts.ToolGate.Vet(ctx, p.id, q.pending) != nil {
			return false
		}
	}
	p.mu.Lock()
	if p.quarantine != q { // changed meanwhile: that one is decided afresh
		p.mu.Unlock()
		return false
	}
	p.quarantine = nil
	if vetted {
		p.tools = q.pending
	} else {
		p.startFailures, p.retryAt, p.lastErr = 0, time.Time{}, nil
	}
	p.mu.Unlock()
	p.log.Info("quarantine lifted: approved on another replica", "reason", q.Reason)
	p.syncQuarantine(ctx)
	return true
}
