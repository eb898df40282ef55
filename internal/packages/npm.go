package packages

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	npm "github.com/aquasecurity/go-npm-version/pkg"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/redact"
)

// DefaultNPMRegistry is where npm packages come from when neither the
// package nor its runtime names a registry.
const DefaultNPMRegistry = "https://registry.npmjs.org"

// Artifact is one release of a package: the file to install and the
// digest it must have.
type Artifact struct {
	Type    string
	Name    string
	Version string
	// Integrity is the digest the file must match: npm's dist.integrity
	// (SRI, "sha512-…") or "sha256:<hex>" of a PyPI file.
	Integrity string
	URL       string // where the file is fetched from
	File      string // its file name
	// Published says Integrity came from the registry; false when the
	// registry published none and it was taken from the first download.
	Published bool
}

// packument is the part of an npm registry's package document used here.
type packument struct {
	Name     string            `json:"name"`
	DistTags map[string]string `json:"dist-tags"`
	Versions map[string]struct {
		Deprecated json.RawMessage `json:"deprecated"`
		Dist       struct {
			Tarball   string `json:"tarball"`
			Integrity string `json:"integrity"`
			Shasum    string `json:"shasum"`
		} `json:"dist"`
	} `json:"versions"`
}

// npmPackageURL is where registry serves name's document: a scoped name's
// slash is escaped, as npm does.
func npmPackageURL(registry, name string) string {
	return strings.TrimRight(registry, "/") + "/" + strings.Replace(url.PathEscape(name), "%40", "@", 1)
}

// resolveNPM reads name's document from registry and picks the version
// spec asks for: a dist-tag ("", latest, next), an exact version, or the
// highest version in a range, where the latest tag wins if the range
// holds it (as npm picks).
func resolveNPM(ctx context.Context, hc *http.Client, registry, name, spec string) (Artifact, error) {
	body, _, err := get(ctx, hc, npmPackageURL(registry, name),
		"application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8", maxMetadataBytes)
	switch {
	case errors.Is(err, ErrNotFound):
		return Artifact{}, fmt.Errorf("%w: npm package %s is not in the registry %s", ErrNotFound, name, redact.URL(registry))
	case err != nil:
		return Artifact{}, fmt.Errorf("npm registry %s: %w", redact.URL(registry), err)
	}
	var doc packument
	if err := json.Unmarshal(body, &doc); err != nil {
		return Artifact{}, fmt.Errorf("%w: npm registry %s: the document of %s does not decode: %v", ErrUnreachable, redact.URL(registry), name, err)
	}
	version, err := pickNPM(doc, spec)
	if err != nil {
		return Artifact{}, fmt.Errorf("npm package %s: %w", name, err)
	}
	d := doc.Versions[version].Dist
	integrity := d.Integrity
	if integrity == "" && d.Shasum != "" {
		integrity = sha1SRI(d.Shasum)
	}
	if d.Tarball == "" {
		return Artifact{}, fmt.Errorf("%w: npm package %s@%s has no tarball in the registry %s", ErrUnreachable, name, version, redact.URL(registry))
	}
	file := d.Tarball
	if i := strings.LastIndex(file, "/"); i >= 0 {
		file = file[i+1:]
	}
	return Artifact{Type: config.PackageNPM, Name: name, Version: version, Integrity: integrity, URL: d.Tarball, File: file,
		Published: integrity != ""}, nil
}

// pickNPM chooses the version of doc that spec asks for.
func pickNPM(doc packument, spec string) (string, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		spec = "latest"
	}
	if v, ok := doc.DistTags[spec]; ok {
		if _, has := doc.Versions[v]; has {
			return v, nil
		}
	}
	if _, ok := doc.Versions[spec]; ok {
		return spec, nil
	}
	c, err := npm.NewConstraints(spec)
	if err != nil {
		if spec == "latest" {
			return "", fmt.Errorf("%w: the registry names no latest version", ErrNoVersion)
		}
		return "", fmt.Errorf("%w: %q is neither a version, a range nor a tag of it", ErrNoVersion, spec)
	}
	if latest, ok := doc.DistTags["latest"]; ok {
		if v, err := npm.NewVersion(latest); err == nil && c.Check(v) {
			if _, has := doc.Versions[latest]; has {
				return latest, nil
			}
		}
	}
	var best npm.Version
	found := ""
	for raw := range doc.Versions {
		v, err := npm.NewVersion(raw)
		if err != nil || !c.Check(v) {
			continue
		}
		if found == "" || v.GreaterThan(best) {
			best, found = v, raw
		}
	}
	if found == "" {
		return "", fmt.Errorf("%w: no version matches %q (it has %s)", ErrNoVersion, spec, someVersions(doc))
	}
	return found, nil
}

// someVersions names the newest few versions of doc, for messages.
func someVersions(doc packument) string {
	var vs []npm.Version
	for raw := range doc.Versions {
		if v, err := npm.NewVersion(raw); err == nil {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return "no versions"
	}
	slices.SortFunc(vs, func(a, b npm.Version) int { return b.Compare(a) })
	var names []string
	for i, v := range vs {
		if i == 5 {
			names = append(names, "…")
			break
		}
		names = append(names, v.Original())
	}
	return strings.Join(names, ", ")
}

// npmManifest is what the gateway reads of a tarball's package.json.
type npmManifest struct {
	Name    string          `json:"name"`
	Version string          `json:"version"`
	Bin     json.RawMessage `json:"bin"`
}

// npmBins reads the commands a package tarball installs: package.json's
// bin (a map of name to file, or one file named after the package).
func npmBins(tgz []byte) (npmManifest, []string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return npmManifest{}, nil, fmt.Errorf("the tarball is not gzip: %w", err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return npmManifest{}, nil, errors.New("the tarball has no package.json")
		}
		if err != nil {
			return npmManifest{}, nil, fmt.Errorf("the tarball does not read: %w", err)
		}
		// package/package.json, whatever the top directory is called.
		dir, file, ok := strings.Cut(strings.TrimPrefix(h.Name, "./"), "/")
		if !ok || dir == "" || file != "package.json" {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(tr, 4<<20))
		if err != nil {
			return npmManifest{}, nil, fmt.Errorf("package.json does not read: %w", err)
		}
		var m npmManifest
		if err := json.Unmarshal(b, &m); err != nil {
			return npmManifest{}, nil, fmt.Errorf("package.json does not decode: %w", err)
		}
		var bins []string
		var one string
		var many map[string]string
		switch {
		case len(m.Bin) == 0 || string(m.Bin) == "null":
		case json.Unmarshal(m.Bin, &one) == nil:
			bins = []string{unscoped(m.Name)}
		case json.Unmarshal(m.Bin, &many) == nil:
			for k := range many {
				bins = append(bins, k)
			}
		default:
			return npmManifest{}, nil, errors.New("package.json's bin is neither a path nor a map of commands")
		}
		slices.Sort(bins)
		return m, bins, nil
	}
}

func unscoped(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		return name[i+1:]
	}
	return name
}

// pickCommand chooses what a package server runs among the commands its
// package installs: the one asked for, else the only one, else the one
// named like the package (the rules of npx and uvx).
func pickCommand(pkgType, name, version, asked string, commands []string, normalize func(string) string) (string, error) {
	what := fmt.Sprintf("%s package %s@%s", pkgType, name, version)
	if asked != "" {
		if slices.Contains(commands, asked) {
			return asked, nil
		}
		if len(commands) == 0 {
			return "", fmt.Errorf("%w: %s installs no command, so not %s", ErrUnusable, what, asked)
		}
		return "", fmt.Errorf("%w: %s has no command %s (it has %s)", ErrUnusable, what, asked, strings.Join(commands, ", "))
	}
	switch {
	case len(commands) == 1:
		return commands[0], nil
	case len(commands) == 0:
		return "", fmt.Errorf("%w: %s installs no command to run", ErrUnusable, what)
	}
	for _, c := range commands {
		if normalize(c) == normalize(unscoped(name)) {
			return c, nil
		}
	}
	return "", fmt.Errorf("%w: %s has several commands (%s): name the one to run", ErrUnusable, what, strings.Join(commands, ", "))
}
