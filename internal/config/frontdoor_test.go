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
