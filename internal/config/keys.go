package config

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// The configuration's keys are defined once, by the walker that reads
// them: every helper that reads a key (intIn, str, sub, list, …) takes its
// description, and its range, allowed values and pattern are the ones it
// checks. Keys runs that walker over exemplar configs with a tracer on,
// which records each key as it is read — its type, bounds, enum, pattern,
// description, whether the loader calls it required, and its default (the
// value in place when the key is read, which is what defaults() and
// defaultServer() put there). The JSON Schema (schema.go) and
// docs/configuration.md are rendered from that record, so they cannot
// drift from the loader. Without a tracer (every real load) the helpers
// record nothing.

// keyDef is one key as the walker reads it.
type keyDef struct {
	Name string
	Doc  string
	// Types are JSON Schema types, in the order the walker allowed them.
	Types []string

	Props  []*keyDef // a mapping's known keys, in the order they are read
	byName map[string]*keyDef
	Closed bool // the loader refuses keys it does not know here

	// Entry is the value of each entry of a mapping of names
	// (mcp_servers.<id>, runtimes.<runner>), named EntryName in the
	// reference; EntryPattern is what a name must match.
	Entry        *keyDef
	EntryName    string
	EntryPattern string
	Items        *keyDef // a list's elements

	Min, Max *float64
	Enum     []string
	Pattern  string
	Format   string
	Unit     string // seconds, bytes, CPUs: how a number is read
	Required bool

	// defaults are the values in place when the key was read, by server
	// mode ("" outside servers).
	defaults map[string]any
	// ctx says where a server's key is read: at the top level, in a group
	// member, or both.
	ctx ctxMask
}

type ctxMask uint8

const (
	ctxTop ctxMask = 1 << iota
	ctxMember
)

func (k *keyDef) prop(name string) *keyDef {
	if c := k.byName[name]; c != nil {
		return c
	}
	c := &keyDef{Name: name}
	if k.byName == nil {
		k.byName = map[string]*keyDef{}
	}
	k.byName[name] = c
	k.Props = append(k.Props, c)
	return c
}

func (k *keyDef) addTypes(types ...string) {
	for _, t := range types {
		if !slices.Contains(k.Types, t) {
			k.Types = append(k.Types, t)
		}
	}
}

func (k *keyDef) items(types ...string) *keyDef {
	if k.Items == nil {
		k.Items = &keyDef{}
	}
	k.Items.addTypes(types...)
	return k.Items
}

// sectionTrace is what the tracer knows of a section: the key its keys
// are recorded under, where it is read (ctx), the server mode it belongs
// to, whether it is a server's own mapping, and whether the values in
// place are not defaults.
type sectionTrace struct {
	node       *keyDef
	ctx        ctxMask
	mode       string
	server     bool
	noDefaults bool
}

// node is the key s's keys are recorded under; nil without a tracer.
func (s *section) node() *keyDef {
	if s.t == nil {
		return nil
	}
	return s.t.node
}

// tracer records the keys the walker reads (Keys).
type tracer struct {
	root   *keyDef
	server *keyDef // a server: an entry of mcp_servers, or a group member
	// at is the key of each concrete path read, so that a problem
	// ("required") finds the key it is about.
	at map[string]*keyDef
	// mode is the server mode of the exemplar being walked.
	errs []string
}

// opt is something a helper checks besides its type and bounds, for the
// schema: a pattern, a format or a set of values checked elsewhere.
type opt struct {
	re      func() *regexp.Regexp
	pattern func() string
	format  string
	enum    []string
}

func match(re func() *regexp.Regexp) opt { return opt{re: re} }
func format(f string) opt                { return opt{format: f} }
func oneOf(values ...string) opt         { return opt{enum: values} }

func (o opt) apply(k *keyDef) {
	switch {
	case o.re != nil:
		k.Pattern = o.re().String()
	case o.pattern != nil:
		k.Pattern = o.pattern()
	}
	if o.format != "" {
		k.Format = o.format
	}
	if o.enum != nil {
		k.Enum = slices.Clone(o.enum)
	}
}

// def records key as read in s with its description and JSON types; nil
// without a tracer.
func (s *section) def(key, doc string, types ...string) *keyDef {
	if s.t == nil {
		return nil
	}
	k := s.t.node.prop(key)
	switch {
	case k.Doc == "":
		k.Doc = doc
	case doc != "" && k.Doc != doc:
		s.d.tr.errs = append(s.d.tr.errs, s.at(key)+": read in two places with different descriptions")
	}
	k.addTypes(types...)
	k.ctx |= s.t.ctx
	s.d.tr.at[s.at(key)] = k
	return k
}

// defaultHere reports whether the value in place for key is its default:
// a server's keys have one only in the modes that take them.
func (s *section) defaultHere(key string) bool {
	switch {
	case s.t.noDefaults:
		return false
	case s.t.server:
		return s.t.mode != "" && modeTakes(s.t.mode, key)
	}
	return true
}

// modeTakes reports whether a server of mode takes key: a key of no
// mode's table (pinned, summary, policy) is every mode's.
func modeTakes(mode, key string) bool {
	return modeAllows(mode, key) || slices.Contains(memberKeys, key) || !isServerKey(key)
}

// setDefault records v, the value in place when key is read, as its
// default.
func (s *section) setDefault(k *keyDef, key string, v any) {
	if k == nil || !s.defaultHere(key) {
		return
	}
	if k.defaults == nil {
		k.defaults = map[string]any{}
	}
	// A key read in several branches (a source's pattern, read for every
	// type) has its default in the branch that uses it: an unset value
	// never replaces a set one.
	if _, set := defaultValue(k, v); set || k.defaults[s.t.mode] == nil {
		k.defaults[s.t.mode] = v
	}
}

// child makes c, a section read under key of s, record into node.
func (s *section) child(c *section, key string, node *keyDef) *section {
	if node == nil {
		return c
	}
	c.t = &sectionTrace{node: node, ctx: s.t.ctx, mode: s.t.mode, noDefaults: !s.defaultHere(key)}
	s.d.tr.at[c.path] = node
	return c
}

// item is the section of v, an element of the list at key, at path.
func (s *section) item(key, path string, v any) *section {
	c := s.d.section(path, v)
	if s.t == nil {
		return c
	}
	return s.child(c, key, s.t.node.prop(key).items("object"))
}

// raw consumes a key whose value the caller reads itself (a list or a
// scalar, a mapping of names); types are its JSON types.
func (s *section) raw(key, doc string, types ...string) (v any, ok bool) {
	s.def(key, doc, types...)
	return s.take(key)
}

// entries reads the mapping of names at key (of what, for the message when
// it is not a mapping): each entry's value is read by the caller from the
// section entry returns.
func (s *section) entries(key, doc, what, name string, pattern func() string) *section {
	v, _ := s.take(key)
	if _, ok := asMap(v); !ok && v != nil {
		s.d.add(s.at(key), "must be a mapping of %s (got %s)", what, got(v))
		v = nil
	}
	c := s.d.section(s.at(key), v)
	if k := s.def(key, doc, "object"); k != nil {
		k.EntryName = name
		if pattern != nil {
			k.EntryPattern = pattern()
		}
		s.child(c, key, k)
	}
	return c
}

// entry is the section of the entry name of the mapping s; node is what
// every entry is (nil: a mapping like any other).
func (s *section) entry(name string, v any, node *keyDef) *section {
	c := s.d.section(s.at(name), v)
	if s.t == nil {
		return c
	}
	if node == nil {
		if s.t.node.Entry == nil {
			s.t.node.Entry = &keyDef{}
		}
		node = s.t.node.Entry
	}
	s.t.node.Entry = node
	node.addTypes("object")
	c.t = &sectionTrace{node: node, ctx: s.t.ctx, mode: s.t.mode}
	s.d.tr.at[c.path] = node
	return c
}

// required is how the loader says a key must be given: "required", or
// "required: …" / "required (…)". "required for …" depends on other keys
// (a mode, a type) and is left to the key's description.
func requiredProblem(msg string) bool {
	return msg == "required" || strings.HasPrefix(msg, "required:") || strings.HasPrefix(msg, "required (")
}

func (t *tracer) problem(path, msg string) {
	if !requiredProblem(msg) {
		return
	}
	parent, name := splitPath(path)
	if k := t.at[parent]; k != nil {
		k.prop(name).Required = true
	}
}

// splitPath splits "a.b[0].c" into "a.b[0]" and "c".
func splitPath(p string) (parent, name string) {
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}

// exemplars are configs that, walked together, take the walker through
// every branch that reads keys: each mode of server, each kind of
// discovery source and token, each optional section. Their values need
// not be valid (problems are ignored); only which keys are read matters.
// The servers are also walked as group members.
const exemplars = `
mcp_servers:
  a-docker:
    mode: docker
    image: img
    registry_auth: {}
    verify: {}
    egress: {}
    upstream_auth: {}
    env_files: []
    tools: {}
    pinned: []
    policy: {rules: [{}]}
  b-package: {mode: docker, package: {}, tools: [{}]}
  c-remote: {mode: remote, upstream_auth: {}}
  d-subprocess: {mode: subprocess}
  e-group: {mode: group, members: []}
  f-bare: {}
auth:
  tokens: [{token: x, rate_limit: {}}, {token_sha256: x}, {token_file: ""}]
  oidc: {}
  generate_token: {}
discovery:
  sources: [{type: docker}, {type: swarm}, {type: filesystem}, {}]
runtimes: {npx: {}}
images: {verify: {}}
policy: {rules: [{}]}
`

// Keys walks the exemplars with a tracer and returns the root of the
// configuration's keys. It fails when a key is read without a
// description, or in two places with two.
var Keys = sync.OnceValues(func() (*keyDef, error) {
	raw, err := yamlParser{"exemplars"}.Unmarshal([]byte(exemplars))
	if err != nil {
		return nil, err
	}
	// Every server exemplar is also walked as a member of a group.
	sv := raw[serversKey].(map[string]any)
	var members []any
	for _, id := range sortedKeys(sv) {
		if m, _ := asMap(sv[id]); m != nil && m["mode"] != ModeGroup {
			members = append(members, deepCopy(m))
		}
	}
	sv["e-group"].(map[string]any)["members"] = members
	// The alias of mcp_servers is read only when mcp_servers is absent.
	alias := map[string]any{aliasKey: map[string]any{"x": map[string]any{"mode": ModeDocker, "image": "img"}}}

	tr := &tracer{root: &keyDef{}, server: &keyDef{}, at: map[string]*keyDef{}}
	for _, cfg := range []map[string]any{raw, alias} {
		d := &decoder{lookup: environLookup(nil), tr: tr}
		d.decode(cfg)
	}
	if len(tr.errs) > 0 {
		slices.Sort(tr.errs)
		return nil, fmt.Errorf("config keys: %s", strings.Join(slices.Compact(tr.errs), "; "))
	}
	return tr.root, nil
})

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// defaultValue renders a recorded default as the YAML a user would write:
// seconds as numbers, sizes as 512m, CPUs as a number; ok is false when
// the value says "unset" (an empty string, list or mapping).
func defaultValue(k *keyDef, v any) (out any, ok bool) {
	switch x := v.(type) {
	case time.Duration:
		return x.Seconds(), true
	case int64:
		switch k.Unit {
		case unitBytes:
			return sizeText(x), true
		case unitCPUs:
			return float64(x) / 1e9, true
		}
		return x, true
	case float64:
		if math.IsNaN(x) {
			return nil, false
		}
		return x, true
	case string:
		return x, x != ""
	case []string:
		if len(x) == 0 {
			return nil, false
		}
		return slices.Clone(x), true
	case map[string]string:
		return nil, false
	}
	return v, true
}

// Units of numbers read by the walker.
const (
	unitSeconds = "seconds"
	unitBytes   = "bytes"
	unitCPUs    = "CPUs"
)

// sizeText writes n bytes the way docker run --memory does.
func sizeText(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.suffix)
		}
	}
	return fmt.Sprint(n)
}
