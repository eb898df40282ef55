package audit

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// The trail's vocabulary. Every writer of the trail (the gateway's call
// path and hangar_* tools, the endpoint's refusals, mcp/*, the dashboard,
// the egress proxy) names what it records with these, so that one reader
// (hangar_details, the dashboard's refusals) understands them all.

// Actions.
const (
	ActionToolCall      = "tools/call"  // a hangar_* tool (or a front-door tool)
	ActionHangarCall    = "hangar_call" // one provider call inside hangar_call
	ActionFrontDoorCall = "front_door"  // a provider tool called by its callable name
	// ActionRequest is an HTTP request refused before any method was
	// looked at (401, 429, a scope /events or /metrics needs).
	ActionRequest = "request"
	// ActionUpstreamAuth prefixes what happened to a caller's upstream
	// credentials (package upstreamauth): upstream_auth/login_started, /login, /refresh,
	// /refused, /disconnect, /dropped, /exchange, /client_credentials and
	// /callback (a callback refused before it named anyone).
	ActionUpstreamAuth = "upstream_auth/"
)

// Outcomes besides the provider error kinds.
const (
	OutcomeOK        = "ok"
	OutcomeToolError = "tool_error"
	OutcomeError     = "error"
	OutcomeDenied    = "denied"
)

// Reasons of refusals by the endpoint (seed 004's three codes).
const (
	ReasonForbidden       = "forbidden"
	ReasonUnauthenticated = "unauthenticated"
	ReasonRateLimited     = "rate_limited"
)

// Log fields of an audit line.
const (
	FieldIdentity = "identity"
	FieldAction   = "action"
	FieldAllowed  = "allowed"
	FieldReason   = "reason"
	FieldOutcome  = "outcome"
	FieldRule     = "rule"
)

// ForbiddenReason is the reason of a scope or server refusal: the kind and
// seed 004's message, which names the scope or the server the caller asked
// for (never whether it exists).
func ForbiddenReason(e *auth.Error) string { return ReasonForbidden + ": " + e.Message }

// DeniedKind reports whether an error kind is the gateway refusing a call
// (policy, quarantine, an unknown target) rather than the call failing.
func DeniedKind(kind string) bool {
	switch kind {
	case provider.KindToolNotAllowed, provider.KindUnknownServer, provider.KindUnknownGroup, provider.KindQuarantined:
		return true
	}
	return false
}

// DenialReason is the kind plus the gateway's own fixed explanation; a
// provider's error text is never copied here.
func DenialReason(err error, kind string) string {
	var pe *provider.Error
	if errors.As(err, &pe) && pe.Detail != "" && kind != provider.KindUnknownServer {
		return kind + ": " + pe.Detail
	}
	return kind
}

// writeTimeout bounds a synchronous store write of one entry.
const writeTimeout = 2 * time.Second

// Record writes one entry of the trail: its structured log line on log
// (WARN for a refusal), and the stored entry in st unless st is nil or the
// entry is an allowed call that reached no server (hangar_list, or
// hangar_call itself, whose provider calls have entries of their own):
// the stored trail is per server, refusals always. e must have its
// Identity and At. Entries carry names, verdicts and kinds only: never
// argument values, results or error details, which may hold secrets. A
// store failure is logged on warn, never returned: the decision recorded
// has been made already.
func Record(ctx context.Context, log, warn *slog.Logger, st store.Audit, e store.AuditEntry) {
	level := slog.LevelInfo
	if !e.Allowed {
		level = slog.LevelWarn
	}
	attrs := [...]slog.Attr{
		slog.String(FieldIdentity, e.Identity),
		slog.String(FieldAction, e.Action),
		slog.String(telemetry.FieldTool, e.Tool),
		slog.String(telemetry.FieldServer, e.Server),
		slog.Bool(FieldAllowed, e.Allowed),
		slog.String(FieldReason, e.Reason),
		slog.String(FieldOutcome, e.Outcome),
		slog.Float64(telemetry.FieldDurationMs, e.DurationMs),
		slog.String(FieldRule, e.Rule),
	}
	n := len(attrs)
	if e.Rule == "" {
		n-- // no policy rule decided: the line is as it was before policies
	}
	log.LogAttrs(ctx, level, "audit", attrs[:n]...)
	if st == nil || (e.Server == "" && e.Allowed) {
		return
	}
	// The caller's context may end with the call; the record must not.
	wctx := context.WithoutCancel(ctx)
	if _, queued := st.(*Writer); !queued {
		// A store written synchronously gets a bound; the writer's queue
		// never waits, and a timer per call would be all cost.
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(wctx, writeTimeout)
		defer cancel()
	}
	if err := st.AppendAudit(wctx, e); err != nil && !errors.Is(err, ErrQueueFull) {
		// A full queue is counted and logged by the writer, off the call.
		warn.Warn("audit entry not stored", telemetry.FieldServer, e.Server, telemetry.FieldTool, e.Tool, telemetry.FieldError, err)
	}
}
