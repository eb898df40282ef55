package gateway

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/frontdoor"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/policy"
	"github.com/mcp-hangar/hangar/internal/store"
)

// The policy over calls (internal/policy), where the gateway checks
// scopes. Every way a call reaches a provider asks decide:
//
//	callable name over HTTP  the endpoint's guard (guardPolicy), before
//	                         mcp-go: a refusal is the JSON-RPC -32002
//	                         error naming the rule
//	resources/read,          the same guard, for the resource's or the
//	prompts/get over HTTP    prompt's server
//	any tools/call           callServer, the one way a call reaches a
//	(hangar_call's calls,    provider or group: a refusal is the call's
//	 stdio, a name the       error (error_type forbidden in hangar_call)
//	 guard could not bind)
//	reads, gets, completions the front door's Admit hook (admitUse)
//	and subscriptions
//
// A request the guard decided carries its decision in its context
// (withDecided), and the call path uses it instead of deciding again. The
// decision is audited once: a refusal where it is made; an allowed tool
// call in the call's own entry (its rule); an allowed read or get when a
// rule allowed it. Listings (tools/list, hangar_find_tools,
// hangar_details) leave out what policy.Engine.Hidden says no call of the
// caller could pass.

// ReasonPolicy is the audit reason's kind of a refusal by the policy.
const ReasonPolicy = "policy_denied"

// denyAll is the policy of a gateway whose configured one did not
// compile (made only then: compiling needs the CEL environment).
func denyAll() *policy.Policy {
	p, _ := policy.Compile(policy.Spec{Default: policy.Deny})
	return p
}

// setPolicy compiles cfg's policy and puts it in force; a policy that
// does not compile leaves the one in force (the loader has checked it:
// this happens only for a config built in code).
func (g *Gateway) setPolicy(cfg *config.Config) error {
	p, err := policy.Compile(cfg.Policy)
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	g.Policy.Set(p)
	return nil
}

// policyCatalogChanged compiles the own policies of the servers a catalog
// batch added or changed, and forgets those of servers gone or without
// one: the policy's view (listing keys) changes with them, so no listing
// kept under the old policy is served.
func (g *Gateway) policyCatalogChanged(b catalog.Batch) {
	epoch := g.Policy.Epoch()
	defer func() {
		if g.Policy.Epoch() != epoch && g.FrontDoor != nil {
			g.FrontDoor.PolicyChanged()
		}
	}()
	for _, ch := range b {
		srv := g.policyServer(ch.ID)
		if srv.Policy == nil {
			g.Policy.Forget(ch.ID)
			continue
		}
		if err := g.Policy.Prepare(srv); err != nil && g.Log != nil {
			g.Log.Warn("a server's own policy does not compile: its calls are refused", "mcp_server", ch.ID, "error", err)
		}
	}
}

// policyServer is the policy's view of server id (a provider or group).
func (g *Gateway) policyServer(id string) policy.Server {
	s := policy.Server{ID: id}
	e, ok := g.Catalog.Get(id)
	if !ok {
		return s
	}
	s.Source = string(e.Source)
	s.Installed = e.Source == catalog.SourceInstalled
	if e.Spec != nil {
		s.Image, s.Labels, s.Policy = e.Spec.Image, e.Spec.Labels, e.Spec.Policy
	}
	return s
}

// toolOf is the policy's view of tool on server: its callable name and
// annotations, from the front door's binding, else from the catalog the
// provider listed.
func (g *Gateway) toolOf(server, tool string) policy.Tool {
	t := policy.Tool{Name: tool}
	if g.FrontDoor != nil {
		if b := g.FrontDoor.Bound(server, tool); b != nil {
			t.Callable, t.Annotations = b.Callable, b.Annotations()
			return t
		}
	}
	if p, ok := g.Providers.Get(server); ok {
		for _, d := range p.Tools() {
			if d.Name == tool {
				t.Annotations = d.Annotations
				break
			}
		}
	}
	return t
}

// decided is a decision the guard made for the request in a context.
type decided struct {
	method, server, target string // target: the tool, resource URI or prompt name
	d                      policy.Decision
}

type decidedKey struct{}

func withDecided(ctx context.Context, dd *decided) context.Context {
	return context.WithValue(ctx, decidedKey{}, dd)
}

// decidedIn is the guard's decision on method of target on server, if
// the request in ctx carries one.
func decidedIn(ctx context.Context, method, server, target string) (policy.Decision, bool) {
	dd, ok := ctx.Value(decidedKey{}).(*decided)
	if !ok || dd.method != method || dd.server != server || dd.target != target {
		return policy.Decision{}, false
	}
	return dd.d, true
}

// refusalOf is the answer to a call the policy refused: seed 004's
// -32002, naming the rule and carrying its message; never CEL's error,
// which is for the audit.
func refusalOf(d policy.Decision) *auth.Error {
	var msg string
	switch {
	case d.Rule != "" && d.Message != "":
		msg = fmt.Sprintf("Forbidden by policy rule %q: %s", d.Rule, d.Message)
	case d.Rule != "":
		msg = fmt.Sprintf("Forbidden by policy rule %q", d.Rule)
	case errors.Is(d.Err, policy.ErrServerPolicy):
		msg = "Forbidden by policy: the server's own policy does not compile"
	default:
		msg = "Forbidden by policy: no rule allows this call (default: deny)"
	}
	return &auth.Error{Code: auth.CodeInsufficientScope, Message: msg}
}

// quoted are the double-quoted parts of an error, which may hold a value
// read from the arguments (a failed conversion quotes its input: parsing
// "abc"); CEL names types in single quotes, which stay.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// maxPolicyError bounds CEL's error in an audit reason.
const maxPolicyError = 200

// policyError is CEL's error of a decision as the audit keeps it: quoted
// values replaced, bounded; "" for none.
func policyError(d policy.Decision) string {
	if d.Err == nil {
		return ""
	}
	s := quoted.ReplaceAllString(d.Err.Error(), `"…"`)
	if len(s) > maxPolicyError {
		s = s[:maxPolicyError] + "…"
	}
	return s
}

// policyReason is the audit reason of a decision: for a refusal the
// caller's message, and CEL's error when a rule failed (the rule decided
// closed, or an allow rule could not match).
func policyReason(d policy.Decision) string {
	reason := ""
	if !d.Allowed {
		reason = ReasonPolicy + ": " + refusalOf(d).Message
	}
	if e := policyError(d); e != "" {
		if reason != "" {
			reason += "; "
		}
		reason += "rule failed: " + e
	}
	return reason
}

// recordDecision audits a decision made outside a tool call's own entry:
// a refusal, or a use a rule allowed.
func (g *Gateway) recordDecision(ctx context.Context, action, server, tool string, d policy.Decision) {
	if d.Allowed && d.Rule == "" && d.Err == nil {
		return
	}
	e := store.AuditEntry{Action: action, Server: server, Tool: tool, Allowed: d.Allowed, Rule: d.Rule,
		Reason: policyReason(d), Outcome: audit.OutcomeOK}
	if !d.Allowed {
		e.Outcome = audit.OutcomeDenied
	}
	g.RecordAudit(ctx, e)
}

// decideCall is the policy's decision on a tools/call of tool on server
// by caller: the guard's, carried in ctx, or made now. args are the
// call's arguments as the call path has them (raw JSON or a map).
func (g *Gateway) decideCall(ctx context.Context, caller auth.Identity, server, tool string, args any) policy.Decision {
	if d, ok := decidedIn(ctx, string(mcp.MethodToolsCall), server, tool); ok {
		return d
	}
	srv := g.policyServer(server)
	if !g.Policy.Applies(srv) {
		return policy.Decision{Allowed: true}
	}
	a := policy.Action{Method: policy.MethodToolsCall, Protocol: mcpserverProtocol(ctx), Server: srv,
		Tool: g.toolOf(server, tool), Args: args}
	return g.Policy.Decide(ctx, caller.PolicySubject(), a)
}

// mcpserverProtocol is the protocol version of the request mcp-go handles
// in ctx ("" for none).
func mcpserverProtocol(ctx context.Context) string { return server.RequestProtocolVersion(ctx) }

// guardPolicy is the endpoint guard's policy check (endpoint.GuardChecks):
// a callable name's call, a resource's read and a prompt's get are
// decided before mcp-go sees them, so that a refusal is a JSON-RPC error.
// What the guard cannot bind (a hangar_* tool, a name or URI nothing
// serves to the caller) goes on: mcp-go answers it, or the call path
// decides it.
func (g *Gateway) guardPolicy(ctx context.Context, c endpoint.Checked, protocol string) (context.Context, *auth.Error) {
	if g.FrontDoor == nil {
		return ctx, nil
	}
	caller := auth.Caller(ctx)
	var a policy.Action
	var target, tool, action string
	switch c.Method {
	case string(mcp.MethodToolsCall):
		b := g.FrontDoor.Binding(c.Params.Name)
		if b == nil {
			return ctx, nil
		}
		a = policy.Action{Method: policy.MethodToolsCall, Server: g.policyServer(b.Server),
			Tool: policy.Tool{Name: b.Tool, Callable: b.Callable, Annotations: b.Annotations()}, Args: c.Params.Arguments}
		target, tool, action = b.Tool, b.Tool, audit.ActionFrontDoorCall
	case string(mcp.MethodResourcesRead):
		owner, ok := g.FrontDoor.OwnerOf(c.Params.URI)
		if !ok || g.FrontDoor.UnservedURI(ctx, c.Params.URI) {
			return ctx, nil
		}
		a = policy.Action{Method: policy.MethodResourcesRead, Server: g.policyServer(owner), ResourceURI: c.Params.URI}
		target, action = c.Params.URI, c.Method
	case string(mcp.MethodPromptsGet):
		owner, raw, ok := g.FrontDoor.PromptOf(c.Params.Name)
		if !ok || !caller.MayReach(owner) || g.withheld(owner) {
			return ctx, nil // mcp-go answers it as unknown
		}
		a = policy.Action{Method: policy.MethodPromptsGet, Server: g.policyServer(owner), PromptName: raw}
		target, tool, action = raw, raw, c.Method
	default:
		return ctx, nil
	}
	if !g.Policy.Applies(a.Server) {
		return ctx, nil
	}
	a.Protocol = protocol
	d := g.Policy.Decide(ctx, caller.PolicySubject(), a)
	if !d.Allowed || a.Method != policy.MethodToolsCall {
		// A call's own entry records an allowed call, with its rule.
		g.recordDecision(ctx, action, a.Server.ID, tool, d)
	}
	if !d.Allowed {
		return ctx, refusalOf(d)
	}
	return withDecided(ctx, &decided{method: a.Method, server: a.Server.ID, target: target, d: d}), nil
}

// admitUse is the front door's Admit hook: the decision on a read, get,
// completion or subscription, where the guard did not make it already.
func (g *Gateway) admitUse(ctx context.Context, u frontdoor.Use) error {
	target := u.URI
	if u.Prompt != "" {
		target = u.Prompt
	}
	if d, ok := decidedIn(ctx, u.Method, u.Server, target); ok {
		if !d.Allowed {
			return refusalOf(d)
		}
		return nil
	}
	srv := g.policyServer(u.Server)
	if !g.Policy.Applies(srv) {
		return nil
	}
	a := policy.Action{Method: u.Method, Protocol: mcpserverProtocol(ctx), Server: srv, ResourceURI: u.URI, PromptName: u.Prompt}
	d := g.Policy.Decide(ctx, auth.Caller(ctx).PolicySubject(), a)
	g.recordDecision(ctx, u.Method, u.Server, u.Prompt, d)
	if !d.Allowed {
		return refusalOf(d)
	}
	return nil
}

// policyHidden reports whether the policy refuses every call of the
// front door's tool callable by the caller in ctx, whatever its
// arguments: such a tool is not listed to it.
func (g *Gateway) policyHidden(ctx context.Context, callable string) bool {
	if g.FrontDoor == nil || !g.Policy.Active() {
		return false
	}
	b := g.FrontDoor.Binding(callable)
	if b == nil {
		return false
	}
	return g.hiddenBinding(auth.Caller(ctx).PolicySubject(), b, map[string]policy.Server{})
}

func (g *Gateway) hiddenBinding(sub policy.Subject, b *frontdoor.Binding, servers map[string]policy.Server) bool {
	srv, ok := servers[b.Server]
	if !ok {
		srv = g.policyServer(b.Server)
		servers[b.Server] = srv
	}
	if !g.Policy.Applies(srv) {
		return false
	}
	return g.Policy.Hidden(sub, policy.Action{Method: policy.MethodToolsCall, Server: srv,
		Tool: policy.Tool{Name: b.Tool, Callable: b.Callable, Annotations: b.Annotations()}})
}

// policyListFilter is the tool filter of listings: it leaves out the
// front door's tools the policy hides from the caller. A call's check of
// its one tool (mcp-go passes the filters one tool then) is not a
// listing: the call is decided, and its refusal audited, on the call path.
func (g *Gateway) policyListFilter(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	if len(tools) <= 1 || g.FrontDoor == nil || !g.Policy.Active() {
		return tools
	}
	sub := auth.Caller(ctx).PolicySubject()
	servers := map[string]policy.Server{}
	out := tools[:0:0]
	for _, t := range tools {
		if b := g.FrontDoor.Binding(t.Name); b != nil && g.hiddenBinding(sub, b, servers) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// policyView is the caller's view of the policy, for the front door's
// listing keys.
func (g *Gateway) policyView(ctx context.Context) string {
	if !g.Policy.Active() {
		return ""
	}
	return g.Policy.View(auth.Caller(ctx).PolicySubject())
}

// visibleBindings are the front door's bindings of server (hangar_details'
// front_door.tools) without those the policy hides from the caller.
func (g *Gateway) visibleBindings(ctx context.Context, bs []frontdoor.Binding) []frontdoor.Binding {
	if !g.Policy.Active() {
		return bs
	}
	sub := auth.Caller(ctx).PolicySubject()
	servers := map[string]policy.Server{}
	out := make([]frontdoor.Binding, 0, len(bs))
	for _, b := range bs {
		if full := g.FrontDoor.Binding(b.Callable); full != nil && g.hiddenBinding(sub, full, servers) {
			continue
		}
		out = append(out, b)
	}
	return out
}

// visibleTools are server's tools (hangar_details' and hangar_tools'
// tools) without those the policy hides from the caller in ctx.
func (g *Gateway) visibleTools(ctx context.Context, server string, tools []mcpconn.Tool) []mcpconn.Tool {
	if !g.Policy.Active() {
		return tools
	}
	srv := g.policyServer(server)
	if !g.Policy.Applies(srv) {
		return tools
	}
	sub := auth.Caller(ctx).PolicySubject()
	out := make([]mcpconn.Tool, 0, len(tools))
	for _, t := range tools {
		pt := policy.Tool{Name: t.Name, Annotations: t.Annotations}
		if g.FrontDoor != nil {
			if b := g.FrontDoor.Bound(server, t.Name); b != nil {
				pt.Callable = b.Callable
			}
		}
		if !g.Policy.Hidden(sub, policy.Action{Method: policy.MethodToolsCall, Server: srv, Tool: pt}) {
			out = append(out, t)
		}
	}
	return out
}
