package config

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

var envNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// expand replaces ${VAR} and ${VAR:-default} from lookup. As in the shell,
// the default also applies when VAR is set but empty. A lone "$" is left
// alone so that values such as passwords need no escaping.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ in %q", s[i:])
		}
		expr := s[i+2 : i+end]
		s = s[i+end+1:]

		name, def, hasDef := strings.Cut(expr, ":-")
		if !envNameRe().MatchString(name) {
			return "", fmt.Errorf("invalid environment variable reference ${%s}", expr)
		}
		val, ok := lookup(name)
		if !ok || val == "" {
			// Docker secrets convention: ${API_KEY} may come from the
			// file named by API_KEY_FILE.
			if path, isSet := lookup(name + "_FILE"); isSet && path != "" {
				v, err := ReadSecretFile(path)
				if err != nil {
					return "", fmt.Errorf("environment variable %s_FILE: %w", name, err)
				}
				val, ok = v, true
			}
		}
		switch {
		case ok && val != "":
			b.WriteString(val)
		case hasDef:
			b.WriteString(def)
		case ok:
			// Set but empty, no default: the user did set it.
		default:
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
	}
}

// expandAll expands every value of m in place, reporting each failure at
// path.<key>.
func (d *decoder) expandAll(path string, m map[string]string) {
	for _, k := range sortedKeys(m) {
		v, err := expand(m[k], d.lookup)
		if err != nil {
			d.add(join(path, k), "%v", err)
			continue
		}
		m[k] = v
	}
}

// environLookup turns a KEY=VALUE list into a lookup; later entries win, as
// they do when the list is passed to exec.
func environLookup(environ []string) func(string) (string, bool) {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}
