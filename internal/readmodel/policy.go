package readmodel

import (
	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/policy"
)

// Rules is a policy over calls (internal/policy) as views show it: the
// gateway's (Model.Policy), or a server's own (Details.Rules). The deciding
// rule of each call is in the audit entries (store.AuditEntry.Rule: a
// server's own rules are named "<server>/<rule>").
type Rules struct {
	// Default decides what no rule does: allow or deny; "" in a server's
	// own policy keeps the gateway's.
	Default string
	Rules   []policy.Rule
	// Narrows: the server's policy came from an install (mcp/install) and
	// is checked after the gateway's, which it can only narrow; a config
	// server's own rules are added to the gateway's.
	Narrows bool
}

// ownRules is the server's own policy of d, nil when it has none.
func ownRules(spec *policy.Spec, source string) *Rules {
	if spec == nil {
		return nil
	}
	return &Rules{Default: spec.Default, Rules: append([]policy.Rule{}, spec.Rules...), Narrows: source == string(catalog.SourceInstalled)}
}

// GatewayRules is the gateway's policy over calls in force (Policy); nil
// when the model has no source for it.
func (m *Model) GatewayRules() *Rules {
	if m.Policy == nil {
		return nil
	}
	r := m.Policy()
	return &r
}

// ServerRules is one server's own policy.
type ServerRules struct {
	Server string
	Policy Rules
}

// OwnRules are the policies of their own of the servers and groups keep
// accepts (nil keeps all), in the catalog's order: what Details.Rules
// holds of each, without building the rest of their view.
func (m *Model) OwnRules(keep func(id string) bool) []ServerRules {
	if m.Catalog == nil {
		return nil
	}
	var out []ServerRules
	for _, e := range m.Catalog.List() {
		if e.Spec == nil || (keep != nil && !keep(e.ID)) {
			continue
		}
		if r := ownRules(e.Spec.Policy, string(e.Source)); r != nil {
			out = append(out, ServerRules{Server: e.ID, Policy: *r})
		}
	}
	return out
}
