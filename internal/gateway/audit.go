package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/policy"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/store"
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

// RecordAudit writes one decision on a tool call to the trail
// (audit.Record: the log line, with the call's correlation ID, and the
// store when the gateway has one) and counts a refusal. Identity and At
// are filled from ctx and the clock when empty.
func (g *Gateway) RecordAudit(ctx context.Context, e store.AuditEntry) {
	if e.Identity == "" {
		e.Identity = auditIdentity(ctx)
	}
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	if !e.Allowed {
		g.Metrics.Refused(e.Reason)
	}
	audit.Record(ctx, g.logFrom(ctx), g.Log, g.AuditStore, e)
}

// recentAuditLimit is how many audit entries hangar_details shows.
const recentAuditLimit = 20

// auditProviderCall records one call routed to a provider or group.
// denied says the gateway refused the call before it reached the server
// (its servers, a disabled server).
func (g *Gateway) auditProviderCall(ctx context.Context, action, server, tool string, began time.Time, res *mcp.CallToolResult, err error, denied bool, dec policy.Decision) {
	e := store.AuditEntry{
		Server:     server,
		Action:     action,
		Tool:       tool,
		Allowed:    true,
		DurationMs: float64(time.Since(began).Microseconds()) / 1000,
		Rule:       dec.Rule,
	}
	var ae *auth.Error
	switch kind := provider.KindOf(err); {
	case dec.Evaluated && !dec.Allowed:
		e.Allowed, e.Outcome, e.Reason = false, audit.OutcomeDenied, policyReason(dec)
	case errors.As(err, &ae):
		e.Allowed, e.Outcome, e.Reason = false, audit.OutcomeDenied, audit.ForbiddenReason(ae)
	case denied && err != nil:
		e.Allowed, e.Outcome, e.Reason = false, audit.OutcomeDenied, audit.DenialReason(err, kind)
	case err == nil && res != nil && res.IsError:
		e.Outcome = audit.OutcomeToolError
	case err == nil:
		e.Outcome = audit.OutcomeOK
	case audit.DeniedKind(kind):
		e.Allowed, e.Outcome, e.Reason = false, audit.OutcomeDenied, audit.DenialReason(err, kind)
	case errors.Is(err, context.DeadlineExceeded):
		e.Outcome = provider.KindTimeout
	default:
		e.Outcome = kind
	}
	if e.Allowed && dec.Err != nil {
		// An allow rule failed: the call went on under another rule or the
		// default, and the audit keeps CEL's error.
		e.Reason = policyReason(dec)
	}
	g.RecordAudit(ctx, e)
	if action == audit.ActionFrontDoorCall {
		markAudited(ctx) // the callable name's call has no other entry
	}
}

// refusedCall fills e for a hangar_* call that was refused rather than
// failed: outside the caller's scopes or servers (authorize's answer), or
// aimed at a server the management policy disabled. It reports whether it
// was.
func (g *Gateway) refusedCall(ctx context.Context, req mcp.CallToolRequest, e *store.AuditEntry) bool {
	id := auth.Caller(ctx)
	if ae := auth.CheckTool(id, req.Params.Name, req.Params.Arguments); ae != nil {
		e.Allowed, e.Outcome, e.Reason = false, audit.OutcomeDenied, audit.ForbiddenReason(ae)
		if auth.GatewayTool(req.Params.Name) {
			e.Server = refusedTarget(id, req.Params.Name, req.Params.Arguments)
		}
		return true
	}
	if e.Server == "" {
		return false
	}
	if err := g.refused(e.Server); err != nil {
		e.Allowed, e.Outcome, e.Reason = false, audit.OutcomeDenied, audit.DenialReason(err, provider.KindOf(err))
		return true
	}
	return false
}

// auditGuard records a request the scope guard refused (403): the method,
// and for tools/call the tool and the target that was refused.
func (g *Gateway) auditGuard(ctx context.Context, env endpoint.Checked, e *auth.Error) {
	entry := store.AuditEntry{Action: env.Method, Outcome: audit.OutcomeDenied, Reason: audit.ForbiddenReason(e)}
	if env.Method == string(mcp.MethodToolsCall) {
		entry.Action, entry.Tool = audit.ActionToolCall, env.Params.Name
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
	entry := store.AuditEntry{Action: audit.ActionRequest, Tool: r.Method + " " + r.URL.Path, Outcome: audit.OutcomeDenied, Reason: f.Reason, Identity: f.Identity.Name}
	if entry.Identity == "" {
		entry.Identity = endpoint.AnonymousOwner
	}
	g.RecordAudit(r.Context(), entry)
}

// auditToolCall records a call of one of the gateway's own tools.
func (g *Gateway) auditToolCall(ctx context.Context, req mcp.CallToolRequest, began time.Time, res *mcp.CallToolResult, err error) {
	e := store.AuditEntry{
		Action:     audit.ActionToolCall,
		Tool:       req.Params.Name,
		Allowed:    true,
		DurationMs: float64(time.Since(began).Microseconds()) / 1000,
		Outcome:    audit.OutcomeOK,
	}
	// The target's name, never an argument value otherwise.
	if auth.GatewayTool(req.Params.Name) {
		e.Server = actedOn(req.Params.Name, req.Params.Arguments)
	} else {
		e.Server = g.toolServer(req.Params.Name)
	}
	switch {
	case err != nil:
		e.Outcome = audit.OutcomeError
	case res != nil && res.IsError && g.refusedCall(ctx, req, &e):
	case res != nil && res.IsError:
		e.Outcome = audit.OutcomeToolError
		// Wire errors start with their kind ("unknown_mcp_server: x"):
		// keep the kind, not the text.
		if kind, _, found := strings.Cut(textOf(res), ":"); found && !strings.ContainsAny(kind, " \n") {
			e.Outcome = kind
		}
	}
	g.RecordAudit(ctx, e)
}
