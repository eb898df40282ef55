package registry

import (
	"encoding/json"
	"fmt"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/egress"
)

// MetaEgress is the _meta key of a server.json asking for egress:
// {"allow": ["api.github.com:443"]}. Its container then runs behind an
// egress proxy that allows those hosts, if the gateway's
// install.allowed_egress covers them all.
const MetaEgress = "io.mcp-hangar/egress"

// applyEgress puts spec behind its egress proxy when the entry asks for
// it; the answer is why the load is refused ("" when it is not).
func (l *Loader) applyEgress(srv ServerJSON, spec *config.Server) string {
	raw, ok := srv.Meta[MetaEgress]
	if !ok {
		return ""
	}
	var ask struct {
		Allow []string `json:"allow"`
	}
	if err := json.Unmarshal(raw, &ask); err != nil {
		return fmt.Sprintf("%s: _meta %q must be {\"allow\": [host[:port], …]}", srv.Name, MetaEgress)
	}
	if spec.Mode != config.ModeDocker || spec.Transport != config.TransportStdio {
		return fmt.Sprintf("%s asks for egress control, which applies to stdio containers only", srv.Name)
	}
	allow, err := egress.ParseAllow(ask.Allow)
	if err != nil {
		return fmt.Sprintf("%s: _meta %q allow%v", srv.Name, MetaEgress, err)
	}
	if bad, ok := (config.Install{AllowedEgress: l.AllowedEgress}).EgressPermitted(allow.Strings()); !ok {
		return fmt.Sprintf("%s asks to reach %s, which the gateway's install.allowed_egress does not allow", srv.Name, bad)
	}
	spec.Egress = &config.Egress{Allow: allow.Strings()}
	if len(allow) == 0 {
		spec.Egress.Allow = nil
	}
	spec.Network = ""
	return ""
}
