// Package egress is the allow-list and the forward proxy that stand between
// a provider container and the world: `hangar egress-proxy` serves Proxy on
// an internal Docker network whose only way out it is (see dockerrt's
// egress.go for the networks and the container).
//
// A request is allowed when its host:port matches a rule of the server's
// allow-list (Allow). A name is then resolved by the proxy itself, every
// answer is checked (Guard), and the proxy dials the address it checked, so
// a name cannot be re-resolved to somewhere else between check and dial.
package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Rule is one allow-list entry:
//
//	api.github.com:443   one name, one port
//	*.example.com        any one label in place of *, ports 80 and 443
//	10.1.2.3:5432        one address (IPv6 as [fd00::1]:5432), one port
//	host:*               any port
//
// A rule without a port allows 80 and 443, the ports of plain HTTP and of
// HTTPS: the usual need, and never a database port by accident.
type Rule struct {
	Host     string     // lower case, no trailing dot; "" for an address rule
	Wildcard bool       // Host is the suffix after "*."
	Addr     netip.Addr // an address rule
	Port     uint16     // 0 with AnyPort or DefaultPorts
	AnyPort  bool
	// DefaultPorts: no port was given (80 and 443).
	DefaultPorts bool
}

// ParseRule reads one allow-list entry; its error says what is wrong with it.
func ParseRule(s string) (Rule, error) {
	raw := strings.TrimSpace(s)
	if raw == "" {
		return Rule{}, errors.New("must not be empty")
	}
	if strings.Contains(raw, "://") {
		return Rule{}, fmt.Errorf("%q: want host[:port], not a URL", raw)
	}
	host, port, hasPort := splitHostPort(raw)
	var r Rule
	switch {
	case !hasPort:
		r.DefaultPorts = true
	case port == "*":
		r.AnyPort = true
	default:
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return Rule{}, fmt.Errorf("port %q must be a number from 1 to 65535 or *", port)
		}
		r.Port = uint16(n)
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if a.Zone() != "" {
			return Rule{}, fmt.Errorf("address %q must not have a zone", host)
		}
		r.Addr = a.Unmap()
		return r, nil
	}
	if strings.Contains(host, "/") {
		return Rule{}, fmt.Errorf("%q: address ranges are not allowed, only single addresses", host)
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		r.Wildcard = true
		host = rest
		if !strings.Contains(host, ".") {
			return Rule{}, fmt.Errorf("%q: a wildcard needs at least two labels after *. (e.g. *.example.com)", raw)
		}
	}
	if err := checkName(host); err != nil {
		return Rule{}, fmt.Errorf("%q: %w", raw, err)
	}
	r.Host = host
	return r, nil
}

// splitHostPort splits "host:port", "[v6]:port", "host" and a bare IPv6
// address (which has colons but no port).
func splitHostPort(s string) (host, port string, ok bool) {
	if h, p, err := net.SplitHostPort(s); err == nil {
		return h, p, true
	}
	return s, "", false
}

func checkName(host string) error {
	if host == "" || len(host) > 253 {
		return errors.New("not a host name")
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 {
			return errors.New("not a host name (empty or too long label)")
		}
		for _, c := range label {
			ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
			if !ok {
				return fmt.Errorf("not a host name (%q is not allowed; * only as the whole first label)", c)
			}
		}
	}
	return nil
}

func (r Rule) portOK(port uint16) bool {
	switch {
	case r.AnyPort:
		return true
	case r.DefaultPorts:
		return port == 80 || port == 443
	}
	return port == r.Port
}

// matchName reports whether the rule allows the name host (already lower
// case, no trailing dot).
func (r Rule) matchName(host string) bool {
	if r.Host == "" {
		return false
	}
	if !r.Wildcard {
		return host == r.Host
	}
	// * stands for exactly one label, as in a TLS certificate: *.example.com
	// is neither example.com nor a.b.example.com.
	label, rest, ok := strings.Cut(host, ".")
	return ok && label != "" && rest == r.Host
}

// String is the rule as written in canonical form.
func (r Rule) String() string {
	var h string
	switch {
	case r.Addr.IsValid() && r.Addr.Is6():
		h = "[" + r.Addr.String() + "]"
	case r.Addr.IsValid():
		h = r.Addr.String()
	case r.Wildcard:
		h = "*." + r.Host
	default:
		h = r.Host
	}
	switch {
	case r.AnyPort:
		return h + ":*"
	case r.DefaultPorts:
		return h
	}
	return h + ":" + strconv.Itoa(int(r.Port))
}

// Allow is a server's allow-list. The zero value allows nothing.
type Allow []Rule

// ParseAllow reads an allow-list; the error names the entry at fault by
// its index, for the caller to put after its key path.
func ParseAllow(entries []string) (Allow, error) {
	out := make(Allow, 0, len(entries))
	for i, e := range entries {
		r, err := ParseRule(e)
		if err != nil {
			return nil, &EntryError{Index: i, Err: err}
		}
		out = append(out, r)
	}
	return out, nil
}

// EntryError is a bad allow-list entry.
type EntryError struct {
	Index int
	Err   error
}

func (e *EntryError) Error() string { return fmt.Sprintf("[%d]: %v", e.Index, e.Err) }
func (e *EntryError) Unwrap() error { return e.Err }

// Permits reports whether a request for host:port may go ahead: host is a
// name or an address literal, and only address rules match addresses.
func (a Allow) Permits(host string, port uint16) bool {
	if addr, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return a.PermitsAddr(addr, port)
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, r := range a {
		if r.matchName(host) && r.portOK(port) {
			return true
		}
	}
	return false
}

// PermitsAddr reports whether an address rule allows addr:port: such a
// rule is the admin naming that very address, so it overrides the checks
// on what names resolve to.
func (a Allow) PermitsAddr(addr netip.Addr, port uint16) bool {
	addr = addr.Unmap().WithZone("")
	for _, r := range a {
		if r.Addr.IsValid() && r.Addr == addr && r.portOK(port) {
			return true
		}
	}
	return false
}

// Covers reports whether the admin's list a allows everything the rule r
// asks for: installs and hot-loads may ask only for what
// install.allowed_egress covers.
func (a Allow) Covers(r Rule) bool {
	for _, p := range a {
		if !portsCover(p, r) {
			continue
		}
		switch {
		case r.Addr.IsValid():
			if p.Addr == r.Addr {
				return true
			}
		case r.Wildcard:
			if p.Wildcard && p.Host == r.Host {
				return true
			}
		default:
			if p.matchName(r.Host) {
				return true
			}
		}
	}
	return false
}

func portsCover(p, r Rule) bool {
	switch {
	case p.AnyPort:
		return true
	case r.AnyPort:
		return false
	case r.DefaultPorts:
		return p.DefaultPorts
	}
	return p.portOK(r.Port)
}

// Strings is the list in canonical form (for flags, logs and details).
func (a Allow) Strings() []string {
	out := make([]string, len(a))
	for i, r := range a {
		out[i] = r.String()
	}
	return out
}
