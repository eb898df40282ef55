// Package pkgtest is an npm registry and a PyPI simple index in one
// http.Handler, serving packages it makes in memory: a tiny MCP server in
// plain Node and one in plain Python (server/), each with a dependency
// (hangar-greeting) the install must fetch from the same registry. The
// unit tests of internal/packages serve it with httptest; the
// mcp-hangar/pkgregistry image (images/pkgregistry) serves it in a
// container for the integration tests and benchmarks, which publish and
// tamper with packages through its /-/ endpoints.
//
//	GET  /npm/<name>                       the packument (scoped: @scope%2fname)
//	GET  /npm/-/files/<file>.tgz           a tarball
//	GET  /pypi/simple/<project>/           the project page (PEP 691 JSON when asked, else PEP 503 HTML)
//	GET  /pypi/files/<file>                a wheel
//	POST /-/publish  {"type","name","version","tools":[…],"deps":bool,"command"}
//	POST /-/tamper   {"type","name","version"}   its file changes, its published digest does not
//	GET  /-/hits                            requests served so far (how a test sees the registry was not asked)
package pkgtest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha1" //nolint:gosec // npm's legacy shasum
	"crypto/sha256"
	"crypto/sha512"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

//go:embed server/server.js server/server.py
var sources embed.FS

// Names of the test packages.
const (
	NPMServer    = "@hangar-test/mcp-server"
	NPMBin       = "hangar-test-server"
	PyPIServer   = "hangar-test-mcp-server"
	PyPIModule   = "hangar_test_mcp_server"
	Greeting     = "hangar-greeting"
	greetingText = "hello from hangar-greeting"
)

// Release is one version of a package.
type Release struct {
	Type    string   `json:"type"` // npm | pypi
	Name    string   `json:"name"`
	Version string   `json:"version"`
	Tools   []string `json:"tools"`
	// Deps makes the server depend on hangar-greeting (^1 / >=1).
	Deps bool `json:"deps"`
	// Command is the bin (npm) or console script (PyPI) it installs;
	// "" names it after the package.
	Command string `json:"command"`
	// Requires are more dependencies, by name (any version): one the
	// registry does not have makes the install fail.
	Requires []string `json:"requires"`
}

type file struct {
	name      string
	data      []byte
	integrity string // npm SRI
	sha256    string
	tampered  []byte
}

type release struct {
	Release
	file *file
}

// Registry is the handler.
type Registry struct {
	mu       sync.Mutex
	releases map[string]map[string]*release // type:name → version → release
	files    map[string]*file               // type/file name → file
	hits     atomic.Int64
}

// New returns a Registry holding the default test packages: the Node and
// Python servers 1.0.0 (tools hello, env, whoami) with their dependency,
// hangar-greeting 1.0.0.
func New() *Registry {
	r := &Registry{releases: map[string]map[string]*release{}, files: map[string]*file{}}
	for _, rel := range []Release{
		{Type: "npm", Name: Greeting, Version: "1.0.0"},
		{Type: "pypi", Name: Greeting, Version: "1.0.0"},
		{Type: "npm", Name: NPMServer, Version: "1.0.0", Tools: []string{"hello", "env", "whoami"}, Deps: true, Command: NPMBin},
		{Type: "pypi", Name: PyPIServer, Version: "1.0.0", Tools: []string{"hello", "env", "whoami"}, Deps: true},
	} {
		if err := r.Publish(rel); err != nil {
			panic(err)
		}
	}
	return r
}

var nameRe = regexp.MustCompile(`^(@[a-z0-9-]+/)?[a-z0-9][a-z0-9._-]*$`)

// Publish adds a release (replacing one of the same version).
func (r *Registry) Publish(rel Release) error {
	if !nameRe.MatchString(rel.Name) || rel.Version == "" || strings.ContainsAny(rel.Version, "/ ") {
		return fmt.Errorf("bad release %+v", rel)
	}
	var f *file
	var err error
	switch rel.Type {
	case "npm":
		f, err = npmTarball(rel)
	case "pypi":
		f, err = wheel(rel)
	default:
		return fmt.Errorf("type %q", rel.Type)
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := rel.Type + ":" + rel.Name
	if r.releases[key] == nil {
		r.releases[key] = map[string]*release{}
	}
	r.releases[key][rel.Version] = &release{Release: rel, file: f}
	r.files[rel.Type+"/"+f.name] = f
	return nil
}

// Tamper makes a release's file differ from what its metadata says.
func (r *Registry) Tamper(typ, name, version string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	rel := r.releases[typ+":"+name][version]
	if rel == nil {
		return fmt.Errorf("no %s %s %s", typ, name, version)
	}
	rel.file.tampered = append(bytes.Clone(rel.file.data), []byte("tampered")...)
	return nil
}

// Hits is the number of requests served.
func (r *Registry) Hits() int64 { return r.hits.Load() }

func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	p := req.URL.EscapedPath()
	if !strings.HasPrefix(p, "/-/") {
		r.hits.Add(1)
	}
	switch {
	case req.Method == http.MethodPost && (p == "/-/publish" || p == "/-/tamper"):
		var rel Release
		if err := json.NewDecoder(req.Body).Decode(&rel); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var err error
		if p == "/-/publish" {
			err = r.Publish(rel)
		} else {
			err = r.Tamper(rel.Type, rel.Name, rel.Version)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case p == "/-/hits":
		fmt.Fprintln(w, r.Hits())
	case strings.HasPrefix(p, "/npm/-/files/"):
		r.serveFile(w, "npm/"+strings.TrimPrefix(p, "/npm/-/files/"))
	case strings.HasPrefix(p, "/npm/"):
		name, err := url.PathUnescape(strings.TrimPrefix(p, "/npm/"))
		if err != nil {
			http.NotFound(w, req)
			return
		}
		r.packument(w, req, name)
	case strings.HasPrefix(p, "/pypi/files/"):
		r.serveFile(w, "pypi/"+strings.TrimPrefix(p, "/pypi/files/"))
	case strings.HasPrefix(p, "/pypi/simple/"):
		r.project(w, req, strings.Trim(strings.TrimPrefix(p, "/pypi/simple/"), "/"))
	default:
		http.NotFound(w, req)
	}
}

func (r *Registry) serveFile(w http.ResponseWriter, key string) {
	r.mu.Lock()
	f := r.files[key]
	var data []byte
	if f != nil {
		data = f.data
		if f.tampered != nil {
			data = f.tampered
		}
	}
	r.mu.Unlock()
	if f == nil {
		http.Error(w, "no such file", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(data)
}

// base is the registry's URL as the client reached it, so that the URLs
// it hands out work wherever it is reached from (a container's address).
func base(req *http.Request) string { return "http://" + req.Host }

func (r *Registry) packument(w http.ResponseWriter, req *http.Request, name string) {
	r.mu.Lock()
	rels := r.releases["npm:"+name]
	versions := map[string]any{}
	latest := ""
	for v, rel := range rels {
		versions[v] = map[string]any{
			"name": name, "version": v,
			"dist": map[string]any{
				"tarball":   base(req) + "/npm/-/files/" + rel.file.name,
				"integrity": rel.file.integrity,
				"shasum":    sha1Hex(rel.file.data),
			},
		}
		if latest == "" || semverLess(latest, v) {
			latest = v
		}
	}
	r.mu.Unlock()
	if len(versions) == 0 {
		http.Error(w, `{"error":"Not found"}`, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"name": name, "dist-tags": map[string]string{"latest": latest}, "versions": versions})
}

func (r *Registry) project(w http.ResponseWriter, req *http.Request, project string) {
	r.mu.Lock()
	var files []*file
	for key, rels := range r.releases {
		typ, name, _ := strings.Cut(key, ":")
		if typ != "pypi" || normalize(name) != project {
			continue
		}
		for _, rel := range rels {
			files = append(files, rel.file)
		}
	}
	r.mu.Unlock()
	if len(files) == 0 {
		http.NotFound(w, req)
		return
	}
	slices.SortFunc(files, func(a, b *file) int { return strings.Compare(a.name, b.name) })
	if strings.Contains(req.Header.Get("Accept"), "application/vnd.pypi.simple.v1+json") {
		var list []map[string]any
		for _, f := range files {
			list = append(list, map[string]any{"filename": f.name, "url": "../../files/" + f.name, "hashes": map[string]string{"sha256": f.sha256}})
		}
		w.Header().Set("Content-Type", "application/vnd.pypi.simple.v1+json")
		_ = json.NewEncoder(w).Encode(map[string]any{"meta": map[string]string{"api-version": "1.0"}, "name": project, "files": list})
		return
	}
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprintf(w, "<!DOCTYPE html>\n<html><body><h1>Links for %s</h1>\n", html.EscapeString(project))
	for _, f := range files {
		fmt.Fprintf(w, "<a href=\"../../files/%s#sha256=%s\">%s</a><br/>\n", html.EscapeString(f.name), f.sha256, html.EscapeString(f.name))
	}
	fmt.Fprintln(w, "</body></html>")
}

var sep = regexp.MustCompile(`[-_.]+`)

func normalize(name string) string { return strings.ToLower(sep.ReplaceAllString(name, "-")) }

func module(name string) string { return strings.ReplaceAll(normalize(name), "-", "_") }

func sha1Hex(b []byte) string {
	// npm's legacy shasum; the registry publishes it beside integrity.
	h := newSHA1()
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func semverLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		var x, y int
		fmt.Sscan(pa[i], &x)
		fmt.Sscan(pb[i], &y)
		if x != y {
			return x < y
		}
	}
	return len(pa) < len(pb)
}

// fill puts a release's name, version and tools into a server's source.
func fill(src string, rel Release) string {
	tools, _ := json.Marshal(rel.Tools)
	return strings.NewReplacer("__NAME__", rel.Name, "__VERSION__", rel.Version, "__TOOLS__", string(tools)).Replace(src)
}

// stamp is the time every entry of a made package carries, so that the
// same release is the same bytes (and digest) every time it is made.
var stamp = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func npmTarball(rel Release) (*file, error) {
	manifest := map[string]any{"name": rel.Name, "version": rel.Version, "license": "MIT"}
	files := map[string][]byte{}
	if rel.Name == Greeting {
		manifest["main"] = "index.js"
		files["index.js"] = []byte("exports.greet = () => '" + greetingText + " " + rel.Version + "';\n")
	} else {
		src, err := sources.ReadFile("server/server.js")
		if err != nil {
			return nil, err
		}
		cmd := rel.Command
		if cmd == "" {
			cmd = rel.Name[strings.LastIndex(rel.Name, "/")+1:]
		}
		manifest["bin"] = map[string]string{cmd: "index.js"}
		deps := map[string]string{}
		if rel.Deps {
			deps[Greeting] = "^1.0.0"
		}
		for _, r := range rel.Requires {
			deps[r] = "*"
		}
		if len(deps) > 0 {
			manifest["dependencies"] = deps
		}
		files["index.js"] = []byte(fill(string(src), rel))
	}
	pj, _ := json.MarshalIndent(manifest, "", "  ")
	files["package.json"] = pj
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.ModTime = stamp
	tw := tar.NewWriter(zw)
	for _, n := range slices.Sorted(mapKeys(files)) {
		mode := int64(0o644)
		if n == "index.js" {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + n, Mode: mode, Size: int64(len(files[n])), ModTime: stamp, Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	sum := sha512.Sum512(data)
	short := rel.Name[strings.LastIndex(rel.Name, "/")+1:]
	return &file{name: short + "-" + rel.Version + ".tgz", data: data, integrity: "sha512-" + base64.StdEncoding.EncodeToString(sum[:])}, nil
}

func wheel(rel Release) (*file, error) {
	mod := module(rel.Name)
	dist := mod + "-" + rel.Version + ".dist-info"
	files := map[string][]byte{}
	meta := "Metadata-Version: 2.1\nName: " + rel.Name + "\nVersion: " + rel.Version + "\n"
	if rel.Name == Greeting {
		files[mod+"/__init__.py"] = []byte("def greet():\n    return \"" + greetingText + " " + rel.Version + "\"\n")
	} else {
		src, err := sources.ReadFile("server/server.py")
		if err != nil {
			return nil, err
		}
		files[mod+"/__init__.py"] = []byte(fill(string(src), rel))
		files[mod+"/__main__.py"] = []byte("from " + mod + " import main\n\nmain()\n")
		cmd := rel.Command
		if cmd == "" {
			cmd = normalize(rel.Name)
		}
		files[dist+"/entry_points.txt"] = []byte("[console_scripts]\n" + cmd + " = " + mod + ":main\n")
		if rel.Deps {
			meta += "Requires-Dist: " + Greeting + ">=1.0\n"
		}
		for _, r := range rel.Requires {
			meta += "Requires-Dist: " + r + "\n"
		}
	}
	files[dist+"/METADATA"] = []byte(meta)
	files[dist+"/WHEEL"] = []byte("Wheel-Version: 1.0\nGenerator: hangar-pkgtest\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
	var record strings.Builder
	for _, n := range slices.Sorted(mapKeys(files)) {
		sum := sha256.Sum256(files[n])
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", n, base64.RawURLEncoding.EncodeToString(sum[:]), len(files[n]))
	}
	record.WriteString(dist + "/RECORD,,\n")
	files[dist+"/RECORD"] = []byte(record.String())
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range slices.Sorted(mapKeys(files)) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Deflate, Modified: stamp})
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	sum := sha256.Sum256(data)
	return &file{name: mod + "-" + rel.Version + "-py3-none-any.whl", data: data, sha256: hex.EncodeToString(sum[:])}, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func newSHA1() hash.Hash { return sha1.New() } //nolint:gosec // npm's legacy shasum
