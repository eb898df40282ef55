package egress

import (
	"net/netip"
	"testing"
)

// TestPublic: one row per range a name may not resolve to (an allow-list
// of public unicast, in effect), and public addresses next to them.
func TestPublic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rng    string
		addr   string
		public bool
	}{
		{"this network 0.0.0.0/8", "0.1.2.3", false},
		{"unspecified", "0.0.0.0", false},
		{"private 10.0.0.0/8", "10.1.2.3", false},
		{"shared 100.64.0.0/10", "100.64.0.1", false},
		{"shared 100.64.0.0/10 (metadata of some clouds)", "100.100.100.200", false},
		{"loopback 127.0.0.0/8", "127.0.0.53", false},
		{"link-local 169.254.0.0/16 (cloud metadata)", "169.254.169.254", false},
		{"private 172.16.0.0/12", "172.17.0.1", false},
		{"private 172.16.0.0/12, top", "172.31.255.254", false},
		{"IETF protocol assignments 192.0.0.0/24", "192.0.0.170", false},
		{"documentation 192.0.2.0/24", "192.0.2.2", false},
		{"6to4 relay 192.88.99.0/24", "192.88.99.1", false},
		{"private 192.168.0.0/16", "192.168.1.1", false},
		{"benchmarking 198.18.0.0/15", "198.19.0.1", false},
		{"documentation 198.51.100.0/24", "198.51.100.7", false},
		{"documentation 203.0.113.0/24", "203.0.113.9", false},
		{"multicast 224.0.0.0/4", "239.255.255.250", false},
		{"reserved 240.0.0.0/4", "240.0.0.1", false},
		{"broadcast", "255.255.255.255", false},
		{"IPv6 unspecified", "::", false},
		{"IPv6 loopback", "::1", false},
		{"IPv4-mapped loopback", "::ffff:127.0.0.1", false},
		{"IPv4-mapped private", "::ffff:10.0.0.1", false},
		{"IPv4-compatible", "::10.0.0.1", false},
		{"NAT64 64:ff9b::/96", "64:ff9b::a00:1", false},
		{"NAT64 64:ff9b::/96 of a public address", "64:ff9b::8c52:7005", false},
		{"local-use NAT64 64:ff9b:1::/48", "64:ff9b:1::1", false},
		{"discard-only 100::/64", "100::1", false},
		{"IETF protocol assignments 2001::/23 (Teredo)", "2001:0:4136:e378::1", false},
		{"documentation 2001:db8::/32", "2001:db8::1", false},
		{"6to4 2002::/16", "2002:a00:1::1", false},
		{"documentation 3fff::/20", "3fff::1", false},
		{"SRv6 5f00::/16", "5f00::1", false},
		{"ULA fc00::/7", "fc00::1", false},
		{"ULA fd00::/8", "fd00::2", false},
		{"site-local fec0::/10", "fec0::1", false},
		{"link-local fe80::/10", "fe80::1", false},
		{"multicast ff00::/8", "ff02::1", false},
		{"public IPv4", "140.82.112.5", true},
		{"public IPv4 next to 100.64/10", "100.128.0.1", true},
		{"public IPv4 next to 172.16/12", "172.32.0.1", true},
		{"public IPv4-mapped", "::ffff:140.82.112.5", true},
		{"public IPv6", "2606:4700::1", true},
		{"public IPv6 next to 2001::/23", "2001:200::1", true},
	}
	for _, tt := range tests {
		t.Run(tt.rng, func(t *testing.T) {
			t.Parallel()
			if got := Public(netip.MustParseAddr(tt.addr)); got != tt.public {
				t.Errorf("Public(%s) = %v, want %v", tt.addr, got, tt.public)
			}
			// And as the guard sees it: a listed name resolving there.
			g := &Guard{Allow: mustAllow(t, "name.example:443"), Resolver: &fakeResolver{answers: map[string][]string{"name.example": {tt.addr}}}}
			_, err := g.Check(t.Context(), "name.example:443")
			ref, refused := AsRefusal(err)
			if refused != !tt.public || (refused && ref.Reason != ReasonForbidden) {
				t.Errorf("a name resolving to %s: %v, want refused %v", tt.addr, err, !tt.public)
			}
			// Unless an address rule names it.
			g.Allow = append(g.Allow, mustAllow(t, "["+netip.MustParseAddr(tt.addr).String()+"]:443")...)
			if _, err := g.Check(t.Context(), "name.example:443"); err != nil {
				t.Errorf("a name resolving to %s, allowed by address: %v", tt.addr, err)
			}
		})
	}
}

// TestGuardLearnsEngineNetworks: ranges set while the guard serves (an
// engine network created after the proxy started, in a public range)
// are refused from then on.
func TestGuardLearnsEngineNetworks(t *testing.T) {
	t.Parallel()
	g := &Guard{Allow: mustAllow(t, "svc.example:443"), Resolver: &fakeResolver{answers: map[string][]string{"svc.example": {"11.0.0.5"}}}}
	if _, err := g.Check(t.Context(), "svc.example:443"); err != nil {
		t.Fatalf("before the network is known: %v", err)
	}
	g.SetForbidden([]netip.Prefix{netip.MustParsePrefix("11.0.0.0/24")})
	if _, err := g.Check(t.Context(), "svc.example:443"); err == nil {
		t.Fatal("a name resolving into an engine network learnt later was let through")
	}
	g.SetForbidden(nil)
	if _, err := g.Check(t.Context(), "svc.example:443"); err != nil {
		t.Fatalf("after the network is gone: %v", err)
	}
}

func mustAllow(t *testing.T, rules ...string) Allow {
	t.Helper()
	a, err := ParseAllow(rules)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
