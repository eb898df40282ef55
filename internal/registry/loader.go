package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/packages"
)

// Registrar is what the Loader needs of the gateway's providers.
type Registrar interface {
	// Register adds a COLD provider for spec; an error wrapping ErrIDTaken
	// means spec.ID is in use (the Loader then tries the next suffix).
	Register(spec *config.Server) error
	// Deregister removes the provider and stops it for good; an unknown
	// id is not an error.
	Deregister(ctx context.Context, id string) error
	// Start brings the provider to READY and returns the names of the
	// tools its policy allows; its image pull is reported to progress.
	Start(ctx context.Context, id string, progress call.Progress) ([]string, error)
}

// Inspector may be implemented by a Registrar so that Runtime reports each
// hot-loaded server's state, and notices one that was removed or replaced
// behind the Loader's back (a config reload that took its ID).
type Inspector interface {
	// Inspect returns the provider's state and config.Server.Origin; ok
	// is false when there is no provider with that id.
	Inspect(id string) (state, origin string, ok bool)
}

// ErrIDTaken is wrapped by Register's error when the ID is in use.
var ErrIDTaken = errors.New("mcp server id already in use")

// Searcher finds registry entries; *Client is one.
type Searcher interface {
	Search(ctx context.Context, name string) ([]Entry, error)
}

// LoadResult is hangar_load's answer (seed 001). Its JSON carries, besides
// status and message: mcp_server and tools when loaded; matches when
// ambiguous; missing and instructions when secrets are missing; name (the
// registry name) once the name was matched; warnings when there are any.
type LoadResult struct {
	Status       string
	MCPServer    string
	Tools        []string
	Message      string
	Name         string
	Matches      []string
	Missing      []string
	Instructions string
	Warnings     []string
}

// MarshalJSON writes the fields of the result's status only.
func (r LoadResult) MarshalJSON() ([]byte, error) {
	m := map[string]any{"status": r.Status, "message": r.Message}
	if r.Name != "" {
		m["name"] = r.Name
	}
	switch r.Status {
	case StatusLoaded:
		m["mcp_server"] = r.MCPServer
		m["tools"] = nonNil(r.Tools)
	case StatusAmbiguous:
		m["matches"] = nonNil(r.Matches)
	case StatusMissingSecrets:
		m["missing"] = nonNil(r.Missing)
		m["instructions"] = r.Instructions
	}
	if len(r.Warnings) > 0 {
		m["warnings"] = r.Warnings
	}
	return json.Marshal(m)
}

// UnloadResult is hangar_unload's answer (seed 001); lifetime_seconds is
// in the JSON of an unloaded server only.
type UnloadResult struct {
	Status          string
	MCPServer       string
	Message         string
	LifetimeSeconds float64
}

// MarshalJSON writes lifetime_seconds on success only.
func (r UnloadResult) MarshalJSON() ([]byte, error) {
	m := map[string]any{"status": r.Status, "mcp_server": r.MCPServer, "message": r.Message}
	if r.Status == StatusUnloaded {
		m["lifetime_seconds"] = r.LifetimeSeconds
	}
	return json.Marshal(m)
}

// RuntimeServer is one hot-loaded server, for hangar_list and
// hangar_status (runtime_mcp_servers).
type RuntimeServer struct {
	ID              string    // provider ID (mcp_server in hangar_list, id in hangar_status)
	Name            string    // registry name
	State           string    // provider state: cold, initializing, ready, degraded, dead; "unknown" without an Inspector
	Source          string    // "registry:<name>" or "catalog:<name>"
	Verified        bool      // see Verified
	Ephemeral       bool      // always true: nothing about it survives a restart
	LoadedAt        time.Time // when hangar_load finished
	LifetimeSeconds float64   // since LoadedAt
}

// ReasonUnloaded is the stop reason of hangar_unload.
const ReasonUnloaded = "unloaded"

// Loader loads and unloads servers at runtime (hangar_load, hangar_unload).
// Everything it knows is in memory: hot-loaded servers are ephemeral.
// Loads run one at a time; unloads and Runtime do not wait for them.
type Loader struct {
	cfg    config.Registry
	search Searcher
	reg    Registrar
	log    *slog.Logger

	// Lookup reads the gateway's environment for secrets (os.LookupEnv).
	Lookup func(string) (string, bool)
	// Execution supplies hot-loaded servers' default max_concurrency.
	Execution config.Execution
	// Now is the clock (time.Now).
	Now func() time.Time
	// AllowedEgress is install.allowed_egress: the hosts a server's
	// MetaEgress may ask for (none by default).
	AllowedEgress []string
	// Packages releases the image of an npm or PyPI server when it is
	// unloaded (or fails to start); nil: nothing to release.
	Packages interface {
		Release(ctx context.Context, s *config.Server)
	}

	loadMu sync.Mutex // one load at a time
	mu     sync.Mutex
	loaded map[string]*hotServer // by provider ID
}

type hotServer struct {
	id, name, source string
	verified         bool
	loadedAt         time.Time
	allow, deny      []string
	spec             *config.Server
}

// NewLoader returns a loader that finds servers with client and runs them
// as providers through reg.
func NewLoader(cfg config.Registry, client Searcher, reg Registrar, log *slog.Logger) *Loader {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Loader{
		cfg: cfg, search: client, reg: reg, log: log,
		Lookup:    os.LookupEnv,
		Execution: config.Default().Execution,
		Now:       time.Now,
		loaded:    map[string]*hotServer{},
	}
}

// startGrace is added to a server's start timeout for the handshake's tail.
const startGrace = 5 * time.Second

// buildGrace is added for an npm or PyPI server, whose first start
// resolves its package and builds its image.
const buildGrace = 10 * time.Minute

// startDeadline bounds a hot-load's start of spec.
func startDeadline(spec *config.Server) time.Duration {
	d := spec.StartTimeout + startGrace
	if spec.Package != nil {
		d += buildGrace
	}
	return d
}

// cleanupTimeout bounds removing a server whose start failed.
const cleanupTimeout = 30 * time.Second

// Load finds name, resolves it and starts it; see LoadResult. Loading a
// server that is already hot-loaded (under the same tool policy) answers
// loaded with its existing ID.
func (l *Loader) Load(ctx context.Context, progress call.Progress, name string, forceUnverified bool, allow, deny []string) LoadResult {
	name = strings.TrimSpace(name)
	if name == "" {
		return LoadResult{Status: StatusFailed, Message: "name is required"}
	}
	l.loadMu.Lock()
	defer l.loadMu.Unlock()
	l.prune()

	if h := l.loadedAs(name); h != nil {
		return l.again(ctx, progress, h, allow, deny)
	}
	entries, err := l.search.Search(ctx, name)
	if err != nil {
		return LoadResult{Status: StatusFailed, Message: fmt.Sprintf("searching for %q: %v", name, err)}
	}
	e, out := Match(entries, name)
	if out.Status != "" {
		if w, ok := l.search.(interface{ Where() string }); ok && out.Status == StatusNotFound {
			out.Message += " in " + w.Where()
		}
		return LoadResult{Status: out.Status, Message: out.Message, Matches: out.Matches}
	}
	res := LoadResult{Name: e.Server.Name}
	if h := l.loadedAs(e.Server.Name); h != nil {
		return l.again(ctx, progress, h, allow, deny)
	}
	spec, out := Resolve(e, l.Lookup, Options{
		VerifiedNamespaces: l.cfg.VerifiedNamespaces,
		ForceUnverified:    forceUnverified,
		Execution:          l.Execution,
		IdleTTL:            l.cfg.IdleTTL,
		AllowTools:         allow,
		DenyTools:          deny,
		PackageTypes:       l.cfg.PackageTypes,
	})
	res.Warnings = out.Warnings
	if out.Status != StatusResolved {
		res.Status, res.Message = out.Status, out.Message
		res.Missing, res.Instructions = out.Missing, out.Instructions
		return res
	}
	if msg := l.applyEgress(e.Server, spec); msg != "" {
		res.Status, res.Message = StatusFailed, msg
		return res
	}
	if n := l.count(); l.cfg.MaxHotLoaded > 0 && n >= l.cfg.MaxHotLoaded {
		res.Status = StatusFailed
		res.Message = fmt.Sprintf("%d MCP servers are hot-loaded, the most registry.max_hot_loaded allows; hangar_unload one first", n)
		return res
	}

	// Register under the first free ID: name, name-2, name-3...
	base := spec.ID
	for n := 1; ; n++ {
		s := *spec
		s.ID = withSuffix(base, n)
		err := l.reg.Register(&s)
		if err == nil {
			spec = &s
			break
		}
		if !errors.Is(err, ErrIDTaken) || n >= 100 {
			res.Status, res.Message = StatusFailed, fmt.Sprintf("registering %s: %v", e.Server.Name, err)
			return res
		}
	}
	res.MCPServer = spec.ID

	sctx, cancel := context.WithTimeout(ctx, startDeadline(spec))
	tools, err := l.reg.Start(sctx, spec.ID, progress)
	cancel()
	if err != nil {
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		if derr := l.reg.Deregister(dctx, spec.ID); derr != nil {
			l.log.Warn("removing a hot-loaded server that failed to start", "mcp_server", spec.ID, "error", derr)
		}
		l.release(dctx, spec)
		dcancel()
		res.Status = StatusFailed
		res.Message = redact(fmt.Sprintf("%s (%s) failed to start: %v", e.Server.Name, describe(spec), err), out.Secrets)
		return res
	}
	h := &hotServer{
		id: spec.ID, name: e.Server.Name, source: e.Source + ":" + e.Server.Name,
		verified: out.Verified, loadedAt: l.Now(),
		allow: slices.Clone(allow), deny: slices.Clone(deny), spec: spec,
	}
	l.mu.Lock()
	l.loaded[h.id] = h
	l.mu.Unlock()
	l.log.Info("mcp server hot-loaded", "mcp_server", h.id, "name", h.name, "source", h.source,
		"verified", h.verified, "tools", len(tools))
	res.Status, res.Tools = StatusLoaded, tools
	res.Message = fmt.Sprintf("MCP Server %s loaded as %s with %d tools", e.Server.Name, spec.ID, len(tools))
	return res
}

// describe names what a spec runs, for messages.
func describe(s *config.Server) string {
	switch {
	case s.Mode == config.ModeRemote:
		return "remote " + s.Endpoint
	case s.Package != nil:
		return packages.Describe(*s.Package)
	}
	return "image " + s.Image
}

// release lets the image of an npm or PyPI server go.
func (l *Loader) release(ctx context.Context, s *config.Server) {
	if l.Packages != nil && s != nil && s.Package != nil {
		l.Packages.Release(ctx, s)
	}
}

// again answers a load of a server that is already hot-loaded: it is
// started if it idled out, and its tools are returned.
func (l *Loader) again(ctx context.Context, progress call.Progress, h *hotServer, allow, deny []string) LoadResult {
	res := LoadResult{Name: h.name, MCPServer: h.id}
	if !slices.Equal(h.allow, allow) || !slices.Equal(h.deny, deny) {
		res.Status = StatusFailed
		res.Message = fmt.Sprintf("%s is already hot-loaded as %s with another tool policy; hangar_unload it first to change the policy", h.name, h.id)
		return res
	}
	wait := 2 * time.Minute
	if h.spec != nil && h.spec.Package != nil {
		wait += buildGrace
	}
	sctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tools, err := l.reg.Start(sctx, h.id, progress)
	if err != nil {
		res.Status, res.Message = StatusFailed, fmt.Sprintf("%s is hot-loaded as %s but does not start: %v", h.name, h.id, err)
		return res
	}
	res.Status, res.Tools = StatusLoaded, tools
	res.Message = fmt.Sprintf("MCP Server %s was already loaded as %s", h.name, h.id)
	return res
}

// loadedAs returns the hot-loaded server that name refers to, if exactly
// one does.
func (l *Loader) loadedAs(name string) *hotServer {
	l.mu.Lock()
	defer l.mu.Unlock()
	var found *hotServer
	for _, h := range l.loaded {
		if nameMatches(h.name, name) {
			if found != nil {
				return nil
			}
			found = h
		}
	}
	return found
}

func (l *Loader) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.loaded)
}

// Unload removes a hot-loaded server and stops it.
func (l *Loader) Unload(ctx context.Context, id string) UnloadResult {
	id = strings.TrimSpace(id)
	l.prune()
	l.mu.Lock()
	h := l.loaded[id]
	delete(l.loaded, id)
	l.mu.Unlock()
	if h == nil {
		msg := fmt.Sprintf("%s was not loaded with hangar_load; only hot-loaded MCP servers can be unloaded", id)
		if in, ok := l.reg.(Inspector); ok {
			if _, _, exists := in.Inspect(id); !exists {
				msg = fmt.Sprintf("no hot-loaded MCP server %s", id)
			}
		}
		return UnloadResult{Status: StatusNotHotLoaded, MCPServer: id, Message: msg}
	}
	lifetime := l.Now().Sub(h.loadedAt).Seconds()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := l.reg.Deregister(dctx, id); err != nil {
		l.log.Warn("unloading a hot-loaded server", "mcp_server", id, "error", err)
		return UnloadResult{Status: StatusFailed, MCPServer: id,
			Message: fmt.Sprintf("%s was removed, but stopping it failed: %v", id, err)}
	}
	l.release(dctx, h.spec)
	l.log.Info("mcp server unloaded", "mcp_server", id, "name", h.name, "lifetime_s", lifetime)
	return UnloadResult{Status: StatusUnloaded, MCPServer: id, Message: "MCP Server unloaded", LifetimeSeconds: roundMillis(lifetime)}
}

func roundMillis(s float64) float64 { return math.Round(s*1000) / 1000 }

// Runtime lists the hot-loaded servers by ID.
func (l *Loader) Runtime() []RuntimeServer {
	l.prune()
	in, _ := l.reg.(Inspector)
	now := l.Now()
	l.mu.Lock()
	list := make([]*hotServer, 0, len(l.loaded))
	for _, h := range l.loaded {
		list = append(list, h)
	}
	l.mu.Unlock()
	slices.SortFunc(list, func(a, b *hotServer) int { return strings.Compare(a.id, b.id) })
	out := make([]RuntimeServer, 0, len(list))
	for _, h := range list {
		state := "unknown"
		if in != nil {
			if st, _, ok := in.Inspect(h.id); ok {
				state = st
			}
		}
		out = append(out, RuntimeServer{
			ID: h.id, Name: h.name, State: state, Source: h.source, Verified: h.verified,
			Ephemeral: true, LoadedAt: h.loadedAt, LifetimeSeconds: roundMillis(now.Sub(h.loadedAt).Seconds()),
		})
	}
	return out
}

// prune forgets hot-loaded servers whose provider is gone or is no longer
// the hot-loaded one (a config reload took the ID).
func (l *Loader) prune() {
	in, ok := l.reg.(Inspector)
	if !ok {
		return
	}
	var gone []string
	var specs []*config.Server
	l.mu.Lock()
	for id, h := range l.loaded {
		if _, origin, exists := in.Inspect(id); !exists || origin != config.OriginRegistry {
			delete(l.loaded, id)
			gone = append(gone, id)
			specs = append(specs, h.spec)
			l.log.Warn("hot-loaded server removed outside hangar_unload", "mcp_server", id, "name", h.name)
		}
	}
	l.mu.Unlock()
	// Withdraw the claim too, so that it is not served again when what
	// took its ID goes away.
	for i, id := range gone {
		dctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		if err := l.reg.Deregister(dctx, id); err != nil {
			l.log.Warn("withdrawing a hot-loaded server", "mcp_server", id, "error", err)
		}
		l.release(dctx, specs[i])
		cancel()
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
