package config

import "regexp"

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

// FrontDoor is the front_door section.
type FrontDoor struct {
	Naming string // NamingPrefixed (default) | NamingFlat
	// Prefetch reads the catalog of every provider whose catalog is not
	// known yet at start-up (start, tools/list, stop), so tools/list can
	// show it without starting anything later. Default true.
	Prefetch bool
}

// prefixRe is what a per-server prefix may be: a callable name is
// [A-Za-z0-9_-] only, and the prefix must leave room for the tool's name.
var prefixRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// toolAccess decodes tool_access and front_door.
func (d *decoder) toolAccess(root *section, cfg *Config) {
	ta := root.sub("tool_access")
	ta.enum("mode", &cfg.ToolAccess.Mode, AccessFrontDoor, AccessEgress)
	ta.finish()
	fd := root.sub("front_door")
	fd.enum("naming", &cfg.FrontDoor.Naming, NamingPrefixed, NamingFlat)
	fd.boolean("prefetch", &cfg.FrontDoor.Prefetch)
	fd.finish()
}

// serverFrontDoor decodes a server's prefix and expose keys.
func (d *decoder) serverFrontDoor(s *section, srv *Server) {
	if s.str("prefix", &srv.Prefix) && !prefixRe.MatchString(srv.Prefix) {
		d.add(s.at("prefix"), "must be 1 to 32 characters of A-Z, a-z, 0-9, _ and - (got %q)", srv.Prefix)
	}
	expose := true
	s.boolean("expose", &expose)
	srv.Hidden = !expose
}
