// Package gateway is the call path and the hangar_* tools: it builds the
// MCP server (tools, their access checks and audit, the tool chain), runs
// calls on providers and groups (directly, in batches, by callable name
// through the front door), and composes the HTTP endpoint (http.go) from
// internal/endpoint's pipeline, this package's stages and routing rows,
// and the front door.
//
// Where a request goes: internal/endpoint (origin, auth, endpoint.Checked,
// sessions, routing table) → gateway (scope and policy guard, direct call,
// mcp-go's tool handlers, hangar_* tools; policy.go says where the policy
// over calls is decided) → internal/frontdoor (callable names,
// listing, search) and internal/relay (progress, sampling, elicitation,
// roots) → internal/provider and internal/group → the provider.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/batch"
	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/frontdoor"
	"github.com/mcp-hangar/hangar/internal/group"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/metrics"
	"github.com/mcp-hangar/hangar/internal/policy"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/readmodel"
	"github.com/mcp-hangar/hangar/internal/relay"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// Version is the gateway's version as it introduces itself.
var Version = "dev"

// Gateway holds what the tools act on.
type Gateway struct {
	Providers *provider.Manager
	// Groups serves the configured groups; their members are in Providers.
	Groups *group.Registry
	// Catalog owns which IDs exist and applies them to Providers and
	// Groups; the config file is its "config" and "group" sources.
	Catalog   *catalog.Catalog
	Cache     *batch.Cache
	Metrics   *metrics.Metrics
	Engine    *dockerrt.EngineState // nil when no Docker engine is used
	Discovery DiscoveryService      // nil when discovery is off
	// HotLoad serves hangar_load and hangar_unload; nil when hot-loading
	// is off (registry.url and registry.catalog_file both empty).
	HotLoad HotLoader
	// Store shows in hangar_health; nil when there is none.
	Store StoreStatus
	// Images shows image pulls and digests; nil when no engine is used.
	Images ImageInfo
	// AuditStore receives every decision on a tool call (audit.go); nil
	// keeps the audit trail in the log only.
	AuditStore store.Audit
	// Pins are the tool pins; hangar_approve of a discovered server pins
	// the catalog the operator was shown (pinApproved). nil: none.
	Pins store.Pins
	// Management serves the mcp/* methods and /events (seed 003); nil
	// leaves them out.
	Management endpoint.Management
	// Refuse, when set, is asked before a call or start reaches a server:
	// a non-nil error (a server disabled by policy) is the answer.
	Refuse func(id string) error
	// Hooks are mcp-go session hooks (the management notifier tracks
	// sessions with them); nil for none.
	Hooks *server.Hooks
	// Exposed, when set, overrides a server's expose for the front door:
	// the management policy's allow_implicit_invocation of an installed
	// server (ok false: no policy, the spec's expose holds).
	Exposed func(id string) (exposed, ok bool)
	// EgressDetails, when set, is hangar_details' "egress" of a server
	// (its allow-list and recent refusals); nil for a server without
	// egress control.
	EgressDetails func(id string) any
	// Views is the read model hangar_details answers from (the app shares
	// it with mcp/* and the dashboard); nil reads the fields above.
	Views *readmodel.Model
	// FrontDoor lists provider tools by callable name; nil in egress mode.
	// MCPServer builds it.
	FrontDoor *frontdoor.FrontDoor
	Log       *slog.Logger
	Started   time.Time
	// RateLimiter holds the HTTP endpoint's per-client buckets;
	// hangar_health reports them.
	RateLimiter *auth.Limiter
	// Telemetry makes spans and MCP metrics (tracing.go); nil is off.
	Telemetry *telemetry.Telemetry
	// OnConfig, when set, is told of every configuration put in force by a
	// reload (app uses it to apply auth changes to the HTTP endpoint).
	OnConfig func(*config.Config)
	// Policy is the policy over calls in force (policy.go): the config's,
	// replaced by each reload.
	Policy *policy.Engine

	cfgMu sync.RWMutex
	cfg   *config.Config
	// batch is swapped whole on reload, so a batch in flight keeps the
	// limits it started with.
	batch    atomic.Pointer[batch.Executor]
	reloadMu sync.Mutex
	// rounds keeps the calls of 2026-07-28 clients that wait for their
	// input to a provider's request (relay_rounds.go).
	rounds *relay.InputRounds
	// chains: the tool chain of each MCP server MCPServer built.
	chains sync.Map // *server.MCPServer → toolChain
	// directCount counts the calls run directly (calls.go), for tests.
	directCount atomic.Int64
	// replica is named by the ids this gateway mints (SetReplica).
	replica string
}

// SetReplica makes the ids this gateway mints (sessions, continuations,
// requestStates) name replica, so that the other replicas pass requests
// carrying them here (package forward); "" without replicas. Call it
// before HTTP.
func (g *Gateway) SetReplica(name string) {
	g.replica = name
	g.Cache.SetReplica(name)
	g.rounds.Replica = name
}

// New returns a gateway over the given parts.
func New(cfg *config.Config, providers *provider.Manager, engine *dockerrt.EngineState, m *metrics.Metrics, log *slog.Logger) *Gateway {
	g := &Gateway{
		Providers: providers,
		Groups:    group.NewRegistry(providers, group.Options{Log: log}),
		Cache:     batch.NewCacheFor(cfg.Batch),
		Metrics:   m,
		Engine:    engine,
		Log:       log,
		Started:   time.Now(),
		cfg:       cfg,
		// 10 000 buckets of a few hundred bytes; an idle client's bucket
		// is full again long before ten minutes pass.
		RateLimiter: auth.NewLimiter(10000, 10*time.Minute, nil),
		rounds:      relay.NewInputRounds(relay.InputTTL, relay.MaxAwaitingInput),
		Policy:      policy.NewEngine(nil),
	}
	if err := g.setPolicy(cfg); err != nil {
		// The loader compiles the policy: only a config built in code
		// gets here. Nothing is allowed that the policy would refuse.
		g.Policy.Set(denyAll())
		if log != nil {
			log.Error("policy not in force: every call is refused", "error", err)
		}
	}
	clog := slog.New(slog.DiscardHandler)
	if log != nil {
		clog = log.With("component", "catalog")
	}
	g.Catalog = catalog.New(catalog.Apply{Providers: providers, Groups: g.Groups}, clog)
	g.Catalog.Subscribe(g.policyCatalogChanged)
	g.setBatchLimits(cfg)
	return g
}

func (g *Gateway) setBatchLimits(cfg *config.Config) {
	g.batch.Store(&batch.Executor{Invoke: g.invoke, Limits: batch.LimitsFor(cfg.Batch), Cache: g.Cache, Log: g.Log})
}

// Batch is the executor of hangar_call.
func (g *Gateway) Batch() *batch.Executor { return g.batch.Load() }

// Config returns the configuration in force.
func (g *Gateway) Config() *config.Config {
	g.cfgMu.RLock()
	defer g.cfgMu.RUnlock()
	return g.cfg
}

func (g *Gateway) setConfig(c *config.Config) {
	g.cfgMu.Lock()
	g.cfg = c
	g.cfgMu.Unlock()
	if g.OnConfig != nil {
		g.OnConfig(c)
	}
}

// invoke is the batch executor's way to a tool; a group's ID routes the
// call through the group.
func (g *Gateway) invoke(ctx context.Context, rq *call.Request, server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	return g.callServer(ctx, rq, audit.ActionHangarCall, server, tool, args)
}

// exposed reports whether the front door lists id's tools.
func (g *Gateway) exposed(id string, spec *config.Server) bool {
	if g.Exposed != nil {
		if e, ok := g.Exposed(id); ok {
			return e
		}
	}
	return spec == nil || !spec.Hidden
}

// callServer is the one way a call reaches a provider or group, for
// hangar_call and the front door alike: the caller's server filter, the
// management policy, the policy over calls (policy.go), then the group or
// provider; every call is audited under action, with the rule that
// decided it. args go on as they are (a map, or raw JSON); rq (nil: an
// in-process call, local) says who calls and goes on to the group or
// provider.
func (g *Gateway) callServer(ctx context.Context, rq *call.Request, action, server, tool string, args any) (res *mcp.CallToolResult, err error) {
	began := time.Now()
	denied := false
	var dec policy.Decision
	defer func() { g.auditProviderCall(ctx, action, server, tool, began, res, err, denied, dec) }()
	if e := rq.CallerOr().Check("", server); e != nil {
		return nil, e
	}
	grp, isGroup := g.Groups.Get(server)
	p, isProvider := g.Providers.Get(server)
	if !isGroup && !isProvider && g.awaitServer(ctx, server) {
		grp, isGroup = g.Groups.Get(server)
		p, isProvider = g.Providers.Get(server)
	}
	if err := g.refused(server); err != nil {
		denied = true
		return nil, err
	}
	if dec = g.decideCall(ctx, rq.CallerOr(), server, tool, args); !dec.Allowed {
		return nil, refusalOf(dec)
	}
	if isGroup {
		return grp.Call(traceTarget(ctx, action, server, true), rq, tool, args)
	}
	if !isProvider {
		return nil, &provider.Error{Kind: provider.KindUnknownServer, ID: server}
	}
	return p.Call(traceTarget(ctx, action, server, false), rq, tool, args)
}

// relays reports whether tool passes provider requests on to its caller:
// hangar_call and the front door's callable names.
func (g *Gateway) relays(tool string) bool {
	return tool == "hangar_call" || (g.FrontDoor != nil && g.FrontDoor.Binding(tool) != nil)
}

// refused is g.Refuse's verdict on id, nil when there is no Refuse.
func (g *Gateway) refused(id string) error {
	if g.Refuse == nil {
		return nil
	}
	return g.Refuse(id)
}

// MCPServer builds the MCP server with every hangar_* tool.
func (g *Gateway) MCPServer() *server.MCPServer {
	opts := []server.ServerOption{
		server.WithToolCapabilities(false),
		server.WithInstructions("hangar runs MCP servers as containers. hangar_list shows them; hangar_call invokes their tools."),
	}
	hooks := g.Hooks
	if cfg := g.Config(); cfg.ToolAccess.Mode == config.AccessFrontDoor {
		src := frontdoor.ManagerSource{Providers: g.Providers, Groups: g.Groups, Exposed: g.exposed,
			CallPath: func(ctx context.Context, rq *call.Request, server, tool string, args any) (*mcp.CallToolResult, error) {
				return g.callServer(ctx, rq, audit.ActionFrontDoorCall, server, tool, args)
			}}
		g.FrontDoor = frontdoor.New(src, cfg, g.Log)
		g.FrontDoor.Withheld = g.withheld
		g.FrontDoor.Quarantined = g.inQuarantine
		g.FrontDoor.Reach = g.reach
		g.FrontDoor.Admit = g.admitUse
		g.FrontDoor.View = g.policyView
		g.Providers.Listen(g.FrontDoor.Events())
		opts = append(opts, g.FrontDoor.ServerOptions()...)
		if g.FrontDoor.Searching() {
			// The first tool filter: ListedInSearch sees the whole set.
			opts = append(opts, server.WithToolFilter(g.FrontDoor.ListedInSearch))
		}
		hooks = g.FrontDoor.Hooks(hooks)
	}
	// What the session table keeps of a 2025-11-25 session between its
	// requests (endpoint/mcpsession.go); hooks as given stay as they were.
	h := &server.Hooks{}
	if hooks != nil {
		*h = *hooks
	}
	h.OnAfterInitialize = append(slices.Clip(h.OnAfterInitialize), endpoint.SessionInitialized)
	h.OnRegisterSession = append(slices.Clip(h.OnRegisterSession), endpoint.SessionRegistered)
	opts = append(opts, server.WithHooks(h))
	chain := g.toolChain()
	opts = append(opts, chain.options()...)
	s := server.NewMCPServer("hangar", Version, opts...)
	for _, t := range g.tools() {
		s.AddTool(preencoded(t.Tool), t.Handler)
	}
	if g.FrontDoor != nil {
		g.FrontDoor.Attach(s)
	}
	g.chains.Store(s, chain)
	return s
}

// toolChain is what every tools/call of the gateway's MCP server runs
// through: mcp-go gets it as server options, and the direct call path
// (calls.go) applies the same list, so the two cannot drift apart.
type toolChain struct {
	// middlewares wrap the tool handler, outermost first, as mcp-go
	// applies them.
	middlewares []server.ToolHandlerMiddleware
	// visible decide, tool by tool, which tools a caller may see and call.
	visible []func(ctx context.Context, t mcp.Tool) bool
	// listed filter listings only, after visible: what the policy hides
	// (a call of a hidden tool is decided, and its refusal audited, on
	// the call path).
	listed []server.ToolFilterFunc
}

func (g *Gateway) toolChain() toolChain {
	c := toolChain{
		middlewares: []server.ToolHandlerMiddleware{
			recoverPanics,
			// A call on a 2025-11-25 session takes the session's
			// notifications on its stream (endpoint/mcpsession.go).
			endpoint.DuringCall,
			g.correlate,
			authorize,
			// Innermost: every round trip of a call is correlated and
			// authorized.
			g.rounds.Middleware(g.relays),
		},
		visible: []func(context.Context, mcp.Tool) bool{mayCall},
		listed:  []server.ToolFilterFunc{g.policyListFilter},
	}
	c.middlewares = g.tracedChain(c.middlewares)
	if g.FrontDoor != nil {
		c.visible = append(c.visible, g.FrontDoor.Visible)
	}
	return c
}

func (c toolChain) options() []server.ServerOption {
	var opts []server.ServerOption
	for _, m := range c.middlewares {
		opts = append(opts, server.WithToolHandlerMiddleware(m))
	}
	for _, v := range c.visible {
		opts = append(opts, server.WithToolFilter(filterOf(v)))
	}
	for _, l := range c.listed {
		opts = append(opts, server.WithToolFilter(l))
	}
	return opts
}

// filterOf is visible as the list filter mcp-go takes.
func filterOf(visible func(context.Context, mcp.Tool) bool) server.ToolFilterFunc {
	return func(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
		out := tools[:0:0]
		for _, t := range tools {
			if visible(ctx, t) {
				out = append(out, t)
			}
		}
		return out
	}
}

// wrap is handler behind the middlewares, as mcp-go wraps it.
func (c toolChain) wrap(handler server.ToolHandlerFunc) server.ToolHandlerFunc {
	for _, m := range slices.Backward(c.middlewares) {
		handler = m(handler)
	}
	return handler
}

// sees reports whether the caller in ctx may see tool, as mcp-go checks
// with the filters before it calls one.
func (c toolChain) sees(ctx context.Context, tool mcp.Tool) bool {
	for _, v := range c.visible {
		if !v(ctx, tool) {
			return false
		}
	}
	return true
}

// recoverPanics turns a panicking tool handler into an error answer
// (mcp-go's WithRecovery, as a middleware of the chain).
func recoverPanics(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				res, err = nil, fmt.Errorf("panic recovered in %s tool handler: %v", req.Params.Name, p)
			}
		}()
		return next(ctx, req)
	}
}

// preencoded stores a tool's input schema as JSON once: mcp-go otherwise
// re-serialises the typed schema on every call (to bind request headers),
// which was a tenth of the gateway's CPU per warm call.
func preencoded(t mcp.Tool) mcp.Tool {
	if t.RawInputSchema != nil {
		return t
	}
	b, err := json.Marshal(t.InputSchema)
	if err != nil {
		return t
	}
	t.RawInputSchema = b
	t.InputSchema = mcp.ToolInputSchema{}
	return t
}

func (g *Gateway) tools() []server.ServerTool {
	var all []server.ServerTool
	all = append(all, g.lifecycleTools()...)
	all = append(all, g.serverTools()...)
	all = append(all, g.healthTools()...)
	all = append(all, g.batchTools()...)
	all = append(all, g.discoveryTools()...)
	all = append(all, g.groupTools()...)
	all = append(all, g.hotloadTools()...)
	all = append(all, g.searchTools()...)
	return all
}

// OwnTools are the definitions of the gateway's own tools (hangar_*), as
// tools/list describes them, for the dashboard's Try.
func (g *Gateway) OwnTools() []mcpconn.Tool {
	all := g.tools()
	out := make([]mcpconn.Tool, 0, len(all))
	for _, st := range all {
		t := preencoded(st.Tool)
		out = append(out, mcpconn.Tool{Name: t.Name, Description: t.Description, InputSchema: t.RawInputSchema})
	}
	return out
}

type ctxKey int

// callKey carries a tool call's callState from the correlate middleware
// to the handler under it: mcp-go's tool middlewares pass handlers a
// context and the request, nothing else.
const callKey ctxKey = iota

// callState is what correlate keeps of one tool call.
type callState struct {
	log *slog.Logger // carries the call's correlation ID
	// audited: the call path wrote the call's audit entry (a callable
	// name's call is one front_door entry), so correlate writes none: one
	// decision, one entry.
	audited atomic.Bool
}

// logFrom returns the request's logger, carrying its correlation ID (a
// tool call's) or else the trace of the request, bound only when asked:
// most requests log nothing.
func (g *Gateway) logFrom(ctx context.Context) *slog.Logger {
	if c, ok := ctx.Value(callKey).(*callState); ok {
		return c.log
	}
	return telemetry.BindLog(ctx, g.Log)
}

// markAudited tells correlate that the call in ctx has its audit entry.
func markAudited(ctx context.Context) {
	if c, ok := ctx.Value(callKey).(*callState); ok {
		c.audited.Store(true)
	}
}

// correlate gives every tool call a correlation ID carried by each log
// line of that call.
func (g *Gateway) correlate(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		id := newID()
		log := telemetry.BindLog(ctx, telemetry.WithLazy(g.Log, telemetry.FieldCorrelationID, id, telemetry.FieldTool, req.Params.Name))
		st := &callState{log: log}
		ctx = context.WithValue(ctx, callKey, st)
		began := time.Now()
		res, err := next(ctx, req)
		if !st.audited.Load() {
			g.auditToolCall(ctx, req, began, res, err)
		}
		dur := float64(time.Since(began).Microseconds()) / 1000
		switch {
		case err != nil:
			log.Warn("tool call failed", telemetry.FieldDurationMs, dur, telemetry.FieldError, err)
		case res != nil && res.IsError:
			log.Info("tool call returned an error", telemetry.FieldDurationMs, dur, telemetry.FieldError, textOf(res))
		default:
			log.Debug("tool call", telemetry.FieldDurationMs, dur)
		}
		return res, err
	}
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ok wraps a response as structured content with the same JSON as text, so
// clients that read either get the same answer.
func ok(v any) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	// The text shares b's memory (b is never written again): a large
	// hangar_call answer is not held twice.
	return mcp.NewToolResultStructured(encoded(b), unsafe.String(unsafe.SliceData(b), len(b))), nil
}

// encoded is JSON as json.Marshal wrote it: valid, compact and
// HTML-escaped already, so resultAnswer writes it as it is, where
// encoding/json would scan and copy a json.RawMessage once more (a
// hangar_list of 100 servers spent a quarter of its CPU there).
type encoded []byte

// MarshalJSON is e: any other encoder (mcp-go's, MarshalIndent) gets the
// same JSON.
func (e encoded) MarshalJSON() ([]byte, error) { return e, nil }

// fail reports err as a tool error whose text starts with its wire kind.
func fail(err error) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultError(err.Error()), nil
}

func unknownServer(id string) (*mcp.CallToolResult, error) {
	return fail(&provider.Error{Kind: provider.KindUnknownServer, ID: id})
}

func textOf(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

// timeOrNil renders a time for JSON, null when unset.
func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}

var errNoArgs = errors.New("arguments must be an object")

// args returns the call's arguments as a map (empty when none).
func args(req mcp.CallToolRequest) (map[string]any, error) {
	switch a := req.Params.Arguments.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return a, nil
	default:
		return nil, errNoArgs
	}
}

// hotloadTools are hangar_load and hangar_unload over g.HotLoad.
func (g *Gateway) hotloadTools() []server.ServerTool {
	return hotloadTools(func() HotLoader { return g.HotLoad })
}
