package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mcp-hangar/hangar/internal/config"
)

// defaultPollInterval is how often a watched directory is compared with
// its last state.
const defaultPollInterval = 2 * time.Second

// Filesystem finds providers in a directory, one per file, each written as
// an mcp_servers entry plus an optional name: (default: the file name
// without its extension).
type Filesystem struct {
	dir     string
	pattern string
	watch   bool
	mode    string
	log     *slog.Logger

	// Environ expands ${VAR} in the files; nil means the process
	// environment. HANGAR_ variables are never applied as overrides.
	Environ []string
	// PollInterval of Watch; 0 means 2s.
	PollInterval time.Duration
}

// NewFilesystem returns a filesystem source for src.
func NewFilesystem(src config.Source, log *slog.Logger) *Filesystem {
	if log == nil {
		log = slog.Default()
	}
	pattern := src.Pattern
	if pattern == "" {
		pattern = "*.yaml"
	}
	return &Filesystem{
		dir:     src.Path,
		pattern: pattern,
		watch:   src.Watch,
		mode:    modeOf(src),
		log:     log.With(FieldSource, SourceFilesystem, FieldPath, src.Path),
	}
}

// Type is SourceFilesystem.
func (f *Filesystem) Type() string { return SourceFilesystem }

// Mode is additive or authoritative.
func (f *Filesystem) Mode() string { return f.mode }

// files returns the matching regular files (following symlinks, as in a
// mounted ConfigMap), sorted by name.
func (f *Filesystem) files() ([]string, error) {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return nil, fmt.Errorf("read directory: %w", err)
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		if ok, _ := filepath.Match(f.pattern, name); !ok {
			continue
		}
		p := filepath.Join(f.dir, name)
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		out = append(out, p)
	}
	return out, nil // ReadDir sorts by name
}

// List decodes every matching file; a bad file is a Problem of the listing.
func (f *Filesystem) List(ctx context.Context) (Listing, error) {
	paths, err := f.files()
	if err != nil {
		return Listing{}, err
	}
	environ := f.Environ
	if environ == nil {
		environ = os.Environ()
	}
	var out Listing
	for _, p := range paths {
		if ctx.Err() != nil {
			return Listing{}, ctx.Err()
		}
		data, err := os.ReadFile(p)
		if err == nil {
			var c Candidate
			if c, err = DecodeFile(filepath.Base(p), data, environ); err == nil {
				out.Candidates = append(out.Candidates, c)
				continue
			}
		}
		out.Problems = append(out.Problems, Problem{Subject: "file " + filepath.Base(p), Err: err})
	}
	return out, nil
}

// DecodeFile decodes one provider file through the config package, so that
// a provider is validated exactly as one in config.yaml is.
func DecodeFile(fileName string, data []byte, environ []string) (Candidate, error) {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Candidate{}, errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc == nil {
		return Candidate{}, errors.New("empty file")
	}
	body, ok := doc.(map[string]any)
	if !ok {
		return Candidate{}, fmt.Errorf("must be a mapping of server keys (got %s)", yamlKind(doc))
	}
	id := strings.TrimSuffix(fileName, filepath.Ext(fileName))
	if v, set := body["name"]; set {
		s, ok := v.(string)
		if !ok || s == "" {
			return Candidate{}, errors.New("name: must be a non-empty string")
		}
		id = s
		body = maps.Clone(body)
		delete(body, "name")
	}
	if !idRe().MatchString(id) {
		return Candidate{}, fmt.Errorf("name: must match %s (got %q)", idRe(), id)
	}
	if body["mode"] == config.ModeGroup {
		return Candidate{}, errors.New("mode: group is not supported for discovered servers")
	}
	spec, err := parseServer(id, body, withoutOverrides(environ))
	if err != nil {
		return Candidate{}, err
	}
	if spec.AllowDockerSocket {
		// Handing a provider the engine is the operator's decision, made in
		// the gateway's own config, never by a file dropped into a watched
		// directory.
		return Candidate{}, errors.New("allow_docker_socket: only allowed in the gateway's own config")
	}
	spec.Origin = SourceFilesystem
	return Candidate{
		Name:        id,
		Source:      SourceFilesystem,
		Mode:        spec.Transport,
		Image:       spec.Image,
		Description: spec.Description,
		Fingerprint: contentFingerprint(data),
		Spec:        spec,
	}, nil
}

func yamlKind(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case map[any]any:
		return "a mapping with non-string keys"
	case string:
		return "a string"
	}
	return fmt.Sprintf("%T", v)
}

// parseServer validates one server entry by wrapping it in a config
// document.
//
// TODO(config): an exported config.ParseServer(id string, body map[string]any,
// environ []string) (*Server, error) would make this wrapping unnecessary.
func parseServer(id string, body map[string]any, environ []string) (*config.Server, error) {
	doc, err := yaml.Marshal(map[string]any{"mcp_servers": map[string]any{id: body}})
	if err != nil {
		return nil, err
	}
	cfg, err := config.Parse(doc, environ)
	if err != nil {
		var ve *config.ValidationError
		if !errors.As(err, &ve) {
			return nil, err
		}
		// Paths inside the wrapper mean nothing to the file's author.
		prefix := "mcp_servers." + id
		msgs := make([]string, len(ve.Problems))
		for i, p := range ve.Problems {
			p.Path = strings.TrimPrefix(strings.TrimPrefix(p.Path, prefix), ".")
			msgs[i] = p.String()
		}
		return nil, errors.New(strings.Join(msgs, "; "))
	}
	spec, ok := cfg.Servers[id]
	if !ok {
		return nil, errors.New("no server in file")
	}
	return spec, nil
}

// withoutOverrides drops HANGAR_ variables: in the gateway's own config they
// override keys, which must not reach into provider files.
func withoutOverrides(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "HANGAR_") {
			out = append(out, kv)
		}
	}
	return out
}

// fileState is what Watch compares between polls.
type fileState struct {
	size int64
	mod  int64 // UnixNano
}

func (f *Filesystem) state() (map[string]fileState, string) {
	paths, err := f.files()
	if err != nil {
		return nil, err.Error()
	}
	st := make(map[string]fileState, len(paths))
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			st[p] = fileState{size: fi.Size(), mod: fi.ModTime().UnixNano()}
		}
	}
	return st, ""
}

// Watch polls the directory when the source has watch: true, calling
// onChange when a matching file appears, changes or goes away. It returns
// at once when watching is off.
func (f *Filesystem) Watch(ctx context.Context, onChange func()) {
	if !f.watch {
		return
	}
	every := f.PollInterval
	if every <= 0 {
		every = defaultPollInterval
	}
	last, lastErr := f.state()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					f.log.Error("panic in filesystem watch", FieldError, r)
				}
			}()
			cur, curErr := f.state()
			if curErr != lastErr || !maps.Equal(cur, last) {
				last, lastErr = cur, curErr
				onChange()
			}
		}()
	}
}
