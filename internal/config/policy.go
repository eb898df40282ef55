package config

import (
	"github.com/mcp-hangar/hangar/internal/policy"
)

// policySpec decodes a policy mapping: the gateway's (policy:) or a
// server's own (mcp_servers.<id>.policy). Every rule is compiled here, so
// a condition that does not parse, names an unknown variable or field, or
// is not a boolean fails the load with its key path
// (policy.rules[3].when) and CEL's message.
func (d *decoder) policySpec(s *section) policy.Spec {
	var spec policy.Spec
	s.enum("default", &spec.Default,
		"What a call no rule decides gets. Unset: allow for the gateway's policy; a server's own keeps the gateway's.",
		policy.Allow, policy.Deny)
	items, _ := s.list("rules", "The rules: any matching deny rule refuses a call, else a matching allow rule lets it through, else default decides.")
	shaped := true // every rule is a mapping: problems' indexes are the rules'
	for i, item := range items {
		p := index(s.at("rules"), i)
		if _, ok := asMap(item); !ok {
			d.add(p, "must be a mapping with name, effect, when and message (got %s)", got(item))
			shaped = false
			continue
		}
		r := s.item("rules", p, item)
		var rule policy.Rule
		r.str("name", &rule.Name, "The rule's name, unique in its policy, shown in refusals and the audit.",
			match(policy.RuleNameRe))
		r.str("effect", &rule.Effect, "allow or deny.", oneOf(policy.Allow, policy.Deny))
		r.str("when", &rule.When,
			"A CEL condition over identity, server, tool, args and request; the rule applies when it is true.")
		r.str("message", &rule.Message, "Told to a caller a deny rule refuses.")
		r.finish()
		spec.Rules = append(spec.Rules, rule)
	}
	s.finish()
	if shaped {
		for _, p := range policy.Check(spec) {
			d.add(join(s.path, p.Field), "%s", p.Message)
		}
	}
	return spec
}

// serverPolicy decodes a server's own policy; members have none (a call
// goes to their group).
func (d *decoder) serverPolicy(s *section, srv *Server, member bool) {
	if !s.has("policy") {
		s.take("policy")
		return
	}
	if member {
		s.reject("policy", "not allowed in group members: calls go to the group, whose policy applies")
		return
	}
	spec := d.policySpec(s.sub("policy", "The server's own policy: its rules join the gateway's for its calls, and its default, when set, replaces the gateway's."))
	srv.Policy = &spec
}
