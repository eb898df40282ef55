// Package fnmatch matches names against Python fnmatch patterns, the
// pattern language of the Python MCP Hangar's config that hangar keeps:
// a server's tool access lists (provider.ToolPolicy) and a token's server
// filter (auth.Identity) are lists of them. It sits below both so that
// auth need not import provider to match a server name.
package fnmatch

import (
	"regexp"
	"strings"
)

// Patterns is a compiled list of patterns; the zero value matches nothing.
type Patterns struct {
	res []*regexp.Regexp
}

// Compile compiles each pattern once. It never fails (see compile).
func Compile(patterns []string) Patterns {
	p := Patterns{res: make([]*regexp.Regexp, 0, len(patterns))}
	for _, s := range patterns {
		p.res = append(p.res, compile(s))
	}
	return p
}

// Match reports whether name matches any of the patterns, with the
// semantics of Python's fnmatch.fnmatchcase.
func (p Patterns) Match(name string) bool {
	for _, re := range p.res {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// Len is the number of patterns.
func (p Patterns) Len() int { return len(p.res) }

// compile translates a Python fnmatch pattern: * any run, ? one
// character, [seq] a set, [!seq] its complement. Unlike path.Match, * also
// matches "/", as fnmatch does. It never fails: an unterminated [ is a
// literal, and a set Python would accept but RE2 cannot express (a
// reversed range such as [z-a]) matches nothing, as in Python.
func compile(pat string) *regexp.Regexp {
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
