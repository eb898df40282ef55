package frontdoor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// Resources, resource templates and prompts on the front door. They are
// read from a provider while it runs (never started for it), and served
// like its tools: resources and templates keep their URIs, and when two
// servers offer the same one the first server by ID keeps it and the other
// is reported as shadowed; prompts are named like tools. Reads and gets go
// to the owner, which a call may start.

// extrasTimeout bounds reading a running provider's lists.
const extrasTimeout = 5 * time.Second

// extras is one server's resources, templates and prompts, raw.
type extras struct {
	Image     string            `json:"-"`
	Resources []json.RawMessage `json:"resources,omitempty"`
	Templates []json.RawMessage `json:"resourceTemplates,omitempty"`
	Prompts   []json.RawMessage `json:"prompts,omitempty"`
}

// Extras returns what the front door knows of server's resources,
// resource templates and prompts (raw MCP JSON, from its last run or its
// stored catalog); ok is false when it knows nothing of them.
func (f *FrontDoor) Extras(server string) (resources, templates, prompts []json.RawMessage, ok bool) {
	f.extrasMu.Lock()
	defer f.extrasMu.Unlock()
	x, ok := f.extras[server]
	return x.Resources, x.Templates, x.Prompts, ok
}

// extrasView is what the front door serves of every server's extras.
type extrasView struct {
	resourceOwner map[string]string     // uri → server
	templateOwner map[string]string     // uri template → server
	templates     []servedTemplate      // sorted by template, to match URIs
	shadowed      map[string][]string   // server → URIs (and templates) another server keeps
	prompts       map[string]*Binding   // callable prompt name → binding
	promptsOf     map[string][]*Binding // by server
}

// fetchExtras reads the lists of a running server; nothing is started. It
// reports whether the server was there to ask (a server whose lists fail
// is not asked again until its catalog changes).
func (f *FrontDoor) fetchExtras(ctx context.Context, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, extrasTimeout)
	defer cancel()
	var x extras
	err := f.src.Extras(ctx, id, false, func(ctx context.Context, b provider.Extras) error {
		var err error
		x, err = readExtras(ctx, b)
		return err
	})
	switch {
	case errors.Is(err, provider.ErrNotRunning):
		return false
	case errors.Is(err, provider.ErrNoExtras):
		return true
	case err != nil:
		f.log.Warn("resources and prompts not read", telemetry.FieldServer, id, telemetry.FieldError, err)
		return true
	}
	f.extrasMu.Lock()
	f.extras[id] = x
	f.extrasMu.Unlock()
	return true
}

// refreshExtras reads the extras of servers that run and whose catalog is
// new, then serves what changed. It runs at the end of Refresh.
func (f *FrontDoor) refreshExtras(ctx context.Context, servables []Servable) {
	f.mu.RLock()
	versions, hidden := f.versions, f.hidden
	f.mu.RUnlock()
	for _, sv := range servables {
		if sv.Cold {
			continue
		}
		key := imageOf(sv.Spec) + "\x00" + versions[sv.ID]
		if f.extrasKey[sv.ID] == key {
			continue
		}
		if f.fetchExtras(ctx, sv.ID) {
			f.extrasKey[sv.ID] = key
		}
	}

	f.extrasMu.Lock()
	all := make(map[string]extras, len(f.extras))
	for k, v := range f.extras {
		all[k] = v
	}
	f.extrasMu.Unlock()

	// Keep what was read, with the tools, for the next boot.
	for _, sv := range servables {
		x, ok := all[sv.ID]
		c, known := f.cache[sv.ID]
		if !ok || !known || sv.Predefined {
			continue
		}
		key := c.Version + "\x00" + extrasHash(x)
		if f.extrasSaved[sv.ID] == key {
			continue
		}
		if err := saveCatalog(ctx, f.Catalogs, sv.ID, c, &x); err != nil {
			f.log.Warn("catalog not stored", telemetry.FieldServer, sv.ID, telemetry.FieldError, err)
			continue
		}
		f.extrasSaved[sv.ID] = key
	}

	view := extrasView{resourceOwner: map[string]string{}, templateOwner: map[string]string{}, shadowed: map[string][]string{},
		prompts: map[string]*Binding{}, promptsOf: map[string][]*Binding{}}
	resources := map[string]mcp.Resource{}
	templates := map[string]mcp.ResourceTemplate{}
	promptDefs := map[nameRequest]mcp.Prompt{}
	var promptReqs []nameRequest
	var sig strings.Builder
	for _, sv := range servables { // sorted by ID: the first keeps a URI
		x, ok := all[sv.ID]
		if !ok || hidden[sv.ID] {
			continue
		}
		for _, raw := range x.Resources {
			var r mcp.Resource
			if json.Unmarshal(raw, &r) != nil || r.URI == "" {
				continue
			}
			if _, taken := view.resourceOwner[r.URI]; taken {
				view.shadowed[sv.ID] = append(view.shadowed[sv.ID], r.URI)
				continue
			}
			view.resourceOwner[r.URI] = sv.ID
			resources[r.URI] = r
			fmt.Fprintf(&sig, "r %s %s %s\n", sv.ID, r.URI, raw)
		}
		for _, raw := range x.Templates {
			var t mcp.ResourceTemplate
			var u struct {
				URITemplate string `json:"uriTemplate"`
			}
			if json.Unmarshal(raw, &u) != nil || u.URITemplate == "" || json.Unmarshal(raw, &t) != nil {
				continue
			}
			if _, taken := view.templateOwner[u.URITemplate]; taken {
				view.shadowed[sv.ID] = append(view.shadowed[sv.ID], u.URITemplate)
				continue
			}
			view.templateOwner[u.URITemplate] = sv.ID
			if t.URITemplate != nil && t.URITemplate.Template != nil {
				view.templates = append(view.templates, servedTemplate{template: u.URITemplate, re: t.URITemplate.Regexp(), owner: sv.ID})
			}
			templates[u.URITemplate] = t
			fmt.Fprintf(&sig, "t %s %s %s\n", sv.ID, u.URITemplate, raw)
		}
		prefix := ""
		if f.naming != config.NamingFlat {
			prefix = sv.ID
			if sv.Spec != nil && sv.Spec.Prefix != "" {
				prefix = sv.Spec.Prefix
			}
		}
		for _, raw := range x.Prompts {
			var p mcp.Prompt
			if json.Unmarshal(raw, &p) != nil || p.Name == "" {
				continue
			}
			r := nameRequest{Server: sv.ID, Prefix: prefix, Tool: p.Name}
			if _, dup := promptDefs[r]; dup {
				continue
			}
			promptDefs[r] = p
			promptReqs = append(promptReqs, r)
			fmt.Fprintf(&sig, "p %s %s %s\n", sv.ID, p.Name, raw)
		}
	}

	var others []server.ServerPrompt
	var otherResources []server.ServerResource
	if f.srv != nil {
		f.mu.RLock()
		mine := f.view.prompts
		mineRes := f.view.resourceOwner
		f.mu.RUnlock()
		for name, p := range f.srv.ListPrompts() {
			if _, ok := mine[name]; !ok {
				others = append(others, *p)
			}
		}
		for uri, r := range f.srv.ListResources() {
			if _, ok := mineRes[uri]; !ok {
				otherResources = append(otherResources, *r)
			}
		}
	}
	taken := map[string]bool{}
	for _, p := range others {
		taken[p.Prompt.Name] = true
	}
	names := callableNames(promptReqs, func(n string) bool { return taken[n] })
	for _, r := range promptReqs {
		b := &Binding{Callable: names[r], Server: r.Server, Tool: r.Tool}
		view.prompts[b.Callable] = b
		view.promptsOf[b.Server] = append(view.promptsOf[b.Server], b)
		fmt.Fprintf(&sig, "n %s %s\n", b.Callable, b.Server)
	}
	for _, l := range view.promptsOf {
		sort.Slice(l, func(i, j int) bool { return l[i].Callable < l[j].Callable })
	}
	sort.Slice(view.templates, func(i, j int) bool { return view.templates[i].template < view.templates[j].template })

	f.mu.Lock()
	f.view = view
	f.mu.Unlock()
	if f.srv == nil || sig.String() == f.extrasSig {
		return
	}
	f.extrasSig = sig.String()

	res := otherResources
	for _, uri := range sortedKeys(resources) {
		res = append(res, server.ServerResource{Resource: resources[uri], Handler: f.readResource(view.resourceOwner[uri])})
	}
	tpl := make([]server.ServerResourceTemplate, 0, len(templates))
	for _, u := range sortedKeys(templates) {
		tpl = append(tpl, server.ServerResourceTemplate{Template: templates[u], Handler: server.ResourceTemplateHandlerFunc(f.readResource(view.templateOwner[u]))})
	}
	prompts := others
	for _, r := range promptReqs {
		p := promptDefs[r]
		p.Name = names[r]
		prompts = append(prompts, server.ServerPrompt{Prompt: p, Handler: f.getPrompt(r.Server, r.Tool)})
	}
	// One replacement per kind: one list_changed per kind and change.
	f.srv.SetResources(res...)
	f.srv.SetResourceTemplates(tpl...)
	f.srv.SetPrompts(prompts...)
}

// extrasHash identifies a set of extras.
func extrasHash(x extras) string {
	b, _ := json.Marshal(x)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// servedTemplate is a resource template the front door serves.
type servedTemplate struct {
	template string
	re       *regexp.Regexp
	owner    string
}

// ownerOf is the server that serves uri on the front door: a listed
// resource, a template named as such (completion refers to templates by
// their text), else the first template (by text) that uri matches, as
// resources/read finds it.
func (f *FrontDoor) ownerOf(uri string) (string, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if owner, ok := f.view.resourceOwner[uri]; ok {
		return owner, true
	}
	if owner, ok := f.view.templateOwner[uri]; ok {
		return owner, true
	}
	for _, t := range f.view.templates {
		if t.re.MatchString(uri) {
			return t.owner, true
		}
	}
	return "", false
}

// serves reports whether the caller in ctx is served anything of server:
// a server within its servers and not withheld (quarantined, disabled).
// What it is not served is not listed, and asked for by name it is
// unknown, as if it did not exist.
func (f *FrontDoor) serves(ctx context.Context, server string) bool {
	if f.Withheld != nil && f.Withheld(server) {
		return false
	}
	id, ok := auth.FromContext(ctx)
	return !ok || id.MayReach(server)
}

// mayUse says whether the caller may use server through the front door
// (read, get, complete): served it, with hangar:call.
func (f *FrontDoor) mayUse(ctx context.Context, server string) bool {
	if !f.serves(ctx, server) {
		return false
	}
	id, ok := auth.FromContext(ctx)
	return !ok || id.Has(auth.ScopeCall)
}

// resourceFilter is the OnAfterListResources hook: resources of servers
// the caller is not served are not listed (mcp-go has no resource filter).
func (f *FrontDoor) resourceFilter(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
	if res == nil {
		return
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := res.Resources[:0:0]
	for _, r := range res.Resources {
		if owner, mine := f.view.resourceOwner[r.URI]; mine && !f.serves(ctx, owner) {
			continue
		}
		out = append(out, r)
	}
	res.Resources = out
}

// templateFilter is resourceFilter for resources/templates/list.
func (f *FrontDoor) templateFilter(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
	if res == nil {
		return
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := res.ResourceTemplates[:0:0]
	for _, t := range res.ResourceTemplates {
		if t.URITemplate != nil && t.URITemplate.Template != nil {
			if owner, mine := f.view.templateOwner[t.URITemplate.Raw()]; mine && !f.serves(ctx, owner) {
				continue
			}
		}
		out = append(out, t)
	}
	res.ResourceTemplates = out
}

// UnservedURI reports whether uri belongs to a server the caller in ctx is
// not served: resources/read and resources/subscribe then answer as for a
// URI nobody serves.
func (f *FrontDoor) UnservedURI(ctx context.Context, uri string) bool {
	owner, ok := f.ownerOf(uri)
	return ok && !f.serves(ctx, owner)
}

// readResource forwards resources/read to owner, which may be started.
func (f *FrontDoor) readResource(owner string) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		if !f.mayUse(ctx, owner) {
			// The HTTP path answers such a read before mcp-go does
			// (hideUnserved), as for a URI nobody serves; this is the
			// second line, for every other way in.
			return nil, fmt.Errorf("handler not found for resource URI '%s': %w", req.Params.URI, server.ErrResourceNotFound)
		}
		if err := f.admit(ctx, string(mcp.MethodResourcesRead), owner, req.Params.URI, ""); err != nil {
			return nil, err
		}
		var raw json.RawMessage
		err := f.src.Extras(ctx, owner, true, func(ctx context.Context, b provider.Extras) error {
			var err error
			raw, err = b.ReadResource(ctx, req.Params.URI)
			return err
		})
		if err != nil {
			return nil, err
		}
		res, err := mcp.ParseReadResourceResult(&raw)
		if err != nil {
			return nil, fmt.Errorf("resources/read from %s: %w", owner, err)
		}
		return res.Contents, nil
	}
}

// getPrompt forwards prompts/get to owner under the prompt's raw name.
func (f *FrontDoor) getPrompt(owner, name string) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if !f.mayUse(ctx, owner) {
			// The prompt filter hides it from mcp-go's lookup already.
			return nil, fmt.Errorf("prompt '%s' not found: %w", req.Params.Name, server.ErrPromptNotFound)
		}
		if err := f.admit(ctx, string(mcp.MethodPromptsGet), owner, "", name); err != nil {
			return nil, err
		}
		var raw json.RawMessage
		err := f.src.Extras(ctx, owner, true, func(ctx context.Context, b provider.Extras) error {
			var err error
			raw, err = b.GetPrompt(ctx, name, req.Params.Arguments)
			return err
		})
		if err != nil {
			return nil, err
		}
		return mcp.ParseGetPromptResult(&raw)
	}
}

// promptFilter hides the prompts of servers a caller may not use
// (mcp-go applies it at prompts/get too).
func (f *FrontDoor) promptFilter(ctx context.Context, prompts []mcp.Prompt) []mcp.Prompt {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := prompts[:0:0]
	for _, p := range prompts {
		if b, mine := f.view.prompts[p.Name]; mine && !f.mayUse(ctx, b.Server) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// extrasDetails is hangar_details' view of a server's resources and prompts.
func (f *FrontDoor) extrasDetails(server string) map[string]any {
	resources := []string{} // never null in the answer
	for uri, owner := range f.view.resourceOwner {
		if owner == server {
			resources = append(resources, uri)
		}
	}
	for u, owner := range f.view.templateOwner {
		if owner == server {
			resources = append(resources, u)
		}
	}
	sort.Strings(resources)
	prompts := make([]Binding, 0, len(f.view.promptsOf[server]))
	for _, b := range f.view.promptsOf[server] {
		prompts = append(prompts, *b)
	}
	shadowed := append([]string{}, f.view.shadowed[server]...)
	return map[string]any{"resources": resources, "shadowed": shadowed, "prompts": prompts}
}

// Lister lists a running server's resources, resource templates or
// prompts (provider.Extras, an mcpconn.Conn).
type Lister interface {
	ListAll(ctx context.Context, kind string) ([]json.RawMessage, error)
}

// readExtras lists b's resources, resource templates and prompts.
func readExtras(ctx context.Context, b Lister) (extras, error) {
	var x extras
	var err error
	if x.Resources, err = b.ListAll(ctx, mcpconn.KindResources); err != nil {
		return x, fmt.Errorf("resources/list: %w", err)
	}
	if x.Templates, err = b.ListAll(ctx, mcpconn.KindResourceTemplates); err != nil {
		return x, fmt.Errorf("resources/templates/list: %w", err)
	}
	if x.Prompts, err = b.ListAll(ctx, mcpconn.KindPrompts); err != nil {
		return x, fmt.Errorf("prompts/list: %w", err)
	}
	return x, nil
}
