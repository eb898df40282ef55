// Package redact takes credentials out of endpoints before they are shown:
// in answers (hangar_details, mcp/server/details), errors (last_error),
// logs and audit. It is the one place that knows what of an endpoint is
// secret: the user-info, every query value and the fragment of a URL, and
// every header value.
package redact

import (
	"net/url"
	"regexp"
	"strings"
	"sync"
)

// Mask replaces a secret value.
const Mask = "[redacted]"

// URL returns raw with its user-info removed and every query value and
// the fragment masked; the scheme, host, port, path and query keys stay,
// since they say where the server is. A keystore placeholder is no secret
// and is kept. What does not parse as a URL is masked whole.
func URL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return Mask
	}
	u.User = nil
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			k, v, _ := strings.Cut(p, "=")
			if v != "" && !placeholderRe().MatchString(v) {
				parts[i] = k + "=" + Mask
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	frag := u.Fragment != "" || u.RawFragment != ""
	u.Fragment, u.RawFragment = "", ""
	if frag {
		return u.String() + "#" + Mask
	}
	return u.String()
}

var placeholderRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\$\{keystore:[A-Za-z0-9_./-]+\}$`) })

// urlInText finds URLs in free text: an error of net/http quotes the URL
// it failed on ("Post \"https://…\": …"), a log line may carry one bare.
var urlInText = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]{1,15}://[^\s"'<>` + "`" + `]+`)
})

// Text masks the credentials of every URL in s (see URL). Use it on any
// error or message that may name an endpoint.
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlInText().ReplaceAllStringFunc(s, func(m string) string {
		// A URL at the end of a sentence keeps its punctuation outside.
		trail := ""
		for len(m) > 0 && strings.ContainsRune(".,;:)]}", rune(m[len(m)-1])) {
			trail = m[len(m)-1:] + trail
			m = m[:len(m)-1]
		}
		return URL(m) + trail
	})
}

// Headers returns the names of h with every value masked.
func Headers(h map[string]string) map[string]string {
	if h == nil {
		return nil
	}
	out := make(map[string]string, len(h))
	for k := range h {
		out[k] = Mask
	}
	return out
}
