package config

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// namespaceRe matches a verified_namespaces entry: a reverse-DNS namespace,
// optionally followed by "/" and one server name (the registry's name
// grammar).
var namespaceRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9.-]+(/([a-zA-Z0-9._-]+)?)?$`) })

// registry decodes the registry section (hot-loading).
func (d *decoder) registry(s *section, r *Registry) {
	if s.str("url", &r.URL, `The MCP registry searched by hangar_load; "" searches the catalog file only.`, format("uri")) {
		r.URL = strings.TrimSpace(r.URL)
		if r.URL != "" {
			d.endpoint(s.at("url"), &r.URL)
			r.URL = strings.TrimRight(r.URL, "/")
		}
	}
	if s.str("catalog_file", &r.CatalogFile,
		"A JSON file of server.json documents (a list, registry entries, or a registry answer), read at every search and consulted first.") {
		r.CatalogFile = strings.TrimSpace(r.CatalogFile)
	}
	ns := r.VerifiedNamespaces
	if s.strList("verified_namespaces", &ns,
		`Name prefixes whose servers count as verified: a namespace "io.github.acme/" or one server "io.github.acme/weather".`,
		match(namespaceRe)) {
		r.VerifiedNamespaces = nil
		for i, n := range ns {
			n = strings.TrimSpace(n)
			if !namespaceRe().MatchString(n) {
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
	s.seconds("timeout_s", &r.Timeout, 1, 300, "The timeout of each registry request, in seconds.")
	s.intIn("max_hot_loaded", &r.MaxHotLoaded, 1, 1000, "The most servers hot-loaded at once.")
	s.seconds("idle_ttl_s", &r.IdleTTL, 1, 86400, "A hot-loaded server unused this long is unloaded, in seconds.")
	types := r.PackageTypes
	if s.strList("package_types", &types,
		"The package types hot-loading runs, in order of preference when an entry publishes several; a type not listed is never run.",
		oneOf(PackageOCI, PackageNPM, PackagePyPI)) {
		r.PackageTypes = nil
		for i, t := range types {
			t = strings.ToLower(strings.TrimSpace(t))
			switch {
			case t != PackageOCI && t != PackageNPM && t != PackagePyPI:
				d.add(index(s.at("package_types"), i), "must be one of %s, %s, %s (got %q)", PackageOCI, PackageNPM, PackagePyPI, types[i])
			case slices.Contains(r.PackageTypes, t):
				d.add(index(s.at("package_types"), i), "%q is listed twice", t)
			default:
				r.PackageTypes = append(r.PackageTypes, t)
			}
		}
		if len(types) == 0 {
			d.add(s.at("package_types"), "must list at least one of %s, %s, %s", PackageOCI, PackageNPM, PackagePyPI)
		}
	}
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
func ValidID(id string) bool { return idRe().MatchString(id) }
