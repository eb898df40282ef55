package config

import (
	"regexp"
	"strings"
)

// namespaceRe matches a verified_namespaces entry: a reverse-DNS namespace,
// optionally followed by "/" and one server name (the registry's name
// grammar).
var namespaceRe = regexp.MustCompile(`^[a-zA-Z0-9.-]+(/([a-zA-Z0-9._-]+)?)?$`)

// registry decodes the registry section (hot-loading).
func (d *decoder) registry(s *section, r *Registry) {
	if s.str("url", &r.URL) {
		r.URL = strings.TrimSpace(r.URL)
		if r.URL != "" {
			d.endpoint(s.at("url"), &r.URL)
			r.URL = strings.TrimRight(r.URL, "/")
		}
	}
	if s.str("catalog_file", &r.CatalogFile) {
		r.CatalogFile = strings.TrimSpace(r.CatalogFile)
	}
	var ns []string
	if s.strList("verified_namespaces", &ns) {
		r.VerifiedNamespaces = nil
		for i, n := range ns {
			n = strings.TrimSpace(n)
			if !namespaceRe.MatchString(n) {
				d.add(index(s.at("verified_namespaces"), i),
					`must be a namespace such as "io.github.acme/" or a server name such as "io.github.acme/weather" (got %q)`, n)
				continue
			}
			if !strings.Contains(n, "/") {
				n += "/"
			}
			r.VerifiedNamespaces = append(r.VerifiedNamespaces, n)
		}
	}
	s.seconds("timeout_s", &r.Timeout, 1, 300)
	s.intIn("max_hot_loaded", &r.MaxHotLoaded, 1, 1000)
	s.seconds("idle_ttl_s", &r.IdleTTL, 1, 86400)
	s.finish()
}

// NewServer returns a server of mode with every default a config file
// would give it, for servers built in code (hot-loading); exec supplies
// the default max_concurrency. The caller sets ID and the mode's
// required fields (image, command or endpoint).
func NewServer(id, mode string, exec Execution) *Server {
	if exec.DefaultProviderConcurrency <= 0 {
		exec.DefaultProviderConcurrency = defaults().Execution.DefaultProviderConcurrency
	}
	s := defaultServer(mode, exec, false)
	s.ID = id
	return s
}

// ValidID reports whether id is a valid server ID.
func ValidID(id string) bool { return idRe.MatchString(id) }
