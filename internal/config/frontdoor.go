package config

import (
	"regexp"
	"strings"
	"sync"
)

// Tool access modes (tool_access.mode, the Python Hangar's key).
const (
	// AccessFrontDoor lists provider tools by callable name beside the
	// hangar_* tools (the default).
	AccessFrontDoor = "front_door"
	// AccessEgress serves the hangar_* tools only: every provider call goes
	// through hangar_call.
	AccessEgress = "egress"
)

// Front-door naming of callable tools.
const (
	NamingPrefixed = "prefixed" // <server>__<tool> (the default)
	NamingFlat     = "flat"     // <tool>
)

// ToolAccess is the tool_access section.
type ToolAccess struct {
	Mode string // AccessFrontDoor (default) | AccessEgress
}

// Front-door discovery modes (front_door.discovery).
const (
	// DiscoveryList lists every provider tool in tools/list (the default).
	DiscoveryList = "list"
	// DiscoverySearch lists the hangar_* tools, pinned tools and
	// hangar_find_tools; every other callable name is found by search and
	// still answers when called.
	DiscoverySearch = "search"
)

// maxSummary bounds a server's summary: it is one line of the find tool's
// description, which every agent reads.
const maxSummary = 200

// FrontDoor is the front_door section.
type FrontDoor struct {
	Naming string // NamingPrefixed (default) | NamingFlat
	// Discovery is DiscoveryList (default) or DiscoverySearch.
	Discovery string
	// Prefetch reads the catalog of every provider whose catalog is not
	// known yet at start-up (start, tools/list, stop), so tools/list can
	// show it without starting anything later. Default true.
	Prefetch bool
}

// prefixRe is what a per-server prefix may be: a callable name is
// [A-Za-z0-9_-] only, and the prefix must leave room for the tool's name.
var prefixRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`) })

// toolAccess decodes tool_access and front_door.
func (d *decoder) toolAccess(root *section, cfg *Config) {
	ta := root.sub("tool_access", "Whether provider tools are listed on the gateway's endpoint.")
	ta.enum("mode", &cfg.ToolAccess.Mode,
		"front_door lists provider tools by callable name beside the hangar_* tools; egress serves the hangar_* tools only, every call going through hangar_call.",
		AccessFrontDoor, AccessEgress)
	ta.finish()
	fd := root.sub("front_door", "How provider tools are named and listed on the gateway's endpoint.")
	fd.enum("naming", &cfg.FrontDoor.Naming,
		"prefixed names a tool <server>__<tool> (or <prefix>__<tool>); flat names it <tool>.",
		NamingPrefixed, NamingFlat)
	fd.boolean("prefetch", &cfg.FrontDoor.Prefetch,
		"At start-up, read the tools of every server whose catalog is not known yet (start, tools/list, stop), so tools/list never starts one.")
	fd.enum("discovery", &cfg.FrontDoor.Discovery,
		"list puts every provider tool in tools/list; search lists the hangar_* tools, pinned tools and hangar_find_tools, and every other tool is found by search (and still answers when called).",
		DiscoveryList, DiscoverySearch)
	fd.finish()
}

// serverFrontDoor decodes a server's prefix, expose, pinned and summary
// keys.
func (d *decoder) serverFrontDoor(s *section, srv *Server) {
	if s.str("prefix", &srv.Prefix,
		"Replaces the server ID in the front door's callable names (<prefix>__<tool>).",
		match(prefixRe)) && !prefixRe().MatchString(srv.Prefix) {
		d.add(s.at("prefix"), "must be 1 to 32 characters of A-Z, a-z, 0-9, _ and - (got %q)", srv.Prefix)
	}
	expose := true
	s.boolean("expose", &expose,
		"List the server's tools on the front door; false keeps them off it (hangar_call still reaches them).")
	srv.Hidden = !expose
	d.pinned(s, srv)
	if s.str("summary", &srv.Summary,
		"The server's one line (at most 200 characters) in hangar_find_tools' description under front_door.discovery search; default: derived from its tools.") {
		srv.Summary = strings.TrimSpace(srv.Summary)
		if srv.Summary == "" || len(srv.Summary) > maxSummary || strings.ContainsAny(srv.Summary, "\r\n") {
			d.add(s.at("summary"), "must be one line of 1 to %d characters", maxSummary)
		}
	}
}

// pinned decodes pinned: true (every tool of the server) or a list of the
// server's tool names.
func (d *decoder) pinned(s *section, srv *Server) {
	v, ok := s.raw("pinned",
		"Under front_door.discovery search, list the server's tools in tools/list anyway: true for every tool, or a list of tool names.",
		"boolean", "array")
	if k := s.node(); k != nil {
		k.prop("pinned").items("string")
		s.setDefault(k.prop("pinned"), "pinned", false)
	}
	if !ok {
		return
	}
	if l, isList := v.([]any); isList {
		names, ok := d.strings(s.at("pinned"), l)
		if !ok {
			return
		}
		for i, n := range names {
			if n == "" {
				d.add(index(s.at("pinned"), i), "must be a tool name")
				return
			}
		}
		srv.PinnedTools = names
		return
	}
	b, isBool := toBool(v)
	if !isBool {
		d.add(s.at("pinned"), "must be true, false or a list of tool names (got %s)", got(v))
		return
	}
	srv.Pinned = b
}
