package frontdoor

// Progressive tool discovery (front_door.discovery: search).
//
// Every callable name stays registered with mcp-go, so a call of any of
// them works as in list mode, with the same filters. Only tools/list
// changes: listedInSearch, the first tool filter, keeps the hangar_*
// tools, pinned servers' and tools' names, and the names this caller
// activated with hangar_find_tools, and gives hangar_find_tools a
// description of the servers the caller can reach. The filter tells a
// listing from mcp-go's check of one called tool by the number of tools
// it is given: mcp-go passes the one tool being called at tools/call, and
// the whole registered set (never fewer than the hangar_* tools) at
// tools/list, on every transport.
//
// The index (internal/toolsearch) is fed off the request path: Refresh
// publishes the catalog when it changes and the index applies it in its
// own goroutine; hangar_find_tools reads it; lists and calls never do.
//
// Activation is per MCP session on the session-based protocols; the
// stateless protocol (2026-07-28) has no session, so there it belongs to
// the caller's identity (its token or subject and view), kept until reset
// or an hour unused, and list_changed goes to every subscriptions/listen
// stream (each client lists again and sees its own view).

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/relay"
	"github.com/mcp-hangar/hangar/internal/telemetry"
	"github.com/mcp-hangar/hangar/internal/toolsearch"
)

const FindToolName = "hangar_find_tools"

// Bounds of hangar_find_tools and of activation state.
const (
	findDefaultLimit = 10
	findMaxLimit     = 50
	maxActivated     = 256 // names one session may activate
	maxActivations   = 10000
	identityIdle     = time.Hour // stateless activations unused this long are dropped
	maxDescribed     = 200       // server lines in the find tool's description
	maxDescriptions  = 64        // per-view descriptions kept
)

// toolSearch is the front door's search state.
type toolSearch struct {
	index *toolsearch.Index
	log   *slog.Logger

	// listed is what search mode lists beside the hangar_* tools and the
	// activated names: pinned callable names, and the servers for the
	// find tool's description. Swapped whole by Refresh.
	listed atomic.Pointer[searchListing]

	// Refresh-only state: what was published last and each server's docs.
	sig  string
	docs map[string]serverDocs

	act activations

	descMu sync.Mutex
	descs  map[string]string // by listing generation and view
}

type searchListing struct {
	gen     uint64
	pinned  map[string]bool
	servers []serverLine // sorted by ID
}

// serverLine is one server in the find tool's description.
type serverLine struct {
	ID, Summary string
	Tools       int
	Probe       string // one of its callable names, to ask the caller's view
}

type serverDocs struct {
	key  string // catalog version and what else the docs are made of
	docs []toolsearch.Doc
}

func newToolSearch(log *slog.Logger) *toolSearch {
	ix, err := toolsearch.New()
	if err != nil {
		log.Error("tool search unavailable: tools/list lists every tool", telemetry.FieldError, err)
		return nil
	}
	s := &toolSearch{index: ix, log: log, docs: map[string]serverDocs{}, descs: map[string]string{}}
	s.listed.Store(&searchListing{pinned: map[string]bool{}})
	return s
}

// run keeps the index until ctx ends, then releases it: the front door
// is done, and a search after it fails rather than reading a stale index.
func (s *toolSearch) run(ctx context.Context) {
	s.index.Run(ctx)
	if err := s.index.Close(); err != nil {
		s.log.Warn("tool index not closed", telemetry.FieldError, err)
	}
}

// refreshSearch is Refresh's hook: it publishes the catalog to the index
// and swaps the listing state when the tools, pins or summaries changed.
// toolSig is Refresh's signature of the bound names; toolsChanged says
// Refresh replaces the tool set (and sends list_changed itself).
func (f *FrontDoor) refreshSearch(servables []Servable, byServer map[string][]*Binding, toolSig string, toolsChanged bool) {
	s := f.search
	if s == nil {
		return
	}
	var specSig strings.Builder
	specSig.WriteString(toolSig)
	for _, sv := range servables {
		if sp := sv.Spec; sp != nil && (sp.Pinned || len(sp.PinnedTools) > 0 || sp.Summary != "") {
			fmt.Fprintf(&specSig, "\x01%s\x00%t\x00%q\x00%s", sv.ID, sp.Pinned, sp.PinnedTools, sp.Summary)
		}
	}
	if specSig.String() == s.sig {
		return
	}
	s.sig = specSig.String()

	specs := map[string]*config.Server{}
	for _, sv := range servables {
		specs[sv.ID] = sv.Spec
	}
	prev := s.listed.Load()
	next := &searchListing{gen: prev.gen + 1, pinned: map[string]bool{}}
	catalog := make(map[string][]toolsearch.Doc, len(byServer))
	docs := make(map[string]serverDocs, len(byServer))
	for _, id := range sortedKeys(byServer) {
		bs := byServer[id]
		spec := specs[id]
		summary := ""
		if spec != nil {
			summary = spec.Summary
		}
		if summary == "" {
			summary = derivedSummary(bs)
		}
		next.servers = append(next.servers, serverLine{ID: id, Summary: summary, Tools: len(bs), Probe: bs[0].Callable})
		for _, b := range bs {
			if spec != nil && (spec.Pinned || slices.Contains(spec.PinnedTools, b.Tool)) {
				next.pinned[b.Callable] = true
			}
		}
		var kb strings.Builder
		kb.WriteString(bs[0].Version + "\x00" + summary)
		for _, b := range bs {
			kb.WriteString("\x00" + b.Callable)
		}
		key := kb.String()
		d, ok := s.docs[id]
		if !ok || d.key != key {
			d = serverDocs{key: key, docs: docsOf(bs, summary)}
		}
		docs[id] = d
		catalog[id] = d.docs
	}
	s.docs = docs
	s.index.Publish(catalog)

	if toolsChanged || f.srv == nil {
		s.listed.Store(next) // Refresh brackets the change and notifies
		return
	}
	// Only pins or summaries changed: what search mode lists changed all
	// the same.
	f.listing.beginChange()
	s.listed.Store(next)
	f.listing.endChange()
	f.srv.SendNotificationToAllClients(mcp.MethodNotificationToolsListChanged, nil)
}

// derivedSummary is a server's line when its config has no summary: what
// its tools are called. Callable names, not the provider's raw ones: they
// are [A-Za-z0-9_-] only, so a provider cannot write prose into the
// description every agent reads.
func derivedSummary(bs []*Binding) string {
	const shown = 6
	names := make([]string, 0, shown)
	for _, b := range bs[:min(shown, len(bs))] {
		names = append(names, b.Callable)
	}
	s := "tools such as " + strings.Join(names, ", ")
	if len(bs) > shown {
		s += ", …"
	}
	return s
}

// docsOf are the index docs of one server's bindings.
func docsOf(bs []*Binding, summary string) []toolsearch.Doc {
	out := make([]toolsearch.Doc, 0, len(bs))
	for _, b := range bs {
		out = append(out, toolsearch.Doc{
			Callable: b.Callable, Server: b.Server, Tool: b.Tool,
			Title: b.def.Title, Description: b.def.Description, Params: paramNames(b.def.InputSchema), Summary: summary,
		})
	}
	return out
}

// paramNames are the property names of an input schema.
func paramNames(schema json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	return sortedKeys(s.Properties)
}

// searchView is what search mode adds to a caller's view of tools/list
// (listing keys): the names it activated, by generation.
func (f *FrontDoor) searchView(ctx context.Context) string {
	if f.search == nil {
		return ""
	}
	return "\x00search " + strconv.FormatUint(f.search.listed.Load().gen, 10) + " " + f.search.act.view(activationKey(ctx))
}

// activationKey is whose activations a request sees: its MCP session, or
// on the stateless protocol its caller.
func activationKey(ctx context.Context) string {
	if s := server.ClientSessionFromContext(ctx); s != nil && s.SessionID() != "" {
		return "session\x00" + s.SessionID()
	}
	id := auth.Caller(ctx)
	return "caller\x00" + id.Kind + "\x00" + id.Name + "\x00" + id.ViewKey()
}

// activationsChanged tells the caller in ctx that its tools/list changed:
// its session on the session-based protocols; on the stateless protocol,
// which has no session to address, every subscriptions/listen stream.
func (f *FrontDoor) activationsChanged(ctx context.Context) {
	srv := f.mcp.Load()
	if srv == nil {
		return
	}
	if s := server.ClientSessionFromContext(ctx); s != nil && s.SessionID() != "" {
		if srv.SendNotificationToClient(ctx, mcp.MethodNotificationToolsListChanged, nil) == nil {
			// mcp-go may drop it as the answer goes out: wait until the
			// answer's stream holds it (progress_delivery.go).
			relay.ProgressQueued(ctx)
			relay.AwaitProgressWritten(ctx)
		}
		return
	}
	srv.SendNotificationToAllClients(mcp.MethodNotificationToolsListChanged, nil)
}

// SearchCaughtUp waits until the tool index holds the catalog published
// last (nil at once in list mode).
func (f *FrontDoor) SearchCaughtUp(ctx context.Context) error {
	if f.search == nil {
		return nil
	}
	return f.search.index.WaitApplied(ctx, f.search.index.Published())
}

// searchSessionEnded drops the activations of a session that ended.
func (f *FrontDoor) searchSessionEnded(session string) {
	if f.search != nil {
		f.search.act.drop("session\x00" + session)
	}
}

// activations are the names each session (or stateless caller) added to
// its tools/list.
type activations struct {
	mu  sync.Mutex
	by  map[string]*activated
	seq uint64 // generations, unique across keys and resets
}

type activated struct {
	// names is never changed once stored: readers use it without the lock.
	names map[string]bool
	gen   uint64
	used  time.Time
}

// names returns key's activated names (nil: none); the map is read-only.
func (a *activations) names(key string) map[string]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.by[key]; e != nil {
		e.used = time.Now()
		return e.names
	}
	return nil
}

// view is key's activation generation, for listing keys.
func (a *activations) view(key string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.by[key]; e != nil {
		return key + "\x00" + strconv.FormatUint(e.gen, 10)
	}
	return ""
}

// add activates names for key and returns those that were new, and how
// many key has now. Past maxActivated, further names are not added.
func (a *activations) add(key string, names []string) (added []string, total int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	a.prune(now)
	e := a.by[key]
	if e == nil {
		e = &activated{}
	}
	next := make(map[string]bool, len(e.names)+len(names))
	for n := range e.names {
		next[n] = true
	}
	added = []string{}
	for _, n := range names {
		if !next[n] && len(next) < maxActivated {
			next[n] = true
			added = append(added, n)
		}
	}
	if len(added) > 0 {
		if a.by == nil {
			a.by = map[string]*activated{}
		}
		a.seq++
		a.by[key] = &activated{names: next, gen: a.seq, used: now}
	}
	return added, len(next)
}

// reset removes key's activations and returns how many there were.
func (a *activations) reset(key string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.by[key]
	if e == nil {
		return 0
	}
	delete(a.by, key)
	return len(e.names)
}

func (a *activations) drop(key string) {
	a.mu.Lock()
	delete(a.by, key)
	a.mu.Unlock()
}

// prune drops stateless callers' activations unused for identityIdle and,
// past maxActivations entries, the least recently used. Sessions end on
// their own (searchSessionEnded).
func (a *activations) prune(now time.Time) {
	for k, e := range a.by {
		if strings.HasPrefix(k, "caller\x00") && now.Sub(e.used) > identityIdle {
			delete(a.by, k)
		}
	}
	for len(a.by) >= maxActivations {
		oldest := ""
		for k, e := range a.by {
			if oldest == "" || e.used.Before(a.by[oldest].used) {
				oldest = k
			}
		}
		delete(a.by, oldest)
	}
}

// Reach tells, for the caller in ctx, whether a tool filter lets it see
// callable and the policy of server lets it run now (the gateway's tool
// chain and refusals); nil lets everything through.
type Reach func(ctx context.Context) func(callable, server string) bool

func (f *FrontDoor) reach(ctx context.Context) func(callable, server string) bool {
	if f.Reach == nil {
		return func(string, string) bool { return true }
	}
	return f.Reach(ctx)
}

// findable reports whether a caller may call callable on server now: it
// is still bound there and reach lets the caller use it.
func (f *FrontDoor) findable(reach func(callable, server string) bool, callable, server string) bool {
	b := f.Binding(callable)
	return b != nil && !b.withheld && !f.quarantined(server) && b.Server == server && reach(callable, server)
}

// Searching reports whether the front door is in search mode.
func (f *FrontDoor) Searching() bool { return f != nil && f.search != nil }

// FindQuery is one hangar_find_tools request.
type FindQuery struct {
	Query    string
	Limit    int
	Servers  []string
	Activate bool
	Reset    bool
}

// Bounds of a FindQuery's Limit.
const (
	FindDefaultLimit = findDefaultLimit
	FindMaxLimit     = findMaxLimit
)

// ListedInSearch is the tool filter of search mode (see the top of this
// file). It must be the first filter: it tells a listing by the size of
// the set it is given.
func (f *FrontDoor) ListedInSearch(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	if len(tools) <= 1 {
		return tools // mcp-go checking the one tool being called
	}
	l := f.search.listed.Load()
	active := f.search.act.names(activationKey(ctx))
	// Refresh replaces the bindings map whole, never changes it.
	f.mu.RLock()
	bound := f.bindings
	f.mu.RUnlock()
	out := make([]mcp.Tool, 0, 32)
	for _, t := range tools {
		switch {
		case t.Name == FindToolName:
			t.Description = f.findDescription(ctx, l)
		case l.pinned[t.Name] || active[t.Name]:
		case bound[t.Name] != nil:
			continue // found by search, called by name
		}
		out = append(out, t)
	}
	return out
}

// findDescription is hangar_find_tools' description for the caller in
// ctx: what it does and the servers the caller can reach.
func (f *FrontDoor) findDescription(ctx context.Context, l *searchListing) string {
	s := f.search
	view := strconv.FormatUint(l.gen, 10) + "\x00" + f.viewOf(ctx)
	s.descMu.Lock()
	d, ok := s.descs[view]
	s.descMu.Unlock()
	if ok {
		return d
	}
	reach := f.reach(ctx)
	var b strings.Builder
	b.WriteString("Find tools of the MCP servers behind this gateway: tools/list shows only a few of them. " +
		"Describe the task in plain words (query); matches come ranked, with name, description and input schema, " +
		"and every name found can be called directly. activate: true also adds the matches to your tools/list " +
		"(a tools/list_changed notification follows) until the session ends or reset: true. servers narrows the search.")
	n := 0
	for _, sl := range l.servers {
		if !f.findable(reach, sl.Probe, sl.ID) {
			continue
		}
		if n == 0 {
			b.WriteString("\n\nServers you can reach:")
		}
		if n == maxDescribed {
			b.WriteString("\n- … and more")
			break
		}
		fmt.Fprintf(&b, "\n- %s (%d tools): %s", sl.ID, sl.Tools, sl.Summary)
		n++
	}
	if n == 0 {
		b.WriteString("\n\nNo server's tools are available to you.")
	}
	d = b.String()
	s.descMu.Lock()
	if len(s.descs) >= maxDescriptions {
		clear(s.descs)
	}
	s.descs[view] = d
	s.descMu.Unlock()
	return d
}

// FindMatch is one match as hangar_find_tools answers it.
type FindMatch struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Server      string          `json:"server"`
	Score       float64         `json:"score"`
}

// Find ranks the tools the caller in ctx may call against q.Query, and
// activates or resets the caller's listed matches as q asks; the answer
// is hangar_find_tools'.
func (f *FrontDoor) Find(ctx context.Context, q FindQuery) (map[string]any, error) {
	s := f.search
	key := activationKey(ctx)
	out := map[string]any{}
	changed := false
	if q.Reset {
		n := s.act.reset(key)
		out["deactivated"] = n
		changed = n > 0
	}
	if q.Query != "" {
		reach := f.reach(ctx)
		hits, err := s.index.Search(ctx, toolsearch.Query{Text: q.Query, Limit: q.Limit, Servers: q.Servers,
			Allow: func(callable, server string) bool { return f.findable(reach, callable, server) }})
		if err != nil {
			return nil, err
		}
		matches := make([]FindMatch, 0, len(hits))
		var names []string
		for _, h := range hits {
			b := f.Binding(h.Callable)
			if b == nil {
				continue // unbound since the search
			}
			schema := b.def.InputSchema
			if len(schema) == 0 {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			matches = append(matches, FindMatch{Name: h.Callable, Title: b.def.Title, Description: b.def.Description,
				InputSchema: schema, Server: b.Server, Score: float64(int64(h.Score*1000)) / 1000})
			names = append(names, h.Callable)
		}
		out["query"] = q.Query
		out["matches"] = matches
		if q.Activate {
			added, total := s.act.add(key, names)
			out["activated"] = added
			out["active"] = total
			changed = changed || len(added) > 0
		}
	}
	if changed {
		f.activationsChanged(ctx)
	}
	return out, nil
}
