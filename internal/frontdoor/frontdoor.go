// Package frontdoor serves provider tools, resources and prompts on the
// gateway's own MCP endpoint under callable names: it is the catalog
// listener between the endpoint's routing table (which asks it for
// stateless tools/list answers and withheld resources) and the call path
// (which calls the server and tool a name is bound to). It keeps the
// callable names, the cached listings, resource subscriptions and, in
// search mode, the search index (search.go).
//
// The front door lists provider tools on the gateway's own endpoint under
// callable names and forwards calls to them unchanged. It never starts a
// provider to list it: catalogs come from the provider's last run (kept in
// memory and in the store), from config, or from a prefetch at start-up.
// Changes are applied to the MCP server in one step each, so connected
// clients get one notifications/tools/list_changed per change.
package frontdoor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/sync/singleflight"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/relay"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/telemetry"
	"github.com/mcp-hangar/hangar/internal/upstreamauth"
)

// prefetchParallelism bounds concurrent catalog prefetches.
const prefetchParallelism = 3

// Binding ties a callable name to a raw tool of one server.
type Binding struct {
	Callable string `json:"callable"`
	Server   string `json:"-"`
	Tool     string `json:"tool"`
	Group    bool   `json:"-"`
	Version  string `json:"-"`
	// BoundAt is when this name was first bound to this tool and catalog
	// version (a refresh that changes nothing keeps it).
	BoundAt time.Time     `json:"bound_at"`
	def     *mcpconn.Tool // in the catalog it was bound from
	// withheld: its server was quarantined at the refresh that bound it
	// (Servable.Quarantined): left out of the search index, and a change
	// of the listing when it flips. Visible asks Quarantined for the
	// state now.
	withheld bool
}

// groupSource says which member's catalog a group lists.
type groupSource struct {
	CatalogFrom string   // "" when it came from the store
	Disagree    []string // members whose known catalog differs
}

// Bound is one callable name of a server and the raw tool it calls.
type Bound struct {
	Callable, Tool, CatalogVersion string
	BoundAt                        time.Time
}

// Bindings lists server's callable names, most recently bound first, at
// most limit.
func (f *FrontDoor) Bindings(server string, limit int) []Bound {
	f.mu.RLock()
	out := make([]Bound, 0, len(f.byServer[server]))
	for _, b := range f.byServer[server] {
		out = append(out, Bound{Callable: b.Callable, Tool: b.Tool, CatalogVersion: b.Version, BoundAt: b.BoundAt})
	}
	f.mu.RUnlock()
	slices.SortStableFunc(out, func(a, b Bound) int { return b.BoundAt.Compare(a.BoundAt) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// FrontDoor serves provider tools by callable name.
type FrontDoor struct {
	src Source
	// Catalogs keeps catalogs across restarts; nil keeps them in memory.
	Catalogs store.Catalogs
	// Quarantined, when set, names the servers whose tools are withheld
	// now (a quarantine): they are neither listed, found nor callable by
	// their callable names, whatever the last refresh bound.
	Quarantined func(server string) bool
	// Withheld, when set, names the servers nothing of which is served now
	// (quarantined, disabled): their resources, templates and prompts are
	// not listed, read, got, completed or subscribed to.
	Withheld func(server string) bool
	// Reach, when set, narrows hangar_find_tools' matches and the servers
	// its description names to what the caller may call (search.go).
	Reach Reach
	// Admit, when set, decides a use of a server that is not a tool call
	// (policy.go): a non-nil error is the answer.
	Admit func(ctx context.Context, u Use) error
	// View, when set, is what the caller's listings depend on beside its
	// scopes and servers (the policy's view of it): listings are kept
	// per view.
	View     func(ctx context.Context) string
	naming   string
	prefetch bool
	log      *slog.Logger
	kick     chan struct{}

	// learning runs one prefetch per server, and one catalog read for the
	// calls that name a server whose catalog is not known yet.
	learning singleflight.Group

	refreshMu sync.Mutex // one Refresh at a time
	srv       *server.MCPServer
	cache     map[string]toolCatalog // by server ID
	looked    map[string]bool        // server+image whose stored catalog was read
	tried     map[string]bool        // server+image a prefetch was tried for
	sig       string                 // a hash of what is listed now, to skip no-op changes
	listing   listing                // tools/list answers of what is listed now

	mu       sync.RWMutex
	bindings map[string]*Binding    // by callable name
	byServer map[string][]*Binding  // by server ID, sorted by callable name
	versions map[string]string      // catalog_version by server ID
	hidden   map[string]bool        // servers with expose: false
	groups   map[string]groupSource // by group ID: whose catalog is listed
	view     extrasView             // resources, templates, prompts served

	extrasMu  sync.Mutex
	extras    map[string]extras // by server ID, read while it ran
	extrasKey map[string]string // server → image and catalog version extras were read for
	extrasSig string            // what is served now, to skip no-op changes
	// extrasSaved is, by server, the catalog version and extras hash last
	// stored.
	extrasSaved map[string]string

	// mcp is srv for readers that must not wait for a Refresh (relaying a
	// provider's notifications).
	mcp  atomic.Pointer[server.MCPServer]
	subs subscriptions // resource subscriptions of client sessions
	// resubFailed is, by subscription, the error of its last renewal;
	// only Run touches it.
	resubFailed map[subKey]string
	// search is the tool search of front_door.discovery "search"
	// (tools_find.go); nil in list mode.
	search *toolSearch

	// refreshes counts Refreshes begun and done, for Sync.
	refreshes struct {
		sync.Mutex
		begun, done uint64
		changed     chan struct{} // closed when done changes
	}
}

// New returns a front door over src; Attach gives it its server.
func New(src Source, cfg *config.Config, log *slog.Logger) *FrontDoor {
	if log == nil {
		log = slog.Default()
	}
	f := &FrontDoor{
		src:       src,
		naming:    cfg.FrontDoor.Naming,
		prefetch:  cfg.FrontDoor.Prefetch,
		log:       log.With("component", "front_door"),
		kick:      make(chan struct{}, 1),
		cache:     map[string]toolCatalog{},
		looked:    map[string]bool{},
		tried:     map[string]bool{},
		bindings:  map[string]*Binding{},
		byServer:  map[string][]*Binding{},
		versions:  map[string]string{},
		hidden:    map[string]bool{},
		extras:    map[string]extras{},
		extrasKey: map[string]string{},

		extrasSaved: map[string]string{},
	}
	if cfg.FrontDoor.Discovery == config.DiscoverySearch {
		f.search = newToolSearch(f.log)
	}
	return f
}

// ServerOptions are the MCP server options the front door needs: tools
// that announce changes, resource subscriptions and completions. Its hooks
// (Hooks) go with them; its tool filter (visible) is in the gateway's
// toolChain.
func (f *FrontDoor) ServerOptions() []server.ServerOption {
	return []server.ServerOption{
		server.WithToolCapabilities(true),
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true), server.WithPromptFilter(f.promptFilter),
		server.WithCompletions(), server.WithPromptCompletionProvider(f), server.WithResourceCompletionProvider(f),
	}
}

// Attach sets the MCP server whose tool list the front door maintains.
func (f *FrontDoor) Attach(s *server.MCPServer) {
	f.refreshMu.Lock()
	f.listing.beginChange()
	f.srv = s
	f.listing.endChange()
	f.refreshMu.Unlock()
	f.mcp.Store(s)
}

// Kick asks for a refresh soon (a server was added, removed or changed):
// the catalog's change batches, the management protocol's changes and
// Events kick it; nothing polls.
func (f *FrontDoor) Kick() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// Run keeps the listed tools in step with the served set until ctx ends,
// and prefetches the catalogs nobody knows yet.
func (f *FrontDoor) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, prefetchParallelism)
	if f.search != nil {
		wg.Add(1)
		go func() { defer wg.Done(); f.search.run(ctx) }()
	}
	for {
		for _, id := range f.Refresh(ctx) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				defer func() { <-sem }()
				_, err, _ := f.learning.Do(id, func() (any, error) {
					return nil, f.src.Prefetch(ctx, id, func(ctx context.Context) { f.fetchExtras(ctx, id) })
				})
				if err != nil {
					f.log.Warn("catalog prefetch failed", telemetry.FieldServer, id, telemetry.FieldError, err)
					return
				}
				f.Kick()
			}()
		}
		f.resubscribe(ctx)
		select {
		case <-ctx.Done():
			return
		case <-f.kick:
		}
	}
}

// Sync returns once a Refresh that began after the call has finished:
// the listed tools, the bindings and the published search catalog then
// hold every server served at the call, with the catalogs stored for
// them. It kicks Run for that Refresh. Catalogs that must be prefetched
// (a container started to learn its tools) are not waited for.
func (f *FrontDoor) Sync(ctx context.Context) error {
	r := &f.refreshes
	r.Lock()
	want := r.begun + 1
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	r.Unlock()
	f.Kick()
	for {
		r.Lock()
		done, ch := r.done >= want, r.changed
		r.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// refreshBegins and refreshDone count Refreshes for Sync.
func (f *FrontDoor) refreshBegins() uint64 {
	r := &f.refreshes
	r.Lock()
	defer r.Unlock()
	r.begun++
	return r.begun
}

func (f *FrontDoor) refreshDone(n uint64) {
	r := &f.refreshes
	r.Lock()
	defer r.Unlock()
	r.done = n
	if r.changed != nil {
		close(r.changed)
	}
	r.changed = make(chan struct{})
}

// Refresh brings the listed tools in step with the served set now, and
// returns the servers whose catalog should be prefetched.
func (f *FrontDoor) Refresh(ctx context.Context) (prefetch []string) {
	f.refreshMu.Lock()
	defer f.refreshMu.Unlock()
	defer f.refreshDone(f.refreshBegins())

	// A binding points into the catalog it came from (kept in f.cache):
	// with 10,000 tools a copy of each definition per binding was more
	// than a megabyte.
	type entry struct {
		group, withheld bool
		def             *mcpconn.Tool
	}
	var reqs []nameRequest
	entries := map[nameRequest]entry{}
	versions := map[string]string{}
	hidden := map[string]bool{}
	groups := map[string]groupSource{}
	servables := f.src.Servable()
	defer f.refreshExtras(ctx, servables)
	for _, sv := range servables {
		if sv.Hidden {
			hidden[sv.ID] = true
		}
		if sv.Group {
			groups[sv.ID] = groupSource{CatalogFrom: sv.CatalogFrom, Disagree: append([]string{}, sv.Disagree...)}
		}
		cat, ok := f.catalogOf(ctx, sv)
		if !ok {
			key := sv.ID + "\x00" + catalogImage(sv)
			if f.prefetch && sv.Cold && !f.tried[key] {
				f.tried[key] = true
				prefetch = append(prefetch, sv.ID)
			}
			continue
		}
		versions[sv.ID] = cat.Version
		if hidden[sv.ID] {
			continue
		}
		prefix := ""
		if f.naming != config.NamingFlat {
			prefix = sv.ID
			if sv.Spec != nil && sv.Spec.Prefix != "" {
				prefix = sv.Spec.Prefix
			}
		}
		for i := range cat.Tools {
			r := nameRequest{Server: sv.ID, Prefix: prefix, Tool: cat.Tools[i].Name}
			if _, dup := entries[r]; dup {
				continue // a provider that lists a name twice
			}
			reqs = append(reqs, r)
			entries[r] = entry{group: sv.Group, withheld: sv.Quarantined, def: &cat.Tools[i]}
		}
	}

	f.mu.RLock()
	mine := f.bindings
	f.mu.RUnlock()
	// A name the server lists that is not the front door's (a hangar_*
	// tool) is not free. Looked up one by one: copying the whole tool set
	// every tick was a fifth of a refresh that changes nothing.
	names := callableNames(reqs, func(n string) bool {
		_, bound := mine[n]
		return !bound && f.srv != nil && f.srv.GetTool(n) != nil
	})

	bindings := make(map[string]*Binding, len(reqs))
	byServer := map[string][]*Binding{}
	now := time.Now().UTC()
	for _, r := range reqs {
		e := entries[r]
		b := &Binding{Callable: names[r], Server: r.Server, Tool: r.Tool, Group: e.group, Version: versions[r.Server], BoundAt: now, def: e.def, withheld: e.withheld}
		if prev := f.Binding(b.Callable); prev != nil && prev.Server == b.Server && prev.Tool == b.Tool && prev.Version == b.Version {
			b.BoundAt = prev.BoundAt
		}
		bindings[b.Callable] = b
		byServer[b.Server] = append(byServer[b.Server], b)
	}
	callables := make([]string, 0, len(bindings))
	for n := range bindings {
		callables = append(callables, n)
	}
	sort.Strings(callables)
	// What is listed, hashed: the list itself was half a megabyte with
	// 10,000 tools, kept and built again on every refresh.
	// Nothing listed is "", as before the first refresh.
	sig := ""
	if len(callables) > 0 {
		h := sha256.New()
		var line []byte
		for _, n := range callables {
			b := bindings[n]
			line = line[:0]
			for _, part := range [...]string{n, b.Server, b.Tool, b.Version} {
				line = append(append(line, part...), 0)
			}
			if b.withheld {
				line = append(line, 'w', 0) // a quarantine lifted or set is a change of the listing
			}
			h.Write(line)
		}
		sig = string(h.Sum(nil))
	}
	for _, l := range byServer {
		sort.Slice(l, func(i, j int) bool { return l[i].Callable < l[j].Callable })
	}

	change := sig != f.sig && f.srv != nil
	if change {
		// No tools/list answer is kept from here until the listed tools
		// and the bindings the filter reads have both changed.
		f.listing.beginChange()
		defer f.listing.endChange()
	}
	f.mu.Lock()
	f.bindings, f.byServer, f.versions, f.hidden, f.groups = bindings, byServer, versions, hidden, groups
	f.mu.Unlock()
	searchable := make(map[string][]*Binding, len(byServer))
	for id, bs := range byServer {
		if !bs[0].withheld {
			searchable[id] = bs
		}
	}
	f.refreshSearch(servables, searchable, sig, change)

	if !change {
		return prefetch
	}
	f.sig = sig
	all := make([]server.ServerTool, 0, len(bindings)+32)
	for name, st := range f.srv.ListTools() {
		if _, bound := mine[name]; !bound {
			all = append(all, *st)
		}
	}
	for _, n := range callables {
		b := bindings[n]
		t := toMCPTool(n, *b.def)
		if err := validHeaderAnnotations(&t); err != nil {
			f.log.Warn("tool not listed: bad x-mcp-header annotations", telemetry.FieldServer, b.Server, telemetry.FieldTool, b.Tool, telemetry.FieldError, err)
			continue
		}
		all = append(all, server.ServerTool{Tool: t, Handler: f.call})
	}
	// One replacement, so one list_changed for the whole change.
	f.srv.SetTools(all...)
	f.log.Info("front door tools changed", "tools", len(bindings))
	return prefetch
}

// catalogOf returns the catalog the front door lists for sv: the one it has
// now, else the one kept from its last run with the same image.
func (f *FrontDoor) catalogOf(ctx context.Context, sv Servable) (toolCatalog, bool) {
	img := catalogImage(sv)
	if len(sv.Tools) > 0 {
		cur, known := f.cache[sv.ID]
		if known && cur.Image == img && slices.EqualFunc(cur.Tools, sv.Tools, sameTool) {
			return cur, true // unchanged: no need to hash it again
		}
		v := mcpconn.CatalogVersion(sv.Tools)
		if known && cur.Version == v && cur.Image == img {
			return cur, true
		}
		c := toolCatalog{Version: v, Image: img, Tools: sv.Tools}
		f.cache[sv.ID] = c
		if !sv.Predefined {
			if err := saveCatalog(ctx, f.Catalogs, sv.ID, c, nil); err != nil {
				f.log.Warn("catalog not stored", telemetry.FieldServer, sv.ID, telemetry.FieldError, err)
			}
		}
		return c, true
	}
	if cur, ok := f.cache[sv.ID]; ok && cur.Image == img {
		return cur, true
	}
	key := sv.ID + "\x00" + img
	if f.looked[key] {
		return toolCatalog{}, false
	}
	f.looked[key] = true
	c, x, ok, err := loadCatalog(ctx, f.Catalogs, sv.ID, img)
	if err != nil {
		f.log.Warn("stored catalog not read", telemetry.FieldServer, sv.ID, telemetry.FieldError, err)
	}
	if !ok {
		return toolCatalog{}, false
	}
	f.cache[sv.ID] = c
	if x != nil {
		f.extrasMu.Lock()
		if _, known := f.extras[sv.ID]; !known {
			f.extras[sv.ID] = *x
		}
		f.extrasMu.Unlock()
		f.extrasSaved[sv.ID] = c.Version + "\x00" + extrasHash(*x)
	}
	return c, true
}

// toolFields are mcpconn.Tool's fields: the conversion below stops the
// build when one is added that sameTool does not compare.
type toolFields struct {
	Name, Title, Description                            string
	InputSchema, OutputSchema, Annotations, Meta, Icons json.RawMessage
}

var _ = toolFields(mcpconn.Tool{})

// sameTool reports whether a and b are the same definition, byte for byte.
func sameTool(a, b mcpconn.Tool) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		bytes.Equal(a.InputSchema, b.InputSchema) && bytes.Equal(a.OutputSchema, b.OutputSchema) &&
		bytes.Equal(a.Annotations, b.Annotations) && bytes.Equal(a.Meta, b.Meta) && bytes.Equal(a.Icons, b.Icons)
}

// toMCPTool lists a provider tool under its callable name, with its
// definition as the provider gave it.
func toMCPTool(name string, t mcpconn.Tool) mcp.Tool {
	out := mcp.Tool{Name: name, Title: t.Title, Description: t.Description, RawInputSchema: t.InputSchema, RawOutputSchema: t.OutputSchema}
	if len(out.RawInputSchema) == 0 {
		out.RawInputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if len(t.Annotations) > 0 {
		_ = json.Unmarshal(t.Annotations, &out.Annotations)
	}
	if len(t.Icons) > 0 {
		_ = json.Unmarshal(t.Icons, &out.Icons)
	}
	if len(t.Meta) > 0 {
		out.Meta = rawMeta(t.Meta)
	}
	return out
}

// validHeaderAnnotations is mcp.ValidateParamHeaderAnnotations (SetTools
// panics on what it refuses) for a tool toMCPTool made, without decoding a
// raw schema that cannot spell the annotation: one with neither its name
// nor a backslash (a key written with escapes). With 10,000 tools the
// decoding was a tenth of start-up, and SetTools does it again anyway.
func validHeaderAnnotations(t *mcp.Tool) error {
	if s := t.RawInputSchema; len(s) > 0 && !bytes.Contains(s, []byte("x-mcp-header")) && bytes.IndexByte(s, '\\') < 0 {
		return nil
	}
	return mcp.ValidateParamHeaderAnnotations(t)
}

// Visible hides the tools a caller may not call: provider tools need
// hangar:call and a server the identity may reach. A caller without an
// identity is local, with every scope.
func (f *FrontDoor) Visible(ctx context.Context, t mcp.Tool) bool {
	f.mu.RLock()
	b, isProvider := f.bindings[t.Name]
	f.mu.RUnlock()
	if !isProvider {
		return true
	}
	if f.quarantined(b.Server) {
		// Asked now, not at the last refresh: withheld the moment a
		// quarantine is set, callable again the moment it is lifted.
		return false
	}
	id, ok := auth.FromContext(ctx)
	return !ok || (id.Has(auth.ScopeCall) && id.MayReach(b.Server))
}

// quarantined reports whether server's tools are withheld now.
func (f *FrontDoor) quarantined(server string) bool {
	return f.Quarantined != nil && f.Quarantined(server)
}

func (f *FrontDoor) Binding(name string) *Binding {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.bindings[name]
}

// call forwards a call of a callable name to its provider or group.
func (f *FrontDoor) call(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	b := f.Binding(req.Params.Name)
	if b == nil {
		// Unlisted between the client's tools/list and this call.
		return mcp.NewToolResultError("unknown_tool: " + req.Params.Name + " is no longer served; list the tools again"), nil
	}
	// The caller's _meta goes on to the provider, and its raw result comes
	// back unchanged.
	var raw json.RawMessage
	rq := relay.NewRequest(ctx, req)
	rq.Meta, rq.Raw = req.Params.Meta, &raw
	res, err := f.src.Call(ctx, rq, b.Server, b.Tool, req.GetRawArguments())
	relay.AwaitProgressWritten(relay.ClientOf(ctx))
	if err != nil {
		if res, herr, ok := upstreamauth.Answer(ctx, err); ok {
			return res, herr
		}
		return mcp.NewToolResultError(err.Error()), nil
	}
	if len(raw) > 0 {
		if r, err := rawResult(raw); err == nil {
			return r, nil
		}
	}
	return res, nil
}

// Details is what hangar_details shows of a server on the front door.
func (f *FrontDoor) Details(server string) map[string]any {
	f.mu.RLock()
	defer f.mu.RUnlock()
	tools := make([]Binding, 0, len(f.byServer[server]))
	for _, b := range f.byServer[server] {
		tools = append(tools, *b)
	}
	var version any
	if v, ok := f.versions[server]; ok {
		version = v
	}
	out := f.extrasDetails(server)
	out["exposed"] = !f.hidden[server]
	out["catalog_version"] = version
	out["tools"] = tools
	if g, ok := f.groups[server]; ok {
		// A group lists one member's catalog; members that know another
		// one are named, so that a missing or extra tool is explained.
		var from any // null: read from the store, no member ran yet
		if g.CatalogFrom != "" {
			from = g.CatalogFrom
		}
		out["catalog_from"] = from
		out["members_disagree"] = append([]string{}, g.Disagree...)
	}
	return out
}

// Callables are the callable names of server's tools and of its prompts,
// by their names on the server (the dashboard's Try calls them by these);
// none for a server the front door does not list (expose: false), whose
// tools hangar_call reaches.
func (f *FrontDoor) Callables(server string) (tools, prompts map[string]string) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.hidden[server] {
		return nil, nil
	}
	tools = make(map[string]string, len(f.byServer[server]))
	for _, b := range f.byServer[server] {
		tools[b.Tool] = b.Callable
	}
	prompts = make(map[string]string, len(f.view.promptsOf[server]))
	for _, b := range f.view.promptsOf[server] {
		prompts[b.Tool] = b.Callable
	}
	return tools, prompts
}

// Events is what the front door hears of providers: every event after
// which what a provider serves may differ (a transition, a health check
// that read its tools again, a quarantine set or lifted, a removal) asks
// for a refresh. Give it to provider.Manager.Listen.
func (f *FrontDoor) Events() provider.Events { return kicks{f: f} }

type kicks struct {
	provider.NoEvents
	f *FrontDoor
}

func (k kicks) StateChanged(string, provider.State, provider.State) { k.f.Kick() }
func (k kicks) QuarantineChanged(string)                            { k.f.Kick() }
func (k kicks) Removed(string)                                      { k.f.Kick() }
func (k kicks) HealthChecked(_ string, err error) {
	if err == nil {
		k.f.Kick()
	}
}
