package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeResolver answers from a table and counts lookups.
type fakeResolver struct {
	answers map[string][]string
	lookups atomic.Int32
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.lookups.Add(1)
	as, ok := f.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]netip.Addr, len(as))
	for i, a := range as {
		out[i] = netip.MustParseAddr(a)
	}
	return out, nil
}

func TestGuardCheck(t *testing.T) {
	t.Parallel()
	res := &fakeResolver{answers: map[string][]string{
		"api.github.com":    {"140.82.112.5"},
		"dual.example.com":  {"140.82.112.6", "2606:4700::1"},
		"loop.example.com":  {"127.0.0.1"},
		"meta.example.com":  {"169.254.169.254"},
		"mixed.example.com": {"140.82.112.7", "172.18.0.5"},
		"engine.example":    {"172.18.0.9"},
		"db.example":        {"172.18.0.20"},
		"v6loop.example":    {"::1"},
		"mapped.example":    {"::ffff:127.0.0.1"},
		"zero.example":      {"0.0.0.0"},
		"v6ll.example":      {"fe80::1"},
	}}
	allow, err := ParseAllow([]string{
		"api.github.com:443", "*.example.com", "engine.example:80", "db.example:5432",
		"172.18.0.20:5432", "10.1.2.3:5432", "169.254.169.254:80",
		"v6loop.example", "mapped.example", "zero.example", "v6ll.example",
	})
	if err != nil {
		t.Fatal(err)
	}
	g := &Guard{Allow: allow, Forbidden: []netip.Prefix{netip.MustParsePrefix("172.16.0.0/12")}, Resolver: res}

	tests := []struct {
		name       string
		target     string
		wantReason string // "" when allowed
		wantAddrs  []string
		noLookup   bool // refused before any lookup
	}{
		{name: "allowed name", target: "api.github.com:443", wantAddrs: []string{"140.82.112.5:443"}},
		{name: "every answer kept in order", target: "dual.example.com:443", wantAddrs: []string{"140.82.112.6:443", "[2606:4700::1]:443"}},
		{name: "wrong port", target: "api.github.com:22", wantReason: ReasonNotAllowed, noLookup: true},
		{name: "name not listed", target: "evil.com:443", wantReason: ReasonNotAllowed, noLookup: true},
		{name: "direct address not listed", target: "140.82.112.5:443", wantReason: ReasonNotAllowed, noLookup: true},
		{name: "metadata address not listed", target: "169.254.169.254:443", wantReason: ReasonNotAllowed, noLookup: true},
		{name: "metadata address allowed by address", target: "169.254.169.254:80", wantAddrs: []string{"169.254.169.254:80"}, noLookup: true},
		{name: "address rule", target: "10.1.2.3:5432", wantAddrs: []string{"10.1.2.3:5432"}, noLookup: true},
		{name: "name resolving to loopback", target: "loop.example.com:443", wantReason: ReasonForbidden},
		{name: "name resolving to metadata", target: "meta.example.com:443", wantReason: ReasonForbidden},
		{name: "name resolving to an address allowed by address", target: "meta.example.com:80", wantAddrs: []string{"169.254.169.254:80"}},
		{name: "one forbidden answer spoils the lot", target: "mixed.example.com:443", wantReason: ReasonForbidden},
		{name: "name resolving to an engine network", target: "engine.example:80", wantReason: ReasonForbidden},
		{name: "engine network allowed by address", target: "db.example:5432", wantAddrs: []string{"172.18.0.20:5432"}},
		{name: "IPv6 loopback", target: "v6loop.example:443", wantReason: ReasonForbidden},
		{name: "IPv4-mapped loopback", target: "mapped.example:443", wantReason: ReasonForbidden},
		{name: "this-network address", target: "zero.example:80", wantReason: ReasonForbidden},
		{name: "IPv6 link-local", target: "v6ll.example:80", wantReason: ReasonForbidden},
		{name: "no port", target: "api.github.com", wantReason: ReasonBadTarget, noLookup: true},
		{name: "port zero", target: "api.github.com:0", wantReason: ReasonBadTarget, noLookup: true},
		{name: "name too long", target: strings.Repeat("a", 300) + ".example.com:443", wantReason: ReasonBadTarget, noLookup: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := res.lookups.Load()
			got, err := g.Check(t.Context(), tt.target)
			if tt.noLookup && res.lookups.Load() != before {
				t.Errorf("Check(%q) looked the name up; the decision needs no lookup", tt.target)
			}
			if tt.wantReason != "" {
				ref, ok := AsRefusal(err)
				if !ok || ref.Reason != tt.wantReason {
					t.Fatalf("Check(%q) = %v, %v; want refusal %s", tt.target, got, err, tt.wantReason)
				}
				return
			}
			if err != nil {
				t.Fatalf("Check(%q): %v", tt.target, err)
			}
			var s []string
			for _, a := range got {
				s = append(s, a.String())
			}
			if len(s) != len(tt.wantAddrs) {
				t.Fatalf("Check(%q) = %v, want %v", tt.target, s, tt.wantAddrs)
			}
			for i := range s {
				if s[i] != tt.wantAddrs[i] {
					t.Fatalf("Check(%q) = %v, want %v", tt.target, s, tt.wantAddrs)
				}
			}
		})
	}
}

func TestGuardLookupFailureIsNoRefusal(t *testing.T) {
	t.Parallel()
	allow, _ := ParseAllow([]string{"gone.example.com"})
	g := &Guard{Allow: allow, Resolver: &fakeResolver{}}
	_, err := g.Check(t.Context(), "gone.example.com:443")
	if err == nil {
		t.Fatal("an unresolvable name was allowed")
	}
	if _, ok := AsRefusal(err); ok {
		t.Errorf("a failed lookup is reported as a refusal: %v", err)
	}
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) {
		t.Errorf("the lookup error is lost: %v", err)
	}
}

// TestGuardDialsTheCheckedAddress: the name is looked up once, and the
// connection goes to the address that was checked.
func TestGuardDialsTheCheckedAddress(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	res := &fakeResolver{answers: map[string][]string{"svc.test": {"127.0.0.1"}}}
	allow, _ := ParseAllow([]string{"svc.test:*", "127.0.0.1:*"})
	g := &Guard{Allow: allow, Resolver: res}
	c, err := g.Dial(t.Context(), net.JoinHostPort("svc.test", itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := res.lookups.Load(); got != 1 {
		t.Errorf("%d lookups for one dial, want 1", got)
	}
	srv := <-accepted
	defer srv.Close()
	if srv.RemoteAddr().String() != c.LocalAddr().String() {
		t.Errorf("connected %s, listener saw %s", c.LocalAddr(), srv.RemoteAddr())
	}
}
