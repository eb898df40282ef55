package toolsearch

import (
	"strings"
	"unicode"
)

// Words splits a tool or parameter name into lower-case words: at
// anything that is not a letter or digit (snake_case, kebab-case, "__",
// dots), at a lower-to-upper change (camelCase), before the last capital
// of a run followed by a lower-case letter (HTTPServer → http server), and
// between letters and digits.
func Words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if len(cur) > 0 {
			prev := cur[len(cur)-1]
			switch {
			case unicode.IsLower(prev) && unicode.IsUpper(r):
				flush()
			case unicode.IsUpper(prev) && unicode.IsUpper(r) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
				flush()
			case unicode.IsDigit(prev) != unicode.IsDigit(r):
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return out
}

// nameText is the text indexed for a set of names: their words, each
// once, so a word that is in both the callable and the raw name does not
// count twice.
func nameText(names ...string) string {
	seen := map[string]bool{}
	var b strings.Builder
	for _, n := range names {
		for _, w := range Words(n) {
			if seen[w] {
				continue
			}
			seen[w] = true
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(w)
		}
	}
	return b.String()
}

// stopwords carry no meaning about which tool is wanted; dropping them
// keeps "how do I get the logs of a pod" from matching every description
// with "of" and "a".
var stopwords = map[string]bool{
	"a": true, "an": true, "the": true, "to": true, "of": true, "in": true, "on": true, "for": true,
	"and": true, "or": true, "with": true, "from": true, "by": true, "at": true, "as": true, "into": true,
	"is": true, "are": true, "be": true, "it": true, "its": true, "this": true, "that": true, "these": true,
	"i": true, "me": true, "my": true, "we": true, "our": true, "you": true, "your": true,
	"please": true, "can": true, "could": true, "would": true, "should": true, "do": true, "does": true,
	"how": true, "what": true, "which": true, "who": true, "where": true, "when": true,
	"want": true, "need": true, "some": true, "any": true, "there": true, "about": true,
	"tool": true, "tools": true, "using": true, "use": true, "via": true, "so": true, "if": true,
	"s": true, "t": true,
}

// synonyms widen a query word to the words tool authors use for the same
// thing. Each list is what a query word may also mean, not a thesaurus:
// a wrong entry costs precision everywhere, so it stays small.
var synonyms = map[string][]string{
	"delete":     {"remove", "drop"},
	"remove":     {"delete", "drop"},
	"erase":      {"delete", "remove"},
	"drop":       {"delete", "remove"},
	"create":     {"new", "add"},
	"make":       {"create", "new"},
	"add":        {"create", "insert"},
	"show":       {"list", "get", "view"},
	"display":    {"list", "get", "view"},
	"view":       {"get", "list", "show"},
	"see":        {"get", "list", "view"},
	"retrieve":   {"get", "fetch"},
	"fetch":      {"get", "retrieve", "download"},
	"read":       {"get"},
	"look":       {"find", "search", "get"},
	"lookup":     {"find", "search", "get"},
	"find":       {"search"},
	"search":     {"find", "query"},
	"edit":       {"update", "modify"},
	"change":     {"update", "edit", "modify"},
	"modify":     {"update", "edit"},
	"rename":     {"move", "update"},
	"run":        {"execute", "trigger"},
	"execute":    {"run"},
	"launch":     {"run", "start"},
	"trigger":    {"run"},
	"kill":       {"stop", "terminate", "delete"},
	"halt":       {"stop", "cancel"},
	"abort":      {"cancel", "stop"},
	"folder":     {"directory"},
	"dir":        {"directory"},
	"repo":       {"repository"},
	"repos":      {"repositories", "repository"},
	"pr":         {"pull", "request"},
	"prs":        {"pull", "requests"},
	"mr":         {"merge", "request"},
	"ticket":     {"issue"},
	"tickets":    {"issues"},
	"bug":        {"issue"},
	"bugs":       {"issues"},
	"db":         {"database"},
	"k8s":        {"kubernetes"},
	"picture":    {"image", "screenshot"},
	"snapshot":   {"screenshot"},
	"webpage":    {"page", "url"},
	"website":    {"page", "url", "site"},
	"site":       {"page", "url"},
	"link":       {"url"},
	"scrape":     {"fetch", "extract"},
	"download":   {"fetch", "get"},
	"upload":     {"push", "file"},
	"message":    {"post", "send"},
	"send":       {"post"},
	"post":       {"send", "message"},
	"comment":    {"comments"},
	"reply":      {"comment", "respond"},
	"whoami":     {"me", "profile", "user"},
	"errors":     {"error", "issues"},
	"crash":      {"error", "issue"},
	"exception":  {"error", "issue"},
	"refund":     {"refunds"},
	"pay":        {"payment"},
	"charge":     {"payment"},
	"customer":   {"customers"},
	"invoice":    {"invoices"},
	"timezone":   {"time"},
	"clock":      {"time"},
	"now":        {"current"},
	"weather":    {"forecast"},
	"geocode":    {"coordinates", "address"},
	"directions": {"route"},
	"env":        {"environment"},
	"config":     {"configuration"},
	"metrics":    {"metric"},
	"traces":     {"trace"},
	"alert":      {"alerts", "alerting"},
	"alerts":     {"alert", "alerting"},
	"deploy":     {"deployment", "deploys"},
	"think":      {"thinking", "thought"},
	"reason":     {"thinking", "thought"},
	"remember":   {"memory", "observations"},
	"knowledge":  {"graph", "memory"},
}

// queryTerms turns a natural-language query into the words to look for:
// its words without stopwords, and apart the synonyms of those words
// that are not query words themselves, each term once.
func queryTerms(q string) (words, syns []string) {
	seen := map[string]bool{}
	for _, w := range Words(q) {
		if !stopwords[w] && !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	for _, w := range words {
		for _, s := range synonyms[w] {
			if !seen[s] {
				seen[s] = true
				syns = append(syns, s)
			}
		}
	}
	return words, syns
}
