package provider

import (
	"regexp"
	"strings"

	"github.com/mcp-hangar/hangar/internal/config"
)

// ToolPolicy filters tools by fnmatch allow and deny lists: a tool passes if
// it matches an allow pattern (or there is no allow list) and no deny
// pattern. Deny wins.
type ToolPolicy struct {
	allow, deny []*regexp.Regexp
}

// NewToolPolicy compiles the patterns once.
func NewToolPolicy(allow, deny []string) *ToolPolicy {
	p := &ToolPolicy{}
	for _, a := range allow {
		p.allow = append(p.allow, compileFnmatch(a))
	}
	for _, d := range deny {
		p.deny = append(p.deny, compileFnmatch(d))
	}
	return p
}

// PolicyFor returns the policy of a server's config.
func PolicyFor(t config.Tools) *ToolPolicy { return NewToolPolicy(t.AllowList, t.DenyList) }

// Allowed reports whether the tool may be listed and called.
func (p *ToolPolicy) Allowed(name string) bool {
	for _, d := range p.deny {
		if d.MatchString(name) {
			return false
		}
	}
	if len(p.allow) == 0 {
		return true
	}
	for _, a := range p.allow {
		if a.MatchString(name) {
			return true
		}
	}
	return false
}

// Type names the policy for hangar_details.
func (p *ToolPolicy) Type() string {
	switch {
	case len(p.allow) > 0 && len(p.deny) > 0:
		return "allow_and_deny"
	case len(p.allow) > 0:
		return "allow_list"
	case len(p.deny) > 0:
		return "deny_list"
	}
	return "open"
}

// HasAllowList and HasDenyList are for hangar_details.
func (p *ToolPolicy) HasAllowList() bool { return len(p.allow) > 0 }
func (p *ToolPolicy) HasDenyList() bool  { return len(p.deny) > 0 }

// compileFnmatch translates a Python fnmatch pattern: * any run, ? one
// character, [seq] a set, [!seq] its complement. Unlike path.Match, * also
// matches "/", as fnmatch does. It never fails: an unterminated [ is a
// literal, and a set Python would accept but RE2 cannot express (a
// reversed range such as [z-a]) matches nothing, as in Python.
func compileFnmatch(pat string) *regexp.Regexp {
	rs := []rune(pat)
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(rs); i++ {
		switch c := rs[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			j := i + 1
			if j < len(rs) && rs[j] == '!' {
				j++
			}
			if j < len(rs) && rs[j] == ']' {
				j++
			}
			for j < len(rs) && rs[j] != ']' {
				j++
			}
			if j >= len(rs) {
				b.WriteString(`\[`)
				continue
			}
			b.WriteString(fnmatchSet(rs[i+1 : j]))
			i = j
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// neverMatch is a character class no character is in.
const neverMatch = `[^\x00-\x{10FFFF}]`

// fnmatchSet turns the inside of a [set] into an RE2 class. Only "-" (and
// a leading "!") mean anything in fnmatch sets; every other character is
// literal, so RE2's own syntax ([:alpha:], \d, a leading ^) is escaped.
func fnmatchSet(set []rune) string {
	var b strings.Builder
	b.WriteString("[")
	negated := len(set) > 0 && set[0] == '!'
	if negated {
		b.WriteString("^")
		set = set[1:]
	}
	for _, r := range set {
		switch r {
		case '\\', '[', ']', '^', ':':
			b.WriteString(`\` + string(r))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString("]")
	if _, err := regexp.Compile(b.String()); err != nil {
		if negated {
			return "." // the complement of an empty set
		}
		return neverMatch
	}
	return b.String()
}
