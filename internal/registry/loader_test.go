package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
)

// fakeSearch answers every search with the entries matching the name.
type fakeSearch struct {
	entries []Entry
	err     error
	calls   atomic.Int32
}

func (f *fakeSearch) Search(_ context.Context, name string) ([]Entry, error) {
	f.calls.Add(1)
	if f.err != nil {
		return nil, f.err
	}
	var out []Entry
	for _, e := range f.entries {
		if strings.Contains(strings.ToLower(e.Server.Name), strings.ToLower(name)) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *fakeSearch) Where() string { return "the fake" }

// fakeReg is a Registrar and Inspector in memory.
type fakeReg struct {
	mu           sync.Mutex
	specs        map[string]*config.Server
	states       map[string]string
	taken        map[string]bool // IDs in use elsewhere
	startErr     error
	tools        []string
	deregistered []string
	startTimeout time.Duration // the deadline Start saw
}

func newFakeReg() *fakeReg {
	return &fakeReg{specs: map[string]*config.Server{}, states: map[string]string{}, taken: map[string]bool{}, tools: []string{"echo", "env"}}
}

func (f *fakeReg) Register(s *config.Server) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.taken[s.ID] || f.specs[s.ID] != nil {
		return fmt.Errorf("%w: %s", ErrIDTaken, s.ID)
	}
	f.specs[s.ID] = s
	f.states[s.ID] = "cold"
	return nil
}

// Deregister withdraws the hot-load claim only, like the catalog: a server
// of another origin that took the ID stays.
func (f *fakeReg) Deregister(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.specs[id]; s != nil && s.Origin == config.OriginRegistry {
		delete(f.specs, id)
		delete(f.states, id)
	}
	f.deregistered = append(f.deregistered, id)
	return nil
}

func (f *fakeReg) Start(ctx context.Context, id string, _ call.Progress) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if dl, ok := ctx.Deadline(); ok {
		f.startTimeout = time.Until(dl).Round(time.Second)
	}
	if f.specs[id] == nil {
		return nil, errors.New("unknown " + id)
	}
	if f.startErr != nil {
		f.states[id] = "dead"
		return nil, f.startErr
	}
	f.states[id] = "ready"
	return slices.Clone(f.tools), nil
}

func (f *fakeReg) Inspect(id string) (string, string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.specs[id]
	if s == nil {
		return "", "", false
	}
	return f.states[id], s.Origin, true
}

func (f *fakeReg) spec(id string) *config.Server {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.specs[id]
}

// clock is a settable time.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func catalogEntry(name string, pkgs ...Package) Entry {
	return Entry{Server: ServerJSON{Name: name, Description: "d", Packages: pkgs}, Source: SourceCatalog}
}

var testkitPkg = Package{RegistryType: "oci", Identifier: "mcp-hangar/testkit", Version: "dev", Transport: Transport{Type: "stdio"}}

func newTestLoader(t *testing.T, cfg config.Registry, entries ...Entry) (*Loader, *fakeSearch, *fakeReg, *clock) {
	t.Helper()
	if cfg.VerifiedNamespaces == nil {
		cfg.VerifiedNamespaces = []string{"io.github.ok/"}
	}
	s := &fakeSearch{entries: entries}
	reg := newFakeReg()
	l := NewLoader(cfg, s, reg, nil)
	clk := &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	l.Now = clk.Now
	l.Lookup = envOf("HANGAR_SECRET_TOKEN=sup3r-s3cret")
	return l, s, reg, clk
}

func TestLoaderLoadAndUnload(t *testing.T) {
	t.Parallel()
	l, _, reg, clk := newTestLoader(t, config.Registry{IdleTTL: 7 * time.Second, MaxHotLoaded: 5},
		catalogEntry("io.github.ok/testkit", testkitPkg))
	res := l.Load(context.Background(), call.Progress{}, "testkit", false, []string{"e*"}, []string{"env"})
	if res.Status != StatusLoaded || res.MCPServer != "testkit" || !slices.Equal(res.Tools, []string{"echo", "env"}) || res.Name != "io.github.ok/testkit" {
		t.Fatalf("Load = %+v", res)
	}
	spec := reg.spec("testkit")
	if spec == nil || spec.Origin != config.OriginRegistry || spec.Image != "mcp-hangar/testkit:dev" || spec.IdleTTL != 7*time.Second ||
		!slices.Equal(spec.Tools.AllowList, []string{"e*"}) || !slices.Equal(spec.Tools.DenyList, []string{"env"}) {
		t.Errorf("registered spec = %+v", spec)
	}
	if reg.startTimeout != spec.StartTimeout+startGrace {
		t.Errorf("Start deadline %s, want the start timeout plus %s", reg.startTimeout, startGrace)
	}

	clk.Add(90500 * time.Millisecond)
	rt := l.Runtime()
	want := []RuntimeServer{{ID: "testkit", Name: "io.github.ok/testkit", State: "ready", Source: "catalog:io.github.ok/testkit",
		Verified: true, Ephemeral: true, LoadedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), LifetimeSeconds: 90.5}}
	if !reflect.DeepEqual(rt, want) {
		t.Errorf("Runtime = %+v, want %+v", rt, want)
	}

	u := l.Unload(context.Background(), "testkit")
	if u.Status != StatusUnloaded || u.MCPServer != "testkit" || u.LifetimeSeconds != 90.5 || u.Message != "MCP Server unloaded" {
		t.Errorf("Unload = %+v", u)
	}
	if len(l.Runtime()) != 0 || reg.spec("testkit") != nil || !slices.Equal(reg.deregistered, []string{"testkit"}) {
		t.Errorf("after Unload: runtime %v, registered %v, deregistered %v", l.Runtime(), reg.spec("testkit"), reg.deregistered)
	}
	if u := l.Unload(context.Background(), "testkit"); u.Status != StatusNotHotLoaded || !strings.Contains(u.Message, "no hot-loaded MCP server testkit") {
		t.Errorf("second Unload = %+v", u)
	}
}

func TestLoaderUnloadConfigured(t *testing.T) {
	t.Parallel()
	l, _, reg, _ := newTestLoader(t, config.Registry{})
	if err := reg.Register(&config.Server{ID: "math"}); err != nil {
		t.Fatal(err)
	}
	u := l.Unload(context.Background(), "math")
	if u.Status != StatusNotHotLoaded || !strings.Contains(u.Message, "only hot-loaded MCP servers can be unloaded") {
		t.Errorf("Unload(configured) = %+v", u)
	}
	if reg.spec("math") == nil {
		t.Error("a configured server was removed")
	}
}

func TestLoaderIDClash(t *testing.T) {
	t.Parallel()
	l, _, reg, _ := newTestLoader(t, config.Registry{},
		catalogEntry("io.github.ok/fs", testkitPkg), catalogEntry("io.github.ok2/fs", testkitPkg))
	l.cfg.VerifiedNamespaces = []string{"io.github.ok/", "io.github.ok2/"}
	reg.taken["fs"] = true // a group, say
	if res := l.Load(context.Background(), call.Progress{}, "io.github.ok/fs", false, nil, nil); res.Status != StatusLoaded || res.MCPServer != "fs-2" {
		t.Fatalf("Load = %+v, want fs-2", res)
	}
	if res := l.Load(context.Background(), call.Progress{}, "io.github.ok2/fs", false, nil, nil); res.Status != StatusLoaded || res.MCPServer != "fs-3" {
		t.Fatalf("Load = %+v, want fs-3", res)
	}
	// Both loaded: the short name is now ambiguous.
	if res := l.Load(context.Background(), call.Progress{}, "fs", false, nil, nil); res.Status != StatusAmbiguous {
		t.Errorf("Load(fs) = %+v, want ambiguous", res)
	}
}

func TestLoaderStartFailure(t *testing.T) {
	t.Parallel()
	pkg := testkitPkg
	pkg.EnvironmentVariables = []KeyValueInput{{Name: "TOKEN", Input: Input{IsRequired: true, IsSecret: true}}}
	l, _, reg, _ := newTestLoader(t, config.Registry{MaxHotLoaded: 1}, catalogEntry("io.github.ok/tk", pkg))
	reg.startErr = errors.New("start_failed: tk (stderr: bad token sup3r-s3cret)")
	res := l.Load(context.Background(), call.Progress{}, "tk", false, nil, nil)
	if res.Status != StatusFailed || !strings.Contains(res.Message, "failed to start") || !strings.Contains(res.Message, "image mcp-hangar/testkit:dev") {
		t.Fatalf("Load = %+v", res)
	}
	if strings.Contains(res.Message, "sup3r-s3cret") || !strings.Contains(res.Message, "[REDACTED]") {
		t.Errorf("message %q leaks the secret", res.Message)
	}
	if reg.spec("tk") != nil || !slices.Equal(reg.deregistered, []string{"tk"}) || len(l.Runtime()) != 0 {
		t.Errorf("a failed start left the server registered: %v %v %v", reg.spec("tk"), reg.deregistered, l.Runtime())
	}
	// The failed load took no slot.
	reg.startErr = nil
	if res := l.Load(context.Background(), call.Progress{}, "tk", false, nil, nil); res.Status != StatusLoaded {
		t.Errorf("Load after a failed one = %+v", res)
	}
	b, _ := json.Marshal(res)
	if strings.Contains(string(b), "sup3r-s3cret") {
		t.Errorf("answer %s leaks the secret", b)
	}
}

func TestLoaderMaxHotLoaded(t *testing.T) {
	t.Parallel()
	l, _, _, _ := newTestLoader(t, config.Registry{MaxHotLoaded: 1},
		catalogEntry("io.github.ok/a", testkitPkg), catalogEntry("io.github.ok/b", testkitPkg))
	if res := l.Load(context.Background(), call.Progress{}, "a", false, nil, nil); res.Status != StatusLoaded {
		t.Fatalf("Load(a) = %+v", res)
	}
	res := l.Load(context.Background(), call.Progress{}, "b", false, nil, nil)
	if res.Status != StatusFailed || !strings.Contains(res.Message, "max_hot_loaded") {
		t.Errorf("Load(b) = %+v, want failed on max_hot_loaded", res)
	}
	// Loading a again is not a new slot.
	if res := l.Load(context.Background(), call.Progress{}, "a", false, nil, nil); res.Status != StatusLoaded {
		t.Errorf("Load(a) again = %+v", res)
	}
	l.Unload(context.Background(), "a")
	if res := l.Load(context.Background(), call.Progress{}, "b", false, nil, nil); res.Status != StatusLoaded {
		t.Errorf("Load(b) after an unload = %+v", res)
	}
}

func TestLoaderAgain(t *testing.T) {
	t.Parallel()
	l, s, reg, _ := newTestLoader(t, config.Registry{}, catalogEntry("io.github.ok/fs", testkitPkg))
	first := l.Load(context.Background(), call.Progress{}, "fs", false, []string{"read_*"}, nil)
	reg.mu.Lock()
	reg.states["fs"] = "cold" // idled out
	reg.mu.Unlock()
	for _, name := range []string{"fs", "io.github.ok/fs"} {
		again := l.Load(context.Background(), call.Progress{}, name, false, []string{"read_*"}, nil)
		if again.Status != StatusLoaded || again.MCPServer != first.MCPServer || !strings.Contains(again.Message, "already loaded") ||
			!slices.Equal(again.Tools, first.Tools) {
			t.Errorf("Load(%s) again = %+v", name, again)
		}
	}
	if n := s.calls.Load(); n != 1 {
		t.Errorf("%d searches, want 1: a loaded server is found without searching", n)
	}
	if st, _, _ := reg.Inspect("fs"); st != "ready" {
		t.Errorf("state %s, want the idle server started again", st)
	}
	other := l.Load(context.Background(), call.Progress{}, "fs", false, nil, []string{"rm"})
	if other.Status != StatusFailed || !strings.Contains(other.Message, "another tool policy") {
		t.Errorf("Load with another policy = %+v", other)
	}
}

func TestLoaderOutcomes(t *testing.T) {
	t.Parallel()
	secretPkg := testkitPkg
	secretPkg.EnvironmentVariables = []KeyValueInput{{Name: "GITHUB_TOKEN", Input: Input{IsRequired: true, IsSecret: true, Description: "a PAT"}}}
	l, s, reg, _ := newTestLoader(t, config.Registry{},
		catalogEntry("io.github.ok/dup", testkitPkg), catalogEntry("io.github.ok2/dup", testkitPkg),
		catalogEntry("io.github.stranger/tool", testkitPkg),
		catalogEntry("io.github.ok/needs-secret", secretPkg),
		catalogEntry("io.github.ok/node", Package{RegistryType: "nuget", Identifier: "Ok.Node"}),
	)
	tests := []struct {
		name, query string
		force       bool
		status      string
		check       func(LoadResult) bool
	}{
		{"not found", "nothing", false, StatusNotFound, func(r LoadResult) bool { return strings.Contains(r.Message, "in the fake") }},
		{"ambiguous", "dup", false, StatusAmbiguous, func(r LoadResult) bool {
			return slices.Equal(r.Matches, []string{"io.github.ok/dup", "io.github.ok2/dup"})
		}},
		{"unverified", "tool", false, StatusUnverified, func(r LoadResult) bool { return r.Name == "io.github.stranger/tool" }},
		{"forced", "tool", true, StatusLoaded, func(r LoadResult) bool { return len(r.Warnings) == 1 }},
		{"missing secrets", "needs-secret", false, StatusMissingSecrets, func(r LoadResult) bool {
			return slices.Equal(r.Missing, []string{"GITHUB_TOKEN"}) && strings.Contains(r.Instructions, "HANGAR_SECRET_GITHUB_TOKEN")
		}},
		{"not runnable", "node", false, StatusFailed, func(r LoadResult) bool { return strings.Contains(r.Message, ".NET") }},
		{"empty name", "  ", false, StatusFailed, func(r LoadResult) bool { return r.Message == "name is required" }},
	}
	for _, tt := range tests {
		res := l.Load(context.Background(), call.Progress{}, tt.query, tt.force, nil, nil)
		if res.Status != tt.status || !tt.check(res) {
			t.Errorf("%s: Load(%q) = %+v, want status %s", tt.name, tt.query, res, tt.status)
		}
	}
	if n := len(reg.specs); n != 1 {
		t.Errorf("%d servers registered, want only the forced one", n)
	}
	s.err = errors.New("registry https://r unreachable: connection refused")
	if res := l.Load(context.Background(), call.Progress{}, "other", false, nil, nil); res.Status != StatusFailed || !strings.Contains(res.Message, "connection refused") {
		t.Errorf("Load with a failing search = %+v", res)
	}
}

// A hot-loaded server whose provider went away (a reload took its ID) is
// forgotten.
func TestLoaderPrune(t *testing.T) {
	t.Parallel()
	l, _, reg, _ := newTestLoader(t, config.Registry{}, catalogEntry("io.github.ok/fs", testkitPkg))
	l.Load(context.Background(), call.Progress{}, "fs", false, nil, nil)
	reg.mu.Lock()
	reg.specs["fs"] = &config.Server{ID: "fs"} // replaced by a configured server
	reg.mu.Unlock()
	if rt := l.Runtime(); len(rt) != 0 {
		t.Errorf("Runtime = %+v, want the replaced server gone", rt)
	}
	if u := l.Unload(context.Background(), "fs"); u.Status != StatusNotHotLoaded {
		t.Errorf("Unload = %+v", u)
	}
	if reg.spec("fs") == nil {
		t.Error("Unload removed the configured server")
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if !slices.Contains(reg.deregistered, "fs") {
		t.Error("the pruned server's hot-load claim was not withdrawn")
	}
}

func TestLoaderConcurrent(t *testing.T) {
	t.Parallel()
	var entries []Entry
	for i := range 8 {
		entries = append(entries, catalogEntry(fmt.Sprintf("io.github.ok/s%d", i), testkitPkg))
	}
	l, _, _, _ := newTestLoader(t, config.Registry{MaxHotLoaded: 6}, entries...)
	var wg sync.WaitGroup
	var loaded atomic.Int32
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if l.Load(context.Background(), call.Progress{}, fmt.Sprintf("s%d", i), false, nil, nil).Status == StatusLoaded {
				loaded.Add(1)
			}
		}()
		go func() {
			defer wg.Done()
			_ = l.Runtime()
			_ = l.Unload(context.Background(), "nope")
		}()
	}
	wg.Wait()
	if loaded.Load() != 6 || len(l.Runtime()) != 6 {
		t.Errorf("%d loaded, runtime %d; want max_hot_loaded 6", loaded.Load(), len(l.Runtime()))
	}
}

func TestResultJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    any
		want string
	}{
		{LoadResult{Status: StatusLoaded, MCPServer: "fs", Message: "m", Name: "a/fs"},
			`{"mcp_server":"fs","message":"m","name":"a/fs","status":"loaded","tools":[]}`},
		{LoadResult{Status: StatusLoaded, MCPServer: "fs", Tools: []string{"read"}, Warnings: []string{"w"}},
			`{"mcp_server":"fs","message":"","status":"loaded","tools":["read"],"warnings":["w"]}`},
		{LoadResult{Status: StatusAmbiguous, Message: "m", Matches: []string{"a/x", "b/x"}, MCPServer: "ignored"},
			`{"matches":["a/x","b/x"],"message":"m","status":"ambiguous"}`},
		{LoadResult{Status: StatusNotFound, Message: "m"}, `{"message":"m","status":"not_found"}`},
		{LoadResult{Status: StatusMissingSecrets, Message: "m", Name: "a/x", Missing: []string{"T"}, Instructions: "i"},
			`{"instructions":"i","message":"m","missing":["T"],"name":"a/x","status":"missing_secrets"}`},
		{LoadResult{Status: StatusUnverified, Message: "m", Name: "a/x"}, `{"message":"m","name":"a/x","status":"unverified"}`},
		{LoadResult{Status: StatusFailed, Message: "m", MCPServer: "x"}, `{"message":"m","status":"failed"}`},
		{UnloadResult{Status: StatusUnloaded, MCPServer: "fs", Message: "MCP Server unloaded", LifetimeSeconds: 3600.5},
			`{"lifetime_seconds":3600.5,"mcp_server":"fs","message":"MCP Server unloaded","status":"unloaded"}`},
		{UnloadResult{Status: StatusNotHotLoaded, MCPServer: "fs", Message: "m", LifetimeSeconds: 1},
			`{"mcp_server":"fs","message":"m","status":"not_hot_loaded"}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.v)
		if err != nil || string(b) != tt.want {
			t.Errorf("json(%+v) = %s, %v\n want %s", tt.v, b, err, tt.want)
		}
	}
}

// releases records what the Loader releases.
type releases struct {
	mu  sync.Mutex
	ids []string
}

func (r *releases) Release(_ context.Context, s *config.Server) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = append(r.ids, s.ID+"="+s.Package.String())
}

// TestLoaderPackages: an npm entry loads like an oci one, its spec running
// the package from the entry's registry; its image is released at unload
// and after a failed start.
func TestLoaderPackages(t *testing.T) {
	t.Parallel()
	npmPkg := Package{RegistryType: "npm", RegistryBaseURL: "http://registry.local/npm", Identifier: "@ok/srv", Version: "^1", RuntimeHint: "npx",
		PackageArguments: []Argument{{Type: "positional", Input: Input{Value: "stdio"}}}}
	l, _, reg, _ := newTestLoader(t, config.Registry{PackageTypes: []string{"oci", "npm", "pypi"}},
		catalogEntry("io.github.ok/srv", npmPkg), catalogEntry("io.github.ok/py", Package{RegistryType: "pypi", Identifier: "ok-py"}))
	rel := &releases{}
	l.Packages = rel
	res := l.Load(context.Background(), call.Progress{}, "srv", false, nil, nil)
	if res.Status != StatusLoaded || res.MCPServer != "srv" {
		t.Fatalf("Load = %+v", res)
	}
	spec := reg.spec("srv")
	if spec == nil || spec.Image != "" || spec.Package == nil || spec.Package.String() != "npm:@ok/srv@^1" ||
		spec.Package.Registry != "http://registry.local/npm" || !slices.Equal(spec.Args, []string{"stdio"}) {
		t.Fatalf("registered spec = %+v", spec)
	}
	if want := spec.StartTimeout + startGrace + buildGrace; reg.startTimeout != want {
		t.Errorf("Start deadline %s, want %s: the first start builds the image", reg.startTimeout, want)
	}
	if u := l.Unload(context.Background(), "srv"); u.Status != StatusUnloaded {
		t.Fatalf("Unload = %+v", u)
	}
	reg.startErr = errors.New("npm package ok-py: no such package")
	if res := l.Load(context.Background(), call.Progress{}, "py", false, nil, nil); res.Status != StatusFailed ||
		!strings.Contains(res.Message, "pypi package ok-py@latest") || !strings.Contains(res.Message, "no such package") {
		t.Errorf("failed Load = %+v", res)
	}
	rel.mu.Lock()
	defer rel.mu.Unlock()
	if !slices.Equal(rel.ids, []string{"srv=npm:@ok/srv@^1", "py=pypi:ok-py@latest"}) {
		t.Errorf("released %v", rel.ids)
	}
}
