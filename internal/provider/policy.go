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
// matches "/", as fnmatch does. A malformed set is taken literally.
func compileFnmatch(pat string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			j := i + 1
			if j < len(pat) && pat[j] == '!' {
				j++
			}
			if j < len(pat) && pat[j] == ']' {
				j++
			}
			for j < len(pat) && pat[j] != ']' {
				j++
			}
			if j >= len(pat) {
				b.WriteString(`\[`)
				continue
			}
			set := strings.ReplaceAll(pat[i+1:j], `\`, `\\`)
			if strings.HasPrefix(set, "!") {
				set = "^" + set[1:]
			} else if strings.HasPrefix(set, "^") {
				set = `\` + set
			}
			b.WriteString("[" + set + "]")
			i = j
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}
