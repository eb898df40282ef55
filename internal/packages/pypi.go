package packages

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	pep440 "github.com/aquasecurity/go-pep440-version"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/redact"
)

// DefaultPyPIIndex is where PyPI packages come from when neither the
// package nor its runtime names an index.
const DefaultPyPIIndex = "https://pypi.org/simple/"

// pypiFile is one file of a project on a simple index (PEP 503 / 691).
type pypiFile struct {
	Filename string            `json:"filename"`
	URL      string            `json:"url"`
	Hashes   map[string]string `json:"hashes"`
	Yanked   json.RawMessage   `json:"yanked"`
}

func (f pypiFile) yanked() bool {
	s := strings.TrimSpace(string(f.Yanked))
	return s != "" && s != "false" && s != "null"
}

// pypiProjectURL is the project's page on the simple index at index.
func pypiProjectURL(index, name string) string {
	return strings.TrimRight(index, "/") + "/" + NormalizePyPI(name) + "/"
}

// resolvePyPI reads name's files from the simple index and picks the
// version spec asks for ("" the latest release, an exact version, or a
// PEP 440 specifier), then its file: a pure-Python wheel, else (with
// allowScripts, since building it runs its code) the source
// distribution.
func resolvePyPI(ctx context.Context, hc *http.Client, index, name, spec string, allowScripts bool) (Artifact, error) {
	page := pypiProjectURL(index, name)
	body, ctype, err := get(ctx, hc, page, "application/vnd.pypi.simple.v1+json, text/html;q=0.2", maxMetadataBytes)
	switch {
	case errors.Is(err, ErrNotFound):
		return Artifact{}, fmt.Errorf("%w: PyPI project %s is not in the index %s", ErrNotFound, name, redact.URL(index))
	case err != nil:
		return Artifact{}, fmt.Errorf("PyPI index %s: %w", redact.URL(index), err)
	}
	var files []pypiFile
	if strings.Contains(ctype, "json") {
		var doc struct {
			Files []pypiFile `json:"files"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			return Artifact{}, fmt.Errorf("%w: PyPI index %s: the page of %s does not decode: %v", ErrUnreachable, redact.URL(index), name, err)
		}
		files = doc.Files
	} else {
		files = parseSimpleHTML(body)
	}
	base, _ := url.Parse(page)
	byVersion := map[string][]pypiFile{}
	for _, f := range files {
		v := fileVersion(f.Filename)
		if v == "" {
			continue
		}
		if u, err := base.Parse(f.URL); err == nil {
			if frag := u.Fragment; strings.HasPrefix(frag, "sha256=") && f.Hashes["sha256"] == "" {
				if f.Hashes == nil {
					f.Hashes = map[string]string{}
				}
				f.Hashes["sha256"] = strings.TrimPrefix(frag, "sha256=")
			}
			u.Fragment = ""
			f.URL = u.String()
		}
		byVersion[v] = append(byVersion[v], f)
	}
	version, err := pickPyPI(byVersion, spec)
	if err != nil {
		return Artifact{}, fmt.Errorf("PyPI project %s: %w", name, err)
	}
	f, err := pickFile(byVersion[version], allowScripts)
	if err != nil {
		return Artifact{}, fmt.Errorf("PyPI project %s %s: %w", name, version, err)
	}
	a := Artifact{Type: config.PackagePyPI, Name: name, Version: version, URL: f.URL, File: f.Filename}
	if h := f.Hashes["sha256"]; h != "" {
		a.Integrity, a.Published = "sha256:"+strings.ToLower(h), true
	}
	return a, nil
}

// parseSimpleHTML reads the anchors of a PEP 503 project page, with
// encoding/xml in its HTML mode (the gateway links it anyway; an HTML
// library would add its entity table to every process's start).
func parseSimpleHTML(body []byte) []pypiFile {
	var out []pypiFile
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict, d.AutoClose, d.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	var cur *pypiFile
	for {
		tok, err := d.Token()
		if err != nil {
			return out // io.EOF, or the rest does not parse: what was read stands
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if !strings.EqualFold(t.Name.Local, "a") {
				continue
			}
			f := pypiFile{}
			for _, a := range t.Attr {
				switch strings.ToLower(a.Name.Local) {
				case "href":
					f.URL = a.Value
				case "data-yanked":
					f.Yanked = json.RawMessage(`true`)
				}
			}
			cur = &f
		case xml.CharData:
			if cur != nil {
				cur.Filename += strings.TrimSpace(string(t))
			}
		case xml.EndElement:
			if strings.EqualFold(t.Name.Local, "a") && cur != nil {
				if cur.Filename == "" {
					p := cur.URL
					if i := strings.IndexAny(p, "#?"); i >= 0 {
						p = p[:i]
					}
					cur.Filename = p[strings.LastIndex(p, "/")+1:]
				}
				out = append(out, *cur)
				cur = nil
			}
		}
	}
}

// fileVersion is the version in a wheel's or sdist's file name, "" for
// other files.
func fileVersion(filename string) string {
	switch {
	case strings.HasSuffix(filename, ".whl"):
		parts := strings.Split(strings.TrimSuffix(filename, ".whl"), "-")
		if len(parts) >= 5 {
			return parts[1]
		}
	case strings.HasSuffix(filename, ".tar.gz"), strings.HasSuffix(filename, ".zip"):
		stem := strings.TrimSuffix(strings.TrimSuffix(filename, ".tar.gz"), ".zip")
		if i := strings.LastIndex(stem, "-"); i > 0 {
			return stem[i+1:]
		}
	}
	return ""
}

// pickPyPI chooses the version spec asks for among byVersion's.
func pickPyPI(byVersion map[string][]pypiFile, spec string) (string, error) {
	spec = strings.TrimSpace(spec)
	type cand struct {
		raw    string
		v      pep440.Version
		yanked bool
	}
	var all []cand
	for raw, files := range byVersion {
		v, err := pep440.Parse(raw)
		if err != nil {
			continue
		}
		yanked := !slices.ContainsFunc(files, func(f pypiFile) bool { return !f.yanked() })
		all = append(all, cand{raw, v, yanked})
	}
	slices.SortFunc(all, func(a, b cand) int { return b.v.Compare(a.v) })
	if len(all) == 0 {
		return "", fmt.Errorf("%w: the index lists no installable files", ErrNoVersion)
	}
	if spec == "" {
		for _, c := range all {
			if !c.yanked && !c.v.IsPreRelease() {
				return c.raw, nil
			}
		}
		for _, c := range all {
			if !c.yanked {
				return c.raw, nil
			}
		}
		return "", fmt.Errorf("%w: every release is yanked", ErrNoVersion)
	}
	exact := ""
	if v, err := pep440.Parse(spec); err == nil {
		exact = v.String()
		spec = "==" + spec
	} else if e, ok := strings.CutPrefix(spec, "=="); ok && !strings.ContainsAny(e, ",*") {
		if v, err := pep440.Parse(strings.TrimSpace(e)); err == nil {
			exact = v.String()
		}
	}
	ss, err := pep440.NewSpecifiers(spec)
	if err != nil {
		return "", fmt.Errorf("%w: %q is not a version or version specifier", ErrNoVersion, spec)
	}
	// Pre-releases only when the specifier names one, or when no final
	// release matches (PEP 440); a yanked release only when pinned
	// exactly (PEP 592).
	pre := preRe.MatchString(spec)
	for _, allowPre := range []bool{pre, true} {
		for _, c := range all {
			if ss.Check(c.v) && (!c.yanked || c.v.String() == exact) && (allowPre || !c.v.IsPreRelease()) {
				return c.raw, nil
			}
		}
	}
	names := make([]string, 0, 6)
	for i, c := range all {
		if i == 5 {
			names = append(names, "…")
			break
		}
		names = append(names, c.raw)
	}
	return "", fmt.Errorf("%w: no version matches %q (it has %s)", ErrNoVersion, strings.TrimPrefix(spec, "=="), strings.Join(names, ", "))
}

// preRe finds a pre-release in a specifier (1.0a1, 2.0rc1, 3.0.dev2).
var preRe = regexp.MustCompile(`(?i)\d(a|b|c|rc|alpha|beta|pre|preview|dev)\d*`)

// pickFile chooses the file of one version to install.
func pickFile(files []pypiFile, allowScripts bool) (pypiFile, error) {
	var sdist *pypiFile
	for i, f := range files {
		if strings.HasSuffix(f.Filename, ".whl") {
			parts := strings.Split(strings.TrimSuffix(f.Filename, ".whl"), "-")
			n := len(parts)
			if n >= 5 && parts[n-2] == "none" && parts[n-1] == "any" && strings.Contains(parts[n-3], "py3") {
				return f, nil
			}
			continue
		}
		if sdist == nil && fileVersion(f.Filename) != "" {
			sdist = &files[i]
		}
	}
	switch {
	case sdist != nil && allowScripts:
		return *sdist, nil
	case sdist != nil:
		return pypiFile{}, fmt.Errorf("%w: it publishes no pure-Python wheel, and building its source distribution runs its code at install: allow_scripts allows that", ErrUnusable)
	}
	return pypiFile{}, fmt.Errorf("%w: it publishes only platform-specific wheels; the gateway installs pure-Python wheels or source distributions", ErrUnusable)
}

// wheelScripts reads the console scripts a wheel installs
// (entry_points.txt of its .dist-info) and the version its METADATA
// declares.
func wheelScripts(whl []byte) (version string, scripts []string, err error) {
	zr, err := zip.NewReader(bytes.NewReader(whl), int64(len(whl)))
	if err != nil {
		return "", nil, fmt.Errorf("the wheel is not a zip archive: %w", err)
	}
	for _, f := range zr.File {
		dir, file, ok := strings.Cut(f.Name, "/")
		if !ok || !strings.HasSuffix(dir, ".dist-info") || strings.Contains(file, "/") {
			continue
		}
		switch file {
		case "entry_points.txt":
			lines, err := readZipLines(f)
			if err != nil {
				return "", nil, err
			}
			section := ""
			for _, l := range lines {
				l = strings.TrimSpace(l)
				switch {
				case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
					section = strings.TrimSpace(l[1 : len(l)-1])
				case section == "console_scripts" && strings.Contains(l, "="):
					name, _, _ := strings.Cut(l, "=")
					scripts = append(scripts, strings.TrimSpace(name))
				}
			}
		case "METADATA":
			lines, err := readZipLines(f)
			if err != nil {
				return "", nil, err
			}
			for _, l := range lines {
				if v, ok := strings.CutPrefix(l, "Version:"); ok {
					version = strings.TrimSpace(v)
					break
				}
				if l == "" {
					break
				}
			}
		}
	}
	slices.Sort(scripts)
	return version, scripts, nil
}

func readZipLines(f *zip.File) ([]string, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%s does not read: %w", f.Name, err)
	}
	defer rc.Close()
	var lines []string
	sc := bufio.NewScanner(rc)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s does not read: %w", f.Name, err)
	}
	return lines, nil
}
