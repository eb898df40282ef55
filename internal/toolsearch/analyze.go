package toolsearch

import (
	"strings"
	"unicode"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"
)

// analyze turns indexed or query text into the terms BM25 counts, as
// bleve's "en" analyzer did when the index was bleve's: words (letters,
// digits and underscores, joined across an apostrophe or a dot between
// letters and across a dot or comma between digits, after Unicode's word
// rules), the English possessive dropped, lower case, English stop words
// dropped, and the Snowball English stem. The stemmer is the one bleve
// used; the rest is a few lines, which keeps bleve's index, storage and
// geo packages (3 MB of the gateway's resident text) out of the binary.
func analyze(text string) []string {
	var out []string
	rs := []rune(text)
	start := -1
	emit := func(end int) {
		if start < 0 {
			return
		}
		w := strings.ToLower(string(rs[start:end]))
		start = -1
		w = strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "\u2019s")
		if w == "" || enStop[w] {
			return
		}
		env := snowballstem.NewEnv(w)
		english.Stem(env)
		out = append(out, env.Current())
	}
	for i, r := range rs {
		if isWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i+1 < len(rs) && joins(rs[i-1], r, rs[i+1]) {
			continue
		}
		emit(i)
	}
	emit(len(rs))
	return out
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || unicode.Is(unicode.Mn, r)
}

// joins says whether sep between prev and next stays inside one word
// (UAX #29's MidLetter and MidNum: "don't", "e.g", "3.14", "1,000").
func joins(prev, sep, next rune) bool {
	switch sep {
	case '\'', '\u2019', '.', ':':
		if unicode.IsLetter(prev) && unicode.IsLetter(next) {
			return true
		}
	}
	switch sep {
	case '.', ',', '\'', ';':
		return unicode.IsDigit(prev) && unicode.IsDigit(next)
	}
	return false
}

// enStop is the Snowball English stop list, the one bleve's "en"
// analyzer drops.
var enStop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`i me my myself we our ours ourselves you your yours yourself
	yourselves he him his himself she her hers herself it its itself they them their theirs
	themselves what which who whom this that these those am is are was were be been being have
	has had having do does did doing would should could ought i'm you're he's she's it's we're
	they're i've you've we've they've i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll
	we'll they'll isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't won't
	wouldn't shan't shouldn't can't cannot couldn't mustn't let's that's who's what's here's
	there's when's where's why's how's a an the and but if or because as until while of at by
	for with about against between into through during before after above below to from up
	down in out on off over under again further then once here there when where why how all
	any both each few more most other some such no nor not only own same so than too very`) {
		m[w] = true
	}
	return m
}()
