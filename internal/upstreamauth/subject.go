package upstreamauth

import (
	"errors"
	"net/url"
	"strings"

	"github.com/mcp-hangar/hangar/internal/auth"
)

// Subject is who an upstream credential belongs to: a static token (its
// name and its fingerprint, so a new token under an old name inherits
// nothing), a JWT subject of one issuer, or the local caller of a gateway
// without credentials.
type Subject struct {
	Kind string
	// Issuer is the JWT issuer, or the static token's fingerprint.
	Issuer string
	Name   string
}

// ErrAnonymous refuses per-identity credentials to an anonymous caller:
// every anonymous caller is the same nobody, so one login would serve
// them all.
var ErrAnonymous = errors.New("upstream_auth: a server with per-identity credentials needs an authenticated caller (a token or a JWT), not an anonymous one")

// SubjectOf is the subject of a caller.
func SubjectOf(id auth.Identity) (Subject, error) {
	switch id.Kind {
	case auth.KindJWT:
		return Subject{Kind: id.Kind, Issuer: id.Issuer, Name: id.Name}, nil
	case auth.KindToken:
		return Subject{Kind: id.Kind, Issuer: id.Credential, Name: id.Name}, nil
	case auth.KindLocal:
		return Subject{Kind: id.Kind, Name: id.Name}, nil
	}
	return Subject{}, ErrAnonymous
}

// key is the subject as one ref segment group: each part escaped, so no
// two subjects share a key or a prefix.
func (s Subject) key() string {
	return url.PathEscape(s.Kind) + "/" + url.PathEscape(s.Issuer) + "/" + url.PathEscape(s.Name)
}

// parseKey reads a key back; ok is false for anything else.
func parseKey(k string) (Subject, bool) {
	parts := strings.Split(k, "/")
	if len(parts) != 3 {
		return Subject{}, false
	}
	var out [3]string
	for i, p := range parts {
		v, err := url.PathUnescape(p)
		if err != nil {
			return Subject{}, false
		}
		out[i] = v
	}
	return Subject{Kind: out[0], Issuer: out[1], Name: out[2]}, true
}

// Keystore refs. Everything is sealed (the keystore encrypts every value);
// a ref holds only a subject's name, a server ID or a hash.
const (
	refRoot   = "upstream-auth/"
	refTokens = refRoot + "token/"  // token/<subject key>/<server>
	refFlows  = refRoot + "flow/"   // flow/<sha256 of the state>
	refStarts = refRoot + "start/"  // start/<sha256 of the link id>
	refClient = refRoot + "client/" // client/<server>/<sha256 of the issuer>
)

func tokenRef(s Subject, server string) string { return refTokens + s.key() + "/" + server }

// parseTokenRef reads a token ref back into its subject and server.
func parseTokenRef(ref string) (Subject, string, bool) {
	rest, ok := strings.CutPrefix(ref, refTokens)
	if !ok {
		return Subject{}, "", false
	}
	i := strings.LastIndexByte(rest, '/')
	if i < 0 {
		return Subject{}, "", false
	}
	s, ok := parseKey(rest[:i])
	return s, rest[i+1:], ok
}
