package config

import (
	"net/netip"
	"strings"
	"time"
)

// HTTPServer is the `server` section: the HTTP endpoint's sessions and
// the names it is served under. Each key is one line of httpServer.
type HTTPServer struct {
	// SessionIdleTTL ends a session idle this long (session_idle_ttl, in
	// seconds; default 1800, 10..86400).
	SessionIdleTTL time.Duration
	// MaxSessions bounds the open sessions (default 1000, 1..1000000).
	MaxSessions int
	// MaxSessionsPerIdentity bounds one identity's open sessions
	// (default 100, 1..1000000); beyond it the identity's least recently
	// active idle session ends.
	MaxSessionsPerIdentity int
	// PublicURL is where browsers reach the gateway (public_url): the
	// base of the OAuth callback and login links. "" means the listen
	// address.
	PublicURL string
	// AllowedHosts are the host names (or addresses) the endpoint is
	// served under besides loopback ones: lower case, no port. On a
	// loopback listener a request for any other Host gets 421; on another
	// listener the Host is checked only when this lists some.
	AllowedHosts []string
}

func defaultHTTPServer() HTTPServer {
	return HTTPServer{SessionIdleTTL: 30 * time.Minute, MaxSessions: 1000, MaxSessionsPerIdentity: 100}
}

func (d *decoder) httpServer(s *section, h *HTTPServer) {
	s.seconds("session_idle_ttl", &h.SessionIdleTTL, 10, 86400,
		"A session idle this long ends, in seconds; its id then gets 404.")
	s.intIn("max_sessions", &h.MaxSessions, 1, 1000000,
		"The most open sessions; an initialize beyond it gets 503.")
	s.intIn("max_sessions_per_identity", &h.MaxSessionsPerIdentity, 1, 1000000,
		"The most open sessions of one identity; beyond it the identity's least recently active idle session ends (429 if all are busy).")
	if s.str("public_url", &h.PublicURL,
		"Where browsers reach the gateway: the base of OAuth callbacks and login links. Unset: the listen address.",
		format("uri")) {
		h.PublicURL = d.publicURL(s.at("public_url"), h.PublicURL)
	}
	d.allowedHosts(s, "allowed_hosts", &h.AllowedHosts,
		"Host names or addresses (no port) the endpoint is served under besides loopback ones. On a loopback listener any other Host gets 421; on another listener Host is checked only when this lists some.")
	s.finish()
}

// allowedHosts reads a list of host names or addresses, in the form a
// Host header's name has once its port is gone.
func (d *decoder) allowedHosts(s *section, key string, dst *[]string, doc string) {
	var list []string
	if !s.strList(key, &list, doc) {
		return
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		h, ok := hostEntry(e)
		if !ok {
			d.add(index(s.at(key), i), "must be a host name or an IP address, without scheme, port or path (got %q)", e)
			continue
		}
		out = append(out, h)
	}
	if len(out) > 0 {
		*dst = out
	}
}

// hostEntry is e as a host name (lower case, no trailing dot) or an
// address (canonical form, IPv6 without brackets).
func hostEntry(e string) (string, bool) {
	h := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(e)), ".")
	if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil && a.Zone() == "" {
		return a.Unmap().String(), true
	}
	if h == "" || len(h) > 253 {
		return "", false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' {
			return "", false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", false
			}
		}
	}
	return h, true
}
