package auth

import (
	"errors"
	"net/http"
	"strings"
)

// MaxCredentialLength bounds a token or JWT read from a header: a JWT with
// many claims is a few KiB; anything longer is not a credential.
const MaxCredentialLength = 8 << 10

// Reasons a credential header is refused. They are logged (never the
// header itself); the client only ever sees ErrUnauthenticated.
var (
	ErrNoCredential       = errors.New("no credential")
	ErrMalformedAuthz     = errors.New("malformed Authorization header")
	ErrUnsupportedScheme  = errors.New("unsupported Authorization scheme (want Bearer)")
	ErrMultipleCredential = errors.New("more than one credential in the request")
	ErrBadCredentialChars = errors.New("credential has characters outside the token alphabet")
)

// Credential extracts the bearer token of a request: from
// `Authorization: Bearer <token>` or from the api key header. A request
// carrying two different credentials, or the same header twice, is refused
// rather than guessed at.
func Credential(h http.Header, apiKeyHeader string) (string, error) {
	var found []string
	if vals := h.Values("Authorization"); len(vals) > 0 {
		if len(vals) > 1 {
			return "", ErrMultipleCredential
		}
		scheme, tok, ok := strings.Cut(strings.TrimSpace(vals[0]), " ")
		if !ok {
			if strings.EqualFold(scheme, "Bearer") {
				return "", ErrMalformedAuthz
			}
			return "", ErrUnsupportedScheme
		}
		if !strings.EqualFold(scheme, "Bearer") {
			return "", ErrUnsupportedScheme
		}
		found = append(found, strings.TrimSpace(tok))
	}
	if apiKeyHeader != "" && !strings.EqualFold(apiKeyHeader, "Authorization") {
		if vals := h.Values(apiKeyHeader); len(vals) > 0 {
			if len(vals) > 1 {
				return "", ErrMultipleCredential
			}
			found = append(found, strings.TrimSpace(vals[0]))
		}
	}
	switch {
	case len(found) == 0:
		return "", ErrNoCredential
	case len(found) == 2 && found[0] != found[1]:
		return "", ErrMultipleCredential
	}
	tok := found[0]
	if tok == "" || len(tok) > MaxCredentialLength {
		return "", ErrMalformedAuthz
	}
	for i := 0; i < len(tok); i++ {
		// RFC 6750 b64token, plus what opaque tokens commonly use.
		c := tok[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == ',' || c == ';' || c == '\\' {
			return "", ErrBadCredentialChars
		}
	}
	return tok, nil
}
