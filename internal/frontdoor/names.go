package frontdoor

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
)

// Callable names are what agents call provider tools by on the front door:
// <server>__<tool> (or <prefix>__<tool>, or <tool> with flat naming),
// made of [A-Za-z0-9_-] and at most maxCallable characters, which is what
// agent APIs accept. A name that would be too long, or that more than one
// tool (or a hangar_* tool) would get, is given a suffix hashed from the
// server ID and the raw tool name instead: the result depends only on what
// is served, never on which server came first.

// maxCallable is the longest callable name.
const maxCallable = 64

// hashLen is how many hex digits of the hash a suffixed name carries.
const hashLen = 6

// nameRequest is one provider tool to be given a callable name.
type nameRequest struct {
	Server string // provider or group ID: unique
	Prefix string // the name's server part; "" with flat naming
	Tool   string // the raw tool name
}

// sanitize maps every character outside [A-Za-z0-9_-] to '_'.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}

func baseName(r nameRequest) string {
	if r.Prefix == "" {
		return sanitize(r.Tool)
	}
	return sanitize(r.Prefix) + "__" + sanitize(r.Tool)
}

// suffixed returns base shortened to leave room for a hash of the tool's
// identity, and that hash.
func suffixed(base string, r nameRequest, n int) string {
	sum := sha256.Sum256([]byte(r.Server + "\x00" + r.Tool))
	h := hex.EncodeToString(sum[:])[:n]
	if keep := maxCallable - n - 1; len(base) > keep {
		base = base[:keep]
	}
	return base + "_" + h
}

// callableNames gives every request its callable name; reserved names
// (the hangar_* tools) are never given out. The answer is the same for
// the same set of requests, in any order.
func callableNames(reqs []nameRequest, reserved func(string) bool) map[nameRequest]string {
	byBase := map[string][]nameRequest{}
	for _, r := range reqs {
		b := baseName(r)
		byBase[b] = append(byBase[b], r)
	}
	out := make(map[nameRequest]string, len(reqs))
	taken := map[string]nameRequest{}
	var hashed []nameRequest
	for b, rs := range byBase {
		if len(rs) == 1 && len(b) <= maxCallable && !reserved(b) {
			out[rs[0]] = b
			taken[b] = rs[0]
			continue
		}
		hashed = append(hashed, rs...)
	}
	// Sorted, so that the rare clash of a suffixed name with another name
	// is settled the same way every time.
	sort.Slice(hashed, func(i, j int) bool {
		if hashed[i].Server != hashed[j].Server {
			return hashed[i].Server < hashed[j].Server
		}
		return hashed[i].Tool < hashed[j].Tool
	})
	for _, r := range hashed {
		b := baseName(r)
		for n := hashLen; ; n += 2 {
			name := suffixed(b, r, n)
			if _, clash := taken[name]; (!clash && !reserved(name)) || n >= 32 {
				out[r] = name
				taken[name] = r
				break
			}
		}
	}
	return out
}
