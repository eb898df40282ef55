package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Why a connection is refused. They go into logs, metrics, the audit and
// the answer to the provider: they say which rule, never what an address
// resolved to.
const (
	ReasonNotAllowed = "not_allowed"       // host:port matches no rule
	ReasonForbidden  = "forbidden_address" // a name resolved to an address that is not public (Public) or the engine's
	ReasonBadTarget  = "bad_target"        // not a host:port at all
)

// Refusal is a connection the guard would not make.
type Refusal struct {
	Host   string `json:"host"`
	Port   uint16 `json:"port"`
	Reason string `json:"reason"`
}

func (r *Refusal) Error() string {
	switch r.Reason {
	case ReasonForbidden:
		return fmt.Sprintf("egress to %s refused: the name resolves to an address providers may not reach", r.target())
	case ReasonBadTarget:
		return fmt.Sprintf("egress to %q refused: not a host:port", r.Host)
	}
	return fmt.Sprintf("egress to %s refused: not in this server's egress allow-list", r.target())
}

func (r *Refusal) target() string {
	return net.JoinHostPort(r.Host, strconv.Itoa(int(r.Port)))
}

// AsRefusal returns the refusal in err's chain, if any.
func AsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	ok := errors.As(err, &r)
	return r, ok
}

// notPublic are the special-purpose ranges (IANA's IPv4 and IPv6
// special-purpose address registries) that net/netip has no predicate
// for: shared address space (100.64.0.0/10, carrier NAT, where clouds put
// metadata services too), "this network", protocol assignments,
// documentation, benchmarking, reserved, 6to4 and NAT64 (which lead to
// IPv4 addresses of any kind), discard-only and SRv6. See Public.
var notPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("192.88.99.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("2001::/23"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("3fff::/20"),
	netip.MustParsePrefix("5f00::/16"),
}

// globalUnicast6 is where IANA allocates IPv6 global unicast addresses:
// every other IPv6 address (NAT64's 64:ff9b::/96 and 64:ff9b:1::/48, the
// discard-only 100::/64, ULA, link- and site-local, multicast, mapped and
// compatible IPv4) is not public.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// Public reports whether a is a public unicast address: the only kind a
// name may resolve to. Everything else (loopback, private, shared,
// link-local, ULA, NAT64, documentation, multicast, unspecified,
// broadcast, reserved) is reached only by an address rule naming it.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() ||
		a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	if a.Is6() && !globalUnicast6.Contains(a) {
		return false
	}
	for _, p := range notPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// Resolver is the name lookup the guard uses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard decides and makes outbound connections for one server.
type Guard struct {
	Allow Allow
	// Forbidden are further ranges names may not resolve to: the engine's
	// own networks (when an engine's address pools are public ones), so
	// that a name cannot lead a provider to the gateway, another provider
	// or a compose service it was not given. SetForbidden replaces them
	// while the guard serves (networks created later).
	Forbidden []netip.Prefix
	Resolver  Resolver      // nil: net.DefaultResolver
	Timeout   time.Duration // per dial attempt; 0: 10s

	// current is what SetForbidden set last; nil: Forbidden.
	current atomic.Pointer[[]netip.Prefix]
}

// SetForbidden replaces the engine ranges names may not resolve to; safe
// while the guard serves.
func (g *Guard) SetForbidden(ps []netip.Prefix) {
	ps = slices.Clone(ps)
	g.current.Store(&ps)
}

// Check decides a connection to hostport and returns the addresses it may
// dial, in the resolver's order. A refusal is a *Refusal; a failed lookup
// is another error.
func (g *Guard) Check(ctx context.Context, hostport string) ([]netip.AddrPort, error) {
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil || host == "" {
		return nil, &Refusal{Host: clip(hostport), Reason: ReasonBadTarget}
	}
	n, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || n == 0 {
		return nil, &Refusal{Host: clip(hostport), Reason: ReasonBadTarget}
	}
	if len(host) > maxHostLen {
		// No name is this long; it would only bloat logs and labels.
		return nil, &Refusal{Host: clip(host), Port: uint16(n), Reason: ReasonBadTarget}
	}
	port := uint16(n)
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if !g.Allow.Permits(host, port) {
		return nil, &Refusal{Host: host, Port: port, Reason: ReasonNotAllowed}
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		// Permitted as an address: an address rule named it.
		return []netip.AddrPort{netip.AddrPortFrom(addr.Unmap(), port)}, nil
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", host)
	}
	out := make([]netip.AddrPort, 0, len(addrs))
	for _, a := range addrs {
		a = a.Unmap().WithZone("")
		// One bad answer spoils the lot: a mix of public and internal
		// addresses is how rebinding attacks look.
		if g.forbidden(a) && !g.Allow.PermitsAddr(a, port) {
			return nil, &Refusal{Host: host, Port: port, Reason: ReasonForbidden}
		}
		out = append(out, netip.AddrPortFrom(a, port))
	}
	return out, nil
}

// maxHostLen is the longest DNS name.
const maxHostLen = 253

// clip bounds what a refusal repeats of a provider's input.
func clip(s string) string {
	if len(s) > maxHostLen {
		return s[:maxHostLen] + "…"
	}
	return s
}

// forbidden reports whether a name may not resolve to a: an address that
// is not public, or one in the engine's networks.
func (g *Guard) forbidden(a netip.Addr) bool {
	if !Public(a) {
		return true
	}
	engine := g.Forbidden
	if cur := g.current.Load(); cur != nil {
		engine = *cur
	}
	for _, p := range engine {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Dial checks hostport and connects to the first checked address that
// answers. Nothing is dialled for a refused target.
func (g *Guard) Dial(ctx context.Context, hostport string) (net.Conn, error) {
	addrs, err := g.Check(ctx, hostport)
	if err != nil {
		return nil, err
	}
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	d := net.Dialer{Timeout: timeout}
	var errs []error
	for _, ap := range addrs {
		// The address checked is the address dialled: no second lookup.
		c, err := d.DialContext(ctx, "tcp", ap.String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("connect %s: %w", hostport, errors.Join(errs...))
}
