package manage

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/mcp-hangar/hangar/internal/clientconfig"
	"github.com/mcp-hangar/hangar/internal/config"
)

// Secret values of an entry are moved to the keystore before anything is
// stored or answered: the entry keeps a placeholder ${keystore:REF} in
// their place, and only a running provider's spec ever holds the value.
// REF is installs/<name>/<generation>.<n>, so that an uninstall deletes a
// server's secrets by prefix, a placeholder can only ever resolve to a
// secret of its own server (one installed entry cannot read another's),
// and each install's sealed entry differs from the last one's, so that a
// re-install with new secret values replaces the running server.

// secretish names a flag, a query parameter or a field whose value is a
// credential.
var secretish = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(token|secret|passw(or)?d|api[-_]?key|apikey|auth|credential|private[-_]?key|access[-_]?key|session[-_]?key|cookie)`)
})

// SecretPrefix is the keystore prefix of name's secrets.
func SecretPrefix(name string) string { return "installs/" + name + "/" }

func placeholder(ref string) string { return "${keystore:" + ref + "}" }

// Sealed is an entry with its secrets taken out.
type Sealed struct {
	Entry clientconfig.Entry
	// Secrets are ref → value, to put in the keystore.
	Secrets map[string]string
	// Fields are the field paths whose values were sealed (for the
	// secret_stored diagnostics: key names, never values).
	Fields []string
}

// Seal replaces the secret values of e (env values, header values, token
// and authorization, URL user-info and query values, docker -e values,
// values of credential-like flags) by keystore placeholders.
// gen names this install's generation of secrets ("" for none).
func Seal(name, gen string, e clientconfig.Entry, field string) Sealed {
	s := Sealed{Entry: e, Secrets: map[string]string{}}
	n := 0
	take := func(fp, v string) string {
		if v == "" {
			return v
		}
		n++
		ref := fmt.Sprintf("%s%d", SecretPrefix(name), n)
		if gen != "" {
			ref = fmt.Sprintf("%s%s.%d", SecretPrefix(name), gen, n)
		}
		s.Secrets[ref] = v
		s.Fields = append(s.Fields, fp)
		return placeholder(ref)
	}
	if len(e.Env) > 0 {
		s.Entry.Env = map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(e.Env)) {
			s.Entry.Env[k] = take(field+".env."+k, e.Env[k])
		}
	}
	if len(e.Headers) > 0 {
		s.Entry.Headers = map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
			s.Entry.Headers[k] = take(field+".headers."+k, e.Headers[k])
		}
	}
	// User-info is what HTTP clients send as Basic authorization: it
	// becomes that header, sealed, and the stored URL has none.
	if rest, user, pass, ok := cutUserInfo(e.URL); ok {
		s.Entry.URL = rest
		if e.Authorization == "" && e.Token == "" && !hasHeader(e.Headers, "Authorization") {
			if s.Entry.Headers == nil {
				s.Entry.Headers = map[string]string{}
			}
			basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
			s.Entry.Headers["Authorization"] = take(field+".url", "Basic "+basic)
		}
	}
	s.Entry.Token = take(field+".token", e.Token)
	s.Entry.Authorization = take(field+".authorization", e.Authorization)
	s.Entry.URL = sealQuery(s.Entry.URL, field+".url", take)
	s.Entry.Args = sealArgs(e.Args, field+".args", clientconfig.CommandName(e.Command) == "docker", take)
	return s
}

// sealArgs seals values of credential-like flags (--token X, --api-key=X)
// and, for docker, of -e NAME=VALUE.
func sealArgs(args []string, field string, docker bool, take func(fp, v string) string) []string {
	if len(args) == 0 {
		return args
	}
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		fp := fmt.Sprintf("%s[%d]", field, i)
		flag, val, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		isEnv := docker && (flag == "e" || flag == "env")
		switch {
		case isEnv && inline:
			if k, v, ok := strings.Cut(val, "="); ok {
				out[i] = a[:len(a)-len(val)] + k + "=" + take(fp, v)
			}
		case isEnv && i+1 < len(out):
			if k, v, ok := strings.Cut(out[i+1], "="); ok {
				out[i+1] = k + "=" + take(fmt.Sprintf("%s[%d]", field, i+1), v)
			}
			i++
		case !secretish().MatchString(flag):
		case inline:
			out[i] = a[:len(a)-len(val)] + take(fp, val)
		case i+1 < len(out) && !strings.HasPrefix(out[i+1], "-"):
			out[i+1] = take(fmt.Sprintf("%s[%d]", field, i+1), out[i+1])
			i++
		}
	}
	return out
}

var queryKeyRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]+$`) })

// cutUserInfo takes the user-info out of URL u, keeping the rest as
// written; ok is false when there is none.
func cutUserInfo(u string) (rest, user, pass string, ok bool) {
	scheme, after, found := strings.Cut(u, "://")
	if !found {
		return u, "", "", false
	}
	end := strings.IndexAny(after, "/?#")
	if end < 0 {
		end = len(after)
	}
	at := strings.LastIndex(after[:end], "@")
	if at < 0 {
		return u, "", "", false
	}
	info, err := url.PathUnescape(after[:at])
	if err != nil {
		info = after[:at]
	}
	user, pass, _ = strings.Cut(info, ":")
	return scheme + "://" + after[at+1:], user, pass, true
}

func hasHeader(h map[string]string, name string) bool {
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// sealQuery seals the value of every query parameter (an API key travels
// under any name), keeping the rest of the URL as written.
func sealQuery(u, field string, take func(fp, v string) string) string {
	base, query, ok := strings.Cut(u, "?")
	if !ok || query == "" {
		return u
	}
	frag := ""
	if q, f, hasFrag := strings.Cut(query, "#"); hasFrag {
		query, frag = q, "#"+f
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		k, v, hasVal := strings.Cut(p, "=")
		if hasVal && v != "" {
			fk := k
			if !queryKeyRe().MatchString(k) {
				fk = fmt.Sprint(i)
			}
			parts[i] = k + "=" + take(field+"?"+fk, v)
		}
	}
	return base + "?" + strings.Join(parts, "&") + frag
}

var placeholderRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\$\{keystore:(installs/[A-Za-z0-9_-]{1,64}/(?:[0-9a-f]{1,32}\.)?[0-9]+)\}`)
})

// Unseal puts the secret values back into a spec built from a sealed entry.
// Only refs under name's own prefix resolve; lookup errors name the field,
// never a value.
func Unseal(name string, s *config.Server, lookup func(ref string) (string, error)) error {
	prefix := SecretPrefix(name)
	var firstErr error
	fill := func(field, v string) string {
		return placeholderRe().ReplaceAllStringFunc(v, func(m string) string {
			ref := placeholderRe().FindStringSubmatch(m)[1]
			if !strings.HasPrefix(ref, prefix) {
				if firstErr == nil {
					firstErr = fmt.Errorf("%s refers to a secret of another server", field)
				}
				return ""
			}
			val, err := lookup(ref)
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("secret of %s: %w", field, err)
				}
				return ""
			}
			return val
		})
	}
	for k, v := range s.Env {
		s.Env[k] = fill("env."+k, v)
	}
	for k, v := range s.Headers {
		s.Headers[k] = fill("headers."+k, v)
	}
	for i, a := range s.Args {
		s.Args[i] = fill(fmt.Sprintf("args[%d]", i), a)
	}
	for i, a := range s.Command {
		s.Command[i] = fill(fmt.Sprintf("command[%d]", i), a)
	}
	s.Endpoint = fill("url", s.Endpoint)
	return firstErr
}

// Scrub replaces every known secret value in text by "[redacted]": stderr
// tails and errors of a provider may echo its own credentials.
func Scrub(text string, secrets []string) string {
	for _, v := range secrets {
		if len(v) >= 4 {
			text = strings.ReplaceAll(text, v, "[redacted]")
		}
	}
	return text
}
