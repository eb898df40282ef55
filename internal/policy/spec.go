// Package policy decides whether a call may reach a provider: rules in
// CEL (github.com/google/cel-go) over who calls (identity), what it calls
// (server, tool, resource, prompt), with which arguments (args) and when
// (request). Rules are compiled once, when the configuration is loaded or
// reloaded (Compile; a rule that does not compile fails the load with its
// key path), and evaluated per call.
//
// Decide is the one decision: every way a call reaches a provider (a
// callable name, hangar_call's calls, resources/read, prompts/get,
// completion/complete, resources/subscribe) asks it where the gateway
// checks scopes, and audits its answer. Hidden is the same decision
// without the call's arguments and time, for listings: a tool that no
// call of the caller could pass is left out of tools/list,
// hangar_find_tools and hangar_details.
//
// Precedence, for one call on one server:
//
//   - deny wins: if any deny rule matches, the call is refused;
//   - else an allow rule that matches lets it through;
//   - else the default decides (allow unless set to deny).
//
// A server's own policy in the config file (mcp_servers.<id>.policy) adds
// its rules to the gateway's for that server's calls, and its default,
// when set, replaces the gateway's. An installed server's policy (the
// policy field of an mcp/install entry) only narrows: a call must pass the
// gateway's policy and then the installed one.
//
// A rule whose evaluation fails (a missing key read without has(), a type
// mismatch, the cost limit) fails closed: a deny rule matches, an allow
// rule does not; the Decision carries CEL's error for the audit.
package policy

import (
	"fmt"
	"regexp"
)

// Effects of a rule, and defaults of a policy.
const (
	Allow = "allow"
	Deny  = "deny"
)

// Rule is one rule as configured.
type Rule struct {
	// Name identifies the rule in refusals and the audit trail.
	Name string `json:"name"`
	// Effect is Allow or Deny.
	Effect string `json:"effect"`
	// When is the CEL condition; the rule applies when it is true.
	When string `json:"when"`
	// Message is told to a caller the rule refuses (deny rules).
	Message string `json:"message,omitempty"`
}

// Spec is a policy as configured: the gateway's (policy:) or a server's
// own (mcp_servers.<id>.policy, or an install entry's policy).
type Spec struct {
	// Default decides a call no rule decides: Allow or Deny. "" is Allow
	// for the gateway's policy, and for a server's own policy keeps the
	// gateway's.
	Default string `json:"default,omitempty"`
	Rules   []Rule `json:"rules"`
}

// Bounds of a spec.
const (
	MaxRules      = 1000
	maxNameLen    = 64
	maxMessageLen = 500
	maxWhenLen    = 4096
)

var ruleName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// RuleNameRe is what a rule's name must match (the config's schema shows
// it).
func RuleNameRe() *regexp.Regexp { return ruleName }

// Problem is one thing wrong with a spec: Field is "default", or for a
// rule "rules[i].name", "rules[i].effect", "rules[i].when" or
// "rules[i].message" (the config loader prefixes its key path).
type Problem struct {
	Field   string
	Message string
}

// CompileError lists every problem of a spec.
type CompileError struct {
	Problems []Problem
}

func (e *CompileError) Error() string {
	s := ""
	for i, p := range e.Problems {
		if i > 0 {
			s += "\n"
		}
		s += p.Field + ": " + p.Message
	}
	return s
}

// checkShape reports what is wrong with spec apart from its conditions.
func checkShape(spec Spec) []Problem {
	var out []Problem
	add := func(field, format string, args ...any) {
		out = append(out, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	switch spec.Default {
	case "", Allow, Deny:
	default:
		add("default", "must be allow or deny (got %q)", spec.Default)
	}
	if len(spec.Rules) > MaxRules {
		add("rules", "at most %d rules (got %d)", MaxRules, len(spec.Rules))
	}
	seen := map[string]int{}
	for i, r := range spec.Rules {
		at := fmt.Sprintf("rules[%d].", i)
		switch {
		case r.Name == "":
			add(at+"name", "required")
		case len(r.Name) > maxNameLen || !ruleName.MatchString(r.Name):
			add(at+"name", "must be 1 to %d letters, digits, '-', '_' or '.', starting with a letter or digit (got %q)", maxNameLen, r.Name)
		default:
			if j, dup := seen[r.Name]; dup {
				add(at+"name", "%q is also the name of rules[%d]: names must be unique", r.Name, j)
			} else {
				seen[r.Name] = i
			}
		}
		switch r.Effect {
		case Allow, Deny:
		case "":
			add(at+"effect", "required (allow or deny)")
		default:
			add(at+"effect", "must be allow or deny (got %q)", r.Effect)
		}
		switch {
		case r.When == "":
			add(at+"when", "required (a CEL condition; \"true\" applies to every call)")
		case len(r.When) > maxWhenLen:
			add(at+"when", "at most %d characters (got %d)", maxWhenLen, len(r.When))
		}
		if len(r.Message) > maxMessageLen {
			add(at+"message", "at most %d characters (got %d)", maxMessageLen, len(r.Message))
		}
	}
	return out
}
