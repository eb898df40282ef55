package packages

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
)

func TestPickNPM(t *testing.T) {
	t.Parallel()
	doc := packument{DistTags: map[string]string{"latest": "1.2.0", "next": "2.0.0-rc.1"}}
	doc.Versions = map[string]struct {
		Deprecated json.RawMessage `json:"deprecated"`
		Dist       struct {
			Tarball   string `json:"tarball"`
			Integrity string `json:"integrity"`
			Shasum    string `json:"shasum"`
		} `json:"dist"`
	}{}
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0", "1.3.0", "2.0.0-rc.1", "0.9.0"} {
		doc.Versions[v] = doc.Versions["x"]
	}
	for spec, want := range map[string]string{
		"":             "1.2.0",
		"latest":       "1.2.0",
		"next":         "2.0.0-rc.1",
		"1.1.0":        "1.1.0",
		"^1.0.0":       "1.2.0", // the latest tag wins when the range holds it, as npm picks
		"~1.3":         "1.3.0",
		">=1.3.0":      "1.3.0",
		"0.x":          "0.9.0",
		"^0.9 || ^1.3": "1.3.0",
		"2.0.0-rc.1":   "2.0.0-rc.1",
	} {
		got, err := pickNPM(doc, spec)
		if err != nil || got != want {
			t.Errorf("pickNPM(%q) = %q, %v; want %q", spec, got, err, want)
		}
	}
	for _, spec := range []string{"^3", ">2.0.0", "nonsense!"} {
		if _, err := pickNPM(doc, spec); !errors.Is(err, ErrNoVersion) {
			t.Errorf("pickNPM(%q): %v, want ErrNoVersion", spec, err)
		}
	}
}

func TestResolvePyPIPages(t *testing.T) {
	t.Parallel()
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	html := `<!DOCTYPE html><html><head><meta name="pypi:repository-version" content="1.0"><title>Links for mcp-x</title></head><body><br>
<a href="../../files/mcp_x-1.0.0-py3-none-any.whl#sha256=` + sum("a") + `">mcp_x-1.0.0-py3-none-any.whl</a>
<a href="../../files/mcp_x-1.1.0-cp312-cp312-manylinux_2_17_x86_64.whl#sha256=` + sum("b") + `">mcp_x-1.1.0-cp312-cp312-manylinux_2_17_x86_64.whl</a>
<a href="../../files/mcp_x-1.1.0.tar.gz#sha256=` + sum("c") + `">mcp_x-1.1.0.tar.gz</a>
<a href="../../files/mcp_x-1.2.0-py3-none-any.whl#sha256=` + sum("d") + `" data-yanked>mcp_x-1.2.0-py3-none-any.whl</a>
<a href="../../files/mcp_x-2.0.0b1-py3-none-any.whl#sha256=` + sum("e") + `">mcp_x-2.0.0b1-py3-none-any.whl</a>
</body></html>`
	jsonPage := `{"files": [{"filename": "mcp_x-1.0.0-py2.py3-none-any.whl", "url": "https://files.example/mcp_x-1.0.0-py2.py3-none-any.whl", "hashes": {"sha256": "` + sum("j") + `"}}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/html/mcp-x/":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(html))
		case "/json/mcp-x/":
			if !strings.Contains(r.Header.Get("Accept"), "application/vnd.pypi.simple.v1+json") {
				t.Errorf("Accept %q", r.Header.Get("Accept"))
			}
			w.Header().Set("Content-Type", "application/vnd.pypi.simple.v1+json")
			_, _ = w.Write([]byte(jsonPage))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	for _, tt := range []struct {
		index, name, spec string
		scripts           bool
		version, file     string
		err               error
	}{
		{"/html/", "mcp_x", "", false, "1.0.0", "mcp_x-1.0.0-py3-none-any.whl", nil}, // 1.1.0 has no pure wheel: refused below; latest release is 1.1.0
		{"/html/", "MCP.X", "==1.0.0", false, "1.0.0", "mcp_x-1.0.0-py3-none-any.whl", nil},
		{"/html/", "mcp-x", ">=1.1", true, "1.1.0", "mcp_x-1.1.0.tar.gz", nil},
		{"/html/", "mcp-x", "==1.2.0", false, "1.2.0", "mcp_x-1.2.0-py3-none-any.whl", nil},   // yanked, pinned exactly
		{"/html/", "mcp-x", ">=1.2,<1.9", false, "", "", ErrNoVersion},                        // 1.2.0 is yanked
		{"/html/", "mcp-x", ">=1.2", false, "2.0.0b1", "mcp_x-2.0.0b1-py3-none-any.whl", nil}, // no final release matches: a pre-release may
		{"/html/", "mcp-x", ">=2.0.0b1", false, "2.0.0b1", "mcp_x-2.0.0b1-py3-none-any.whl", nil},
		{"/html/", "mcp-x", "==1.1.0", false, "", "", ErrUnusable},
		{"/json/", "mcp-x", "", false, "1.0.0", "mcp_x-1.0.0-py2.py3-none-any.whl", nil},
		{"/json/", "other", "", false, "", "", ErrNotFound},
	} {
		a, err := resolvePyPI(t.Context(), http.DefaultClient, srv.URL+tt.index, tt.name, tt.spec, tt.scripts)
		if tt.name == "mcp_x" && tt.spec == "" {
			// The latest release (1.1.0) has only a platform wheel and an
			// sdist: without allow_scripts it cannot be installed.
			if !errors.Is(err, ErrUnusable) || !strings.Contains(err.Error(), "allow_scripts") {
				t.Errorf("latest of mcp_x: %+v, %v", a, err)
			}
			continue
		}
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("%s %s %q: %v, want %v", tt.index, tt.name, tt.spec, err, tt.err)
			}
			continue
		}
		if err != nil || a.Version != tt.version || a.File != tt.file || !strings.HasPrefix(a.Integrity, "sha256:") || !a.Published ||
			strings.Contains(a.URL, "#") {
			t.Errorf("%s %s %q = %+v, %v; want %s %s", tt.index, tt.name, tt.spec, a, err, tt.version, tt.file)
		}
	}
}

func TestCheckDigest(t *testing.T) {
	t.Parallel()
	data := []byte("package bytes")
	s512 := sha512.Sum512(data)
	s256 := sha256.Sum256(data)
	sri := "sha512-" + base64.StdEncoding.EncodeToString(s512[:])
	for _, tt := range []struct {
		want string
		ok   bool
	}{
		{sri, true},
		{"sha256:" + hex.EncodeToString(s256[:]), true},
		{"sha256:" + strings.ToUpper(hex.EncodeToString(s256[:])), true},
		{sha1SRI("0000000000000000000000000000000000000000") + " " + sri, true}, // the strongest listed is checked
		{"sha512-" + base64.StdEncoding.EncodeToString(make([]byte, 64)), false},
		{"sha256:00", false},
		{"md5-abc", false},
	} {
		err := checkDigest(data, tt.want)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrTampered)) {
			t.Errorf("checkDigest(%.30q) = %v, want ok %v", tt.want, err, tt.ok)
		}
	}
}

func TestRegistryFor(t *testing.T) {
	t.Parallel()
	mirror := map[string]string{"npm_config_registry": "http://mirror/npm/", "UV_INDEX_URL": "http://mirror/simple/"}
	for _, tt := range []struct {
		pkg  config.Package
		env  map[string]string
		want string
	}{
		{config.Package{Type: "npm"}, nil, DefaultNPMRegistry},
		{config.Package{Type: "pypi"}, nil, DefaultPyPIIndex},
		{config.Package{Type: "npm"}, mirror, "http://mirror/npm/"},
		{config.Package{Type: "pypi"}, map[string]string{"PIP_INDEX_URL": "https://p/simple"}, "https://p/simple"},
		{config.Package{Type: "pypi"}, mirror, "http://mirror/simple/"},
		// An entry's public registryBaseUrl gives way to the operator's mirror…
		{config.Package{Type: "npm", Registry: "https://registry.npmjs.org/"}, mirror, "http://mirror/npm/"},
		{config.Package{Type: "pypi", Registry: "https://pypi.org/simple/"}, mirror, "http://mirror/simple/"},
		// …another registry does not.
		{config.Package{Type: "npm", Registry: "https://npm.pkg.github.com"}, mirror, "https://npm.pkg.github.com"},
		{config.Package{Type: "npm", Registry: "https://registry.npmjs.org/"}, nil, "https://registry.npmjs.org/"},
	} {
		if got := registryFor(tt.pkg, tt.env); got != tt.want {
			t.Errorf("registryFor(%+v, %v) = %q, want %q", tt.pkg, tt.env, got, tt.want)
		}
	}
	env := map[string]string{"PIP_TRUSTED_HOST": "other"}
	registryEnv("pypi", "http://mirror:8080/simple/", env)
	if want := map[string]string{"PIP_INDEX_URL": "http://mirror:8080/simple/", "UV_INDEX_URL": "http://mirror:8080/simple/",
		"UV_DEFAULT_INDEX": "http://mirror:8080/simple/", "PIP_TRUSTED_HOST": "other mirror", "UV_INSECURE_HOST": "mirror"}; !maps.Equal(env, want) {
		t.Errorf("registryEnv = %v, want %v", env, want)
	}
	env = map[string]string{}
	registryEnv("pypi", "https://mirror/simple/", env)
	if _, trusted := env["PIP_TRUSTED_HOST"]; trusted {
		t.Errorf("an https index's host is trusted: %v", env)
	}
}

func TestPickCommand(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, asked string
		commands    []string
		want, err   string
	}{
		{"@s/srv", "", []string{"x"}, "x", ""},
		{"@s/srv", "", []string{"a", "srv"}, "srv", ""},
		{"mcp_x", "", []string{"mcp-x", "other"}, "mcp-x", ""},
		{"@s/srv", "a", []string{"a", "b"}, "a", ""},
		{"@s/srv", "", []string{"a", "b"}, "", "several commands (a, b)"},
		{"@s/srv", "c", []string{"a", "b"}, "", "has no command c (it has a, b)"},
		{"@s/srv", "", nil, "", "installs no command"},
	} {
		norm := strings.ToLower
		if strings.Contains(tt.name, "_") {
			norm = NormalizePyPI
		}
		got, err := pickCommand("npm", tt.name, "1.0.0", tt.asked, tt.commands, norm)
		if got != tt.want || (tt.err == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrUnusable))) {
			t.Errorf("pickCommand(%s, %q, %v) = %q, %v; want %q, %q", tt.name, tt.asked, tt.commands, got, err, tt.want, tt.err)
		}
	}
}

// TestRegistryErrorsHideCredentials: a registry URL's credentials (a
// token as user-info, a token in the query) are not in an error.
func TestRegistryErrorsHideCredentials(t *testing.T) {
	t.Parallel()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	t.Cleanup(failing.Close)
	u, _ := url.Parse(failing.URL)
	registry := "http://npm-token-1@" + u.Host + "/?token=query-token-2"
	_, err := resolveNPM(t.Context(), failing.Client(), registry, "some-server", "1.0.0")
	if err == nil || !strings.Contains(err.Error(), u.Host) {
		t.Fatalf("resolve against a failing registry: %v", err)
	}
	for _, secret := range []string{"npm-token-1", "query-token-2"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error holds %s: %v", secret, err)
		}
	}
}
