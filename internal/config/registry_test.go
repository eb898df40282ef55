package config

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestParseRegistry(t *testing.T) {
	t.Parallel()
	def := defaults().Registry
	with := func(f func(*Registry)) Registry {
		r := def
		r.VerifiedNamespaces = slices.Clone(def.VerifiedNamespaces)
		f(&r)
		return r
	}
	tests := []struct {
		name string
		yaml string
		env  []string
		want Registry
	}{
		{"defaults", "", nil, def},
		{"empty section", "registry: {}\n", nil, def},
		{"null section", "registry:\n", nil, def},
		{"url", "registry: {url: 'https://r.example/'}\n", nil,
			with(func(r *Registry) { r.URL = "https://r.example" })},
		{"url expanded", "registry: {url: '${R}/v0.1'}\n", []string{"R=http://fake:1"},
			with(func(r *Registry) { r.URL = "http://fake:1/v0.1" })},
		{"url off", "registry: {url: ''}\n", nil,
			with(func(r *Registry) { r.URL = "" })},
		{"catalog only", "registry: {url: '', catalog_file: ' /c.json '}\n", nil,
			with(func(r *Registry) { r.URL, r.CatalogFile = "", "/c.json" })},
		{"namespaces normalised", "registry: {verified_namespaces: [acme.io, 'io.github.x/', io.github.y/one]}\n", nil,
			with(func(r *Registry) { r.VerifiedNamespaces = []string{"acme.io/", "io.github.x/", "io.github.y/one"} })},
		{"no namespaces", "registry: {verified_namespaces: []}\n", nil,
			with(func(r *Registry) { r.VerifiedNamespaces = nil })},
		{"numbers", "registry: {timeout_s: 0.5e1, max_hot_loaded: 1, idle_ttl_s: 86400}\n", nil,
			with(func(r *Registry) { r.Timeout, r.MaxHotLoaded, r.IdleTTL = 5*time.Second, 1, 24*time.Hour })},
		{"environment override", "", []string{"HANGAR_REGISTRY__MAX_HOT_LOADED=7", "HANGAR_REGISTRY__CATALOG_FILE=/x.json"},
			with(func(r *Registry) { r.MaxHotLoaded, r.CatalogFile = 7, "/x.json" })},
		{"secrets are not config keys", "", []string{"HANGAR_SECRET_GITHUB_TOKEN=s3cret", "HANGAR_SECRET_X__Y=1"}, def},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := mustParse(t, tt.yaml, tt.env...).Registry
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("registry:\n got  %+v\n want %+v", got, tt.want)
			}
		})
	}
}

func TestParseRegistryProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		env  []string
		want []string
	}{
		{"not a mapping", "registry: [a]\n", nil, []string{"registry: must be a mapping (got a list)"}},
		{"unknown key", "registry: {enabled: true}\n", nil, []string{"registry.enabled: unknown key"}},
		{"url not http", "registry: {url: 'ftp://r'}\n", nil, []string{`registry.url: must be an http(s) URL (got "ftp://r")`}},
		{"url without host", "registry: {url: 'https://'}\n", nil, []string{`registry.url: must be an http(s) URL (got "https://")`}},
		{"url unset variable", "registry: {url: '${NOPE}'}\n", nil, []string{"registry.url: environment variable NOPE is not set"}},
		{"url not a string", "registry: {url: [a]}\n", nil, []string{"registry.url: must be a string (got a list)"}},
		{"catalog not a string", "registry: {catalog_file: {a: 1}}\n", nil, []string{"registry.catalog_file: must be a string (got a mapping)"}},
		{"namespaces not a list", "registry: {verified_namespaces: io.github.x}\n", nil,
			[]string{`registry.verified_namespaces: must be a list of strings (got "io.github.x")`}},
		{"bad namespace", "registry: {verified_namespaces: [ok.io, 'a b', '/x', 'a/b/c', '']}\n", nil, []string{
			`registry.verified_namespaces[1]: must be a namespace such as "io.github.acme/" or a server name such as "io.github.acme/weather" (got "a b")`,
			`registry.verified_namespaces[2]: must be a namespace such as "io.github.acme/" or a server name such as "io.github.acme/weather" (got "/x")`,
			`registry.verified_namespaces[3]: must be a namespace such as "io.github.acme/" or a server name such as "io.github.acme/weather" (got "a/b/c")`,
			`registry.verified_namespaces[4]: must be a namespace such as "io.github.acme/" or a server name such as "io.github.acme/weather" (got "")`,
		}},
		{"timeout range", "registry: {timeout_s: 0}\n", nil, []string{"registry.timeout_s: must be 1..300 (got 0)"}},
		{"timeout type", "registry: {timeout_s: soon}\n", nil, []string{`registry.timeout_s: must be a number of seconds (got "soon")`}},
		{"max_hot_loaded range", "registry: {max_hot_loaded: 0}\n", nil, []string{"registry.max_hot_loaded: must be 1..1000 (got 0)"}},
		{"max_hot_loaded type", "registry: {max_hot_loaded: 2.5}\n", nil, []string{"registry.max_hot_loaded: must be an integer (got 2.5)"}},
		{"idle_ttl range", "registry: {idle_ttl_s: 86401}\n", nil, []string{"registry.idle_ttl_s: must be 1..86400 (got 86401)"}},
		{"from the environment", "", []string{"HANGAR_REGISTRY__TIMEOUT_S=never"},
			[]string{`registry.timeout_s: must be a number of seconds (got "never") (from environment variable HANGAR_REGISTRY__TIMEOUT_S)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.yaml), tt.env)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Parse: err = %v, want a *ValidationError", err)
			}
			var got []string
			for _, p := range ve.Problems {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n got  %q\n want %q", got, tt.want)
			}
		})
	}
}

func TestRegistryEnabled(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		r    Registry
		want bool
	}{
		{Registry{}, false},
		{Registry{URL: "https://r"}, true},
		{Registry{CatalogFile: "/c.json"}, true},
		{defaults().Registry, true},
	} {
		if got := tt.r.Enabled(); got != tt.want {
			t.Errorf("%+v.Enabled() = %v, want %v", tt.r, got, tt.want)
		}
	}
}

func TestNewServer(t *testing.T) {
	t.Parallel()
	got := NewServer("x", ModeDocker, Execution{})
	want := mustParse(t, "mcp_servers:\n  x: {mode: docker, image: img}\n").Servers["x"]
	want.Image = ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("NewServer(docker):\n got  %+v\n want %+v", got, want)
	}
	if r := NewServer("r", ModeRemote, Execution{DefaultProviderConcurrency: 3}); r.MaxConcurrency != 3 || r.Transport != TransportHTTP || r.ID != "r" {
		t.Errorf("NewServer(remote) = %+v", r)
	}
	for id, want := range map[string]bool{"ok": true, "a.b-c_d": true, "-x": false, "": false, "a/b": false} {
		if ValidID(id) != want {
			t.Errorf("ValidID(%q) = %v, want %v", id, !want, want)
		}
	}
}
