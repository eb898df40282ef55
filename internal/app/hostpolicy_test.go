package app

import (
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
)

// server.public_url's host is answered wherever Host names are checked
// (the OAuth callback comes back under it), and does not turn the check
// on by itself for a listener on another address.
func TestHostPolicyPublicURL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		loopback bool
		h        config.HTTPServer
		host     string
		want     bool
	}{
		{"loopback, public url's host", true, config.HTTPServer{PublicURL: "https://Hangar.example.com/base"}, "hangar.example.com", true},
		{"loopback, other host", true, config.HTTPServer{PublicURL: "https://hangar.example.com"}, "rebind.attacker.example", false},
		{"loopback, no public url", true, config.HTTPServer{}, "hangar.example.com", false},
		{"other listener, public url alone checks nothing", false, config.HTTPServer{PublicURL: "https://hangar.example.com"}, "hangar", true},
		{"other listener with allowed hosts", false, config.HTTPServer{PublicURL: "https://hangar.example.com", AllowedHosts: []string{"hangar"}}, "hangar.example.com:443", true},
		{"other listener with allowed hosts, other name", false, config.HTTPServer{PublicURL: "https://hangar.example.com", AllowedHosts: []string{"hangar"}}, "evil.example", false},
	}
	for _, c := range cases {
		if got := hostPolicy(c.loopback, c.h).Allows(c.host); got != c.want {
			t.Errorf("%s: Allows(%q) = %v, want %v", c.name, c.host, got, c.want)
		}
	}
}
