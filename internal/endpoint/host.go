package endpoint

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// HostPolicy decides which Host headers the endpoint answers: the defence
// against DNS rebinding, in which a web page makes the browser resolve the
// page's own name to the gateway's address and then reads the gateway's
// answers as same-origin (a GET carries no Origin to refuse).
//
// A gateway listening on loopback answers only loopback names (localhost,
// 127.0.0.0/8, ::1, with or without a port) and the names Allowed lists
// (server.allowed_hosts). One listening elsewhere answers any name unless
// Allowed lists some: it demands credentials (a bearer header, which a
// rebinding page does not have), and it is reached under names the
// gateway cannot know (a compose service, a load balancer).
type HostPolicy struct {
	// Loopback: the endpoint listens on a loopback address only.
	Loopback bool
	// Allowed are further host names or addresses, lower case, no port.
	Allowed []string
}

// checks reports whether p refuses any Host at all.
func (p HostPolicy) checks() bool { return p.Loopback || len(p.Allowed) > 0 }

// Allows reports whether a request with Host header host is answered.
func (p HostPolicy) Allows(host string) bool {
	if !p.checks() {
		return true
	}
	name := hostName(host)
	if name == "" {
		return false
	}
	if loopbackName(name) {
		return true
	}
	for _, a := range p.Allowed {
		if name == a {
			return true
		}
	}
	return false
}

// hostName is the name or address of a Host header, lower case, without
// port, brackets or a trailing dot; "" when it is none.
func hostName(host string) string {
	h := strings.ToLower(strings.TrimSpace(host))
	if name, _, err := net.SplitHostPort(h); err == nil {
		h = name
	} else if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" || strings.ContainsAny(h, "/@ ") {
		return ""
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().WithZone("").String()
	}
	return h
}

func loopbackName(name string) bool {
	if name == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(name)
	return err == nil && a.IsLoopback()
}

// HostRefusedReason is the audit reason of a request refused for its Host.
const HostRefusedReason = "host_not_allowed"

// CheckHost answers a request whose Host p does not allow with 421
// Misdirected Request, and tells refused (for the audit) before; /healthz
// is answered whatever the Host (it says "ok" and nothing else, and
// orchestrators probe it under addresses of their own).
func CheckHost(p HostPolicy, refused func(r *http.Request), next http.Handler) http.Handler {
	if !p.checks() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || p.Allows(r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		if refused != nil {
			refused(r)
		}
		http.Error(w, "Misdirected Request: this gateway is not served under that host name "+
			"(a loopback gateway answers loopback names and server.allowed_hosts)", http.StatusMisdirectedRequest)
	})
}
