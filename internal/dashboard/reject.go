package dashboard

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/discovery"
	"github.com/mcp-hangar/hangar/internal/store"
)

// ActionReject is the audit action of the dashboard's Reject.
const ActionReject = "discovery_reject"

// Audit outcomes of a Reject besides the trail's own (audit.OutcomeOK,
// audit.OutcomeDenied, audit.OutcomeError): kinds, never an error's text.
const (
	OutcomeNotFound           = "not_found"
	OutcomeAlreadyQuarantined = "already_quarantined"
)

// rejectTimeout bounds a Reject, which waits for a running scan.
const rejectTimeout = 2 * time.Minute

func (d *Dashboard) canReject() bool { return d.Decisions != nil && d.Audit != nil }

// reject moves a pending candidate to the quarantine list, or revokes the
// approval of an approved one and quarantines it. The guard has
// required hangar:admin (and audited a refusal); a name outside the
// caller's servers is refused here as the tools refuse it, naming the
// server asked for and never whether it exists.
func (d *Dashboard) reject(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("id")
	if !d.canReject() {
		http.Error(w, "actions are not available", http.StatusNotImplemented)
		return
	}
	id := auth.Caller(r.Context())
	entry := store.AuditEntry{Server: name, Action: ActionReject, Allowed: true, Reason: auth.ScopeAdmin}
	if e := id.Check("", name); e != nil {
		entry.Allowed, entry.Outcome, entry.Reason = false, audit.OutcomeDenied, audit.ForbiddenReason(e)
		d.Audit(r.Context(), entry)
		auth.WriteError(w, http.StatusForbidden, nil, e)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), rejectTimeout)
	defer cancel()
	began := time.Now()
	q, err := d.Decisions.Reject(ctx, name, id.Name)
	entry.DurationMs = float64(time.Since(began).Microseconds()) / 1000
	out := actionResult{Server: name}
	switch {
	case err == nil:
		entry.Outcome = audit.OutcomeOK
		out.OK, out.Message = true, "rejected: quarantined ("+q.Reason+")"
	case errors.Is(err, discovery.ErrNotFound):
		entry.Outcome = OutcomeNotFound
	case errors.Is(err, discovery.ErrAlreadyQuarantined):
		entry.Outcome = OutcomeAlreadyQuarantined
	default:
		entry.Outcome = audit.OutcomeError
	}
	d.Audit(r.Context(), entry)
	status := http.StatusOK
	if err != nil {
		out.Message, status = err.Error(), http.StatusConflict
	}
	d.send(w, status, actionFragment(out))
}
