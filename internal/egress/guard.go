package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Why a connection is refused. They go into logs, metrics, the audit and
// the answer to the provider: they say which rule, never what an address
// resolved to.
const (
	ReasonNotAllowed = "not_allowed"       // host:port matches no rule
	ReasonForbidden  = "forbidden_address" // a name resolved to a forbidden address
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

// alwaysForbidden are addresses no name may resolve to: the proxy's own
// loopback, "this network", link-local (169.254.169.254 is the cloud
// metadata service), multicast, and the metadata addresses of clouds that
// use other ranges. Only an address rule naming one reaches it.
var alwaysForbidden = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("255.255.255.255/32"),
	netip.MustParsePrefix("100.100.100.200/32"),
	netip.MustParsePrefix("::/128"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("ff00::/8"),
	netip.MustParsePrefix("fd00:ec2::254/128"),
}

// Resolver is the name lookup the guard uses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard decides and makes outbound connections for one server.
type Guard struct {
	Allow Allow
	// Forbidden are further ranges names may not resolve to: the engine's
	// own networks, so that a name cannot lead a provider to the gateway,
	// another provider or a compose service it was not given.
	Forbidden []netip.Prefix
	Resolver  Resolver      // nil: net.DefaultResolver
	Timeout   time.Duration // per dial attempt; 0: 10s
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

func (g *Guard) forbidden(a netip.Addr) bool {
	for _, p := range alwaysForbidden {
		if p.Contains(a) {
			return true
		}
	}
	for _, p := range g.Forbidden {
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
