package config

import (
	"errors"
	"slices"
	"testing"
)

func TestFrontDoorKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		yaml     string
		problems []string
		check    func(t *testing.T, c *Config)
	}{
		{"defaults", dockerMath, nil, func(t *testing.T, c *Config) {
			if c.ToolAccess.Mode != AccessFrontDoor || c.FrontDoor.Naming != NamingPrefixed || !c.FrontDoor.Prefetch {
				t.Errorf("defaults: %+v %+v", c.ToolAccess, c.FrontDoor)
			}
			if s := c.Servers["math"]; s.Hidden || s.Prefix != "" {
				t.Errorf("server defaults: hidden %v prefix %q", s.Hidden, s.Prefix)
			}
		}},
		{"set", "tool_access: {mode: Egress}\nfront_door: {naming: flat, prefetch: false}\n" + dockerMath + "    prefix: calc\n    expose: false\n", nil,
			func(t *testing.T, c *Config) {
				if c.ToolAccess.Mode != AccessEgress || c.FrontDoor.Naming != NamingFlat || c.FrontDoor.Prefetch {
					t.Errorf("got %+v %+v", c.ToolAccess, c.FrontDoor)
				}
				if s := c.Servers["math"]; !s.Hidden || s.Prefix != "calc" {
					t.Errorf("server: hidden %v prefix %q", s.Hidden, s.Prefix)
				}
			}},
		{"group prefix", pool + "    prefix: p\n", nil, func(t *testing.T, c *Config) {
			if c.Servers["pool"].Prefix != "p" {
				t.Errorf("prefix %q", c.Servers["pool"].Prefix)
			}
		}},
		{"bad mode", "tool_access: {mode: open}\n", []string{"tool_access.mode: must be one of front_door, egress (got \"open\")"}, nil},
		{"bad naming", "front_door: {naming: short}\n", []string{"front_door.naming: must be one of prefixed, flat (got \"short\")"}, nil},
		{"unknown front_door key", "front_door: {prefetch: true, eager: 1}\n", []string{"front_door.eager: unknown key"}, nil},
		{"bad prefetch", "front_door: {prefetch: maybe}\n", []string{"front_door.prefetch: must be true or false (got \"maybe\")"}, nil},
		{"bad prefix", dockerMath + "    prefix: a.b\n", []string{`mcp_servers.math.prefix: must be 1 to 32 characters of A-Z, a-z, 0-9, _ and - (got "a.b")`}, nil},
		{"long prefix", dockerMath + "    prefix: abcdefghijabcdefghijabcdefghijabc\n", []string{`mcp_servers.math.prefix: must be 1 to 32 characters of A-Z, a-z, 0-9, _ and - (got "abcdefghijabcdefghijabcdefghijabc")`}, nil},
		{"bad expose", dockerMath + "    expose: sometimes\n", []string{"mcp_servers.math.expose: must be true or false (got \"sometimes\")"}, nil},
		{"search mode, pins, summary", "front_door: {discovery: Search}\n" + dockerMath + "    pinned: true\n    summary: \" Sums and products \"\n", nil,
			func(t *testing.T, c *Config) {
				s := c.Servers["math"]
				if c.FrontDoor.Discovery != DiscoverySearch || !s.Pinned || s.PinnedTools != nil || s.Summary != "Sums and products" {
					t.Errorf("got discovery %q pinned %v %q summary %q", c.FrontDoor.Discovery, s.Pinned, s.PinnedTools, s.Summary)
				}
			}},
		{"pinned tools", dockerMath + "    pinned: [add, mul]\n", nil, func(t *testing.T, c *Config) {
			if s := c.Servers["math"]; s.Pinned || !slices.Equal(s.PinnedTools, []string{"add", "mul"}) {
				t.Errorf("got pinned %v %q", s.Pinned, s.PinnedTools)
			}
		}},
		{"default discovery", dockerMath, nil, func(t *testing.T, c *Config) {
			if c.FrontDoor.Discovery != DiscoveryList || c.Servers["math"].Pinned || c.Servers["math"].Summary != "" {
				t.Errorf("defaults: %+v", c.FrontDoor)
			}
		}},
		{"bad discovery", "front_door: {discovery: lazy}\n", []string{`front_door.discovery: must be one of list, search (got "lazy")`}, nil},
		{"bad pinned", dockerMath + "    pinned: often\n", []string{`mcp_servers.math.pinned: must be true, false or a list of tool names (got "often")`}, nil},
		{"empty pinned tool", dockerMath + "    pinned: [add, \"\"]\n", []string{`mcp_servers.math.pinned[1]: must be a tool name`}, nil},
		{"two-line summary", dockerMath + "    summary: \"a\\nb\"\n", []string{`mcp_servers.math.summary: must be one line of 1 to 200 characters`}, nil},
		{"empty summary", dockerMath + "    summary: \"  \"\n", []string{`mcp_servers.math.summary: must be one line of 1 to 200 characters`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse([]byte(tt.yaml), nil)
			var got []string
			if err != nil {
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("error %v is not a validation error", err)
				}
				for _, p := range ve.Problems {
					got = append(got, p.String())
				}
			}
			if !slices.Equal(got, tt.problems) {
				t.Fatalf("problems:\n got %q\nwant %q", got, tt.problems)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}
