package config

import (
	"errors"
	"strings"

	"github.com/mcp-hangar/hangar/internal/egress"
)

// Egress is a server's egress control: its containers join an internal
// network whose only way out is the instance's egress proxy for the
// server, which allows Allow only (rules as egress.ParseRule reads them).
// nil means no egress control (network: decides, as before).
type Egress struct {
	Allow []string // canonical form
}

// EgressProxy is where and how the gateway runs egress proxies
// (egress_proxy:).
type EgressProxy struct {
	// Image holds the hangar binary (`hangar egress-proxy`); "" means the
	// gateway's own image when it runs in a container, else
	// DefaultEgressProxyImage.
	Image string
	// Network is where proxies reach out: "" (the default bridge) or the
	// name of a network (a compose network whose services a server may
	// reach).
	Network string
}

// DefaultEgressProxyImage runs proxies of a gateway that is not in a
// container.
const DefaultEgressProxyImage = "mcp-hangar/gateway:dev"

// serverEgress decodes a server's egress: {allow: [...]} and rejects what
// contradicts it.
func (d *decoder) serverEgress(s *section, srv *Server) {
	if !s.has("egress") {
		s.take("egress")
		return
	}
	e := s.sub("egress", "Put the server's containers on an internal network whose only way out is an egress proxy that lets through only allow (docs/security.md). Not with network, nor with transport http or sse.")
	srv.Egress = &Egress{}
	present := e.has("allow")
	var raw []string
	if e.strList("allow", &raw, "The hosts the server may reach: host[:port], *.domain[:port] or an IP address or range; [] allows nothing.") {
		srv.Egress.Allow = d.egressRules(e.at("allow"), raw)
	} else if !present {
		d.add(e.at("allow"), "required (a list of host[:port] entries; [] allows nothing)")
	}
	e.finish()
	if srv.Network != "" {
		d.add(s.at("network"), "cannot be used with egress: a server with egress joins its own internal network, whose only way out is its egress proxy (remove network, or remove egress)")
	}
	if srv.Transport == TransportHTTP || srv.Transport == TransportSSE {
		d.add(s.at("transport"), "%s cannot be used with egress: the container would be on an internal network the gateway cannot reach; use transport stdio", srv.Transport)
	}
}

// egressRules checks allow-list entries and returns them in canonical
// form; each bad entry is reported at its index.
func (d *decoder) egressRules(path string, raw []string) []string {
	allow, err := egress.ParseAllow(raw)
	if err != nil {
		var ee *egress.EntryError
		if errors.As(err, &ee) {
			d.add(index(path, ee.Index), "%v (got %q)", ee.Err, raw[ee.Index])
			// Report every bad entry, not only the first.
			for i := ee.Index + 1; i < len(raw); i++ {
				if _, err := egress.ParseRule(raw[i]); err != nil {
					d.add(index(path, i), "%v (got %q)", err, raw[i])
				}
			}
		} else {
			d.add(path, "%v", err)
		}
		return nil
	}
	if len(allow) == 0 {
		return nil
	}
	return allow.Strings()
}

// egressProxy decodes egress_proxy: {image, network}.
func (d *decoder) egressProxy(s *section, p *EgressProxy) {
	if s.str("image", &p.Image,
		"The image holding the hangar binary that proxies run; default: the gateway's own image when it runs in a container, else "+DefaultEgressProxyImage+".") && strings.TrimSpace(p.Image) == "" {
		d.add(s.at("image"), "must not be empty (leave it out for the default)")
	}
	if s.str("network", &p.Network,
		"The network proxies reach out from: bridge (the default) or a network's name, such as a compose network whose services a server may reach.",
		match(networkRe)) {
		switch {
		case strings.EqualFold(p.Network, "host"):
			d.add(s.at("network"), "host networking is not allowed: it bypasses container isolation")
		case strings.EqualFold(p.Network, "none"), p.Network == "":
			d.add(s.at("network"), "must be bridge or a network name: a proxy with no network reaches nothing")
		case !networkRe().MatchString(p.Network):
			d.add(s.at("network"), "must be bridge or a network name (got %q)", p.Network)
		}
	}
	s.finish()
}

// EgressPermitted returns the first rule of asked that the admin's
// install.allowed_egress does not cover, and false; or "", true when all
// are covered. Installs and hot-loads go through it.
func (i Install) EgressPermitted(asked []string) (string, bool) {
	admin, err := egress.ParseAllow(i.AllowedEgress)
	if err != nil {
		return "", len(asked) == 0
	}
	for _, a := range asked {
		r, err := egress.ParseRule(a)
		if err != nil || !admin.Covers(r) {
			return a, false
		}
	}
	return "", true
}
