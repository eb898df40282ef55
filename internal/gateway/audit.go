package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// Audit actions.
const (
	ActionToolCall      = "tools/call"  // a hangar_* tool (or a front-door tool)
	ActionHangarCall    = "hangar_call" // one provider call inside hangar_call
	ActionFrontDoorCall = "front_door"  // a provider tool called by its callable name
	// ActionRequest is an HTTP request refused before any method was
	// looked at (401, 429, a scope /events or /metrics needs).
	ActionRequest     = "request"
	auditWriteTimeout = 2 * time.Second
)

// Audit outcomes besides the provider error kinds.
const (
	OutcomeOK        = "ok"
	OutcomeToolError = "tool_error"
	OutcomeError     = "error"
	OutcomeDenied    = "denied"
)

// Log fields of an audit line.
const (
	FieldIdentity = "identity"
	FieldAction   = "action"
	FieldAllowed  = "allowed"
	FieldReason   = "reason"
	FieldOutcome  = "outcome"
)

// auditIdentity names the caller in the audit trail: the token name or
// JWT subject, "anonymous" without one. Never a credential.
func auditIdentity(ctx context.Context) string {
	id, ok := auth.FromContext(ctx)
	if !ok || id.Name == "" {
		return endpoint.AnonymousOwner
	}
	return id.Name
}

// RecordAudit writes one decision on a tool call to the structured log
// and to the audit store (when the gateway has one). Identity and At are
// filled from ctx and the clock when empty. Entries carry names, verdicts
// and kinds only: never argument values, results or error details, which
// may hold secrets. A store write failure is logged, never returned: the
// call it records has already been decided.
func (g *Gateway) RecordAudit(ctx context.Context, e store.AuditEntry) {
	if e.Identity == "" {
		e.Identity = auditIdentity(ctx)
	}
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	level := slog.LevelInfo
	if !e.Allowed {
		level = slog.LevelWarn
		g.Metrics.Refused(e.Reason)
	}
	g.logFrom(ctx).LogAttrs(ctx, level, "audit",
		slog.String(FieldIdentity, e.Identity),
		slog.String(FieldAction, e.Action),
		slog.String(telemetry.FieldTool, e.Tool),
		slog.String(telemetry.FieldServer, e.Server),
		slog.Bool(FieldAllowed, e.Allowed),
		slog.String(FieldReason, e.Reason),
		slog.String(FieldOutcome, e.Outcome),
		slog.Float64(telemetry.FieldDurationMs, e.DurationMs),
	)
	// The stored trail is per provider (what details shows): an allowed
	// hangar_* call that reaches no provider (hangar_list, or hangar_call
	// itself, whose provider calls have entries of their own) is in the
	// log only. Refusals are always stored.
	if g.AuditStore == nil || (e.Server == "" && e.Allowed) {
		return
	}
	// The caller's context may end with the call; the record must not.
	wctx := context.WithoutCancel(ctx)
	if _, queued := g.AuditStore.(*audit.Writer); !queued {
		// A store written synchronously gets a bound; the writer's queue
		// never waits, and a timer per call would be all cost.
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(wctx, auditWriteTimeout)
		defer cancel()
	}
	if err := g.AuditStore.AppendAudit(wctx, e); err != nil && !errors.Is(err, audit.ErrQueueFull) {
		// A full queue is counted and logged by the writer, off the call.
		g.Log.Warn("audit entry not stored", telemetry.FieldServer, e.Server, telemetry.FieldTool, e.Tool, telemetry.FieldError, err)
	}
}

// recentAuditLimit is how many audit entries hangar_details shows.
const recentAuditLimit = 20

// auditProviderCall records one call routed to a provider or group.
// denied says the gateway refused the call before it reached the server
// (its servers, a disabled server).
func (g *Gateway) auditProviderCall(ctx context.Context, action, server, tool string, began time.Time, res *mcp.CallToolResult, err error, denied bool) {
	e := store.AuditEntry{
		Server:     server,
		Action:     action,
		Tool:       tool,
		Allowed:    true,
		DurationMs: float64(time.Since(began).Microseconds()) / 1000,
	}
	var ae *auth.Error
	switch kind := provider.KindOf(err); {
	case errors.As(err, &ae):
		e.Allowed, e.Outcome, e.Reason = false, OutcomeDenied, forbiddenReason(ae)
	case denied && err != nil:
		e.Allowed, e.Outcome, e.Reason = false, OutcomeDenied, denialReason(err, kind)
	case err == nil && res != nil && res.IsError:
		e.Outcome = OutcomeToolError
	case err == nil:
		e.Outcome = OutcomeOK
	case deniedKind(kind):
		e.Allowed, e.Outcome, e.Reason = false, OutcomeDenied, denialReason(err, kind)
	case errors.Is(err, context.DeadlineExceeded):
		e.Outcome = provider.KindTimeout
	default:
		e.Outcome = kind
	}
	g.RecordAudit(ctx, e)
}

// refusedCall fills e for a hangar_* call that was refused rather than
// failed: outside the caller's scopes or servers (authorize's answer), or
// aimed at a server the management policy disabled. It reports whether it
// was.
func (g *Gateway) refusedCall(ctx context.Context, req mcp.CallToolRequest, e *store.AuditEntry) bool {
	id := auth.Caller(ctx)
	if ae := auth.CheckTool(id, req.Params.Name, req.Params.Arguments); ae != nil {
		e.Allowed, e.Outcome, e.Reason = false, OutcomeDenied, forbiddenReason(ae)
		if auth.GatewayTool(req.Params.Name) {
			e.Server = refusedTarget(id, req.Params.Name, req.Params.Arguments)
		}
		return true
	}
	if e.Server == "" {
		return false
	}
	if err := g.refused(e.Server); err != nil {
		e.Allowed, e.Outcome, e.Reason = false, OutcomeDenied, denialReason(err, provider.KindOf(err))
		return true
	}
	return false
}

// Reasons of refusals by the endpoint (seed 004's three codes).
const (
	ReasonForbidden       = "forbidden"
	ReasonUnauthenticated = "unauthenticated"
	ReasonRateLimited     = "rate_limited"
)

// forbiddenReason is the audit reason of a scope or server refusal: the
// kind and seed 004's message, which names the scope or the server the
// caller asked for (never whether it exists).
func forbiddenReason(e *auth.Error) string { return ReasonForbidden + ": " + e.Message }

// auditGuard records a request the scope guard refused (403): the method,
// and for tools/call the tool and the target that was refused.
func (g *Gateway) auditGuard(ctx context.Context, env endpoint.Checked, e *auth.Error) {
	entry := store.AuditEntry{Action: env.Method, Outcome: OutcomeDenied, Reason: forbiddenReason(e)}
	if env.Method == string(mcp.MethodToolsCall) {
		entry.Action, entry.Tool = ActionToolCall, env.Params.Name
		entry.Server = g.toolServer(env.Params.Name)
		if entry.Server == "" {
			var args map[string]any
			_ = json.Unmarshal(env.Params.Arguments, &args)
			entry.Server = refusedTarget(auth.Caller(ctx), env.Params.Name, args)
		}
	}
	g.RecordAudit(ctx, entry)
}

// refusedTarget names the target of a hangar_* call the audit shows: the
// first one outside the caller's servers, else the one the tool acts on.
func refusedTarget(id auth.Identity, tool string, args any) string {
	for _, t := range auth.Targets(args) {
		if !id.MayReach(t) {
			return t
		}
	}
	return actedOn(tool, args)
}

// auditRequest records a request the endpoint refused before reading it:
// a credential refused (401), a bucket empty (429), a scope missing on
// /events or /metrics (403). Never the credential.
func (g *Gateway) auditRequest(r *http.Request, f auth.Refusal) {
	entry := store.AuditEntry{Action: ActionRequest, Tool: r.Method + " " + r.URL.Path, Outcome: OutcomeDenied, Reason: f.Reason, Identity: f.Identity.Name}
	if entry.Identity == "" {
		entry.Identity = endpoint.AnonymousOwner
	}
	g.RecordAudit(r.Context(), entry)
}

// deniedKind reports whether an error kind is the gateway refusing the
// call (policy, quarantine, an unknown target) rather than the call failing.
func deniedKind(kind string) bool {
	switch kind {
	case provider.KindToolNotAllowed, provider.KindUnknownServer, provider.KindUnknownGroup, provider.KindQuarantined:
		return true
	}
	return false
}

// denialReason is the kind plus the gateway's own fixed explanation; a
// provider's error text is never copied here.
func denialReason(err error, kind string) string {
	var pe *provider.Error
	if errors.As(err, &pe) && pe.Detail != "" && kind != provider.KindUnknownServer {
		return kind + ": " + pe.Detail
	}
	return kind
}

// auditToolCall records a call of one of the gateway's own tools.
func (g *Gateway) auditToolCall(ctx context.Context, req mcp.CallToolRequest, began time.Time, res *mcp.CallToolResult, err error) {
	e := store.AuditEntry{
		Action:     ActionToolCall,
		Tool:       req.Params.Name,
		Allowed:    true,
		DurationMs: float64(time.Since(began).Microseconds()) / 1000,
		Outcome:    OutcomeOK,
	}
	// The target's name, never an argument value otherwise.
	if auth.GatewayTool(req.Params.Name) {
		e.Server = actedOn(req.Params.Name, req.Params.Arguments)
	} else {
		e.Server = g.toolServer(req.Params.Name)
	}
	switch {
	case err != nil:
		e.Outcome = OutcomeError
	case res != nil && res.IsError && g.refusedCall(ctx, req, &e):
	case res != nil && res.IsError:
		e.Outcome = OutcomeToolError
		// Wire errors start with their kind ("unknown_mcp_server: x"):
		// keep the kind, not the text.
		if kind, _, found := strings.Cut(textOf(res), ":"); found && !strings.ContainsAny(kind, " \n") {
			e.Outcome = kind
		}
	}
	g.RecordAudit(ctx, e)
}
