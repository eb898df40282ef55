package config

import (
	"fmt"
	"os"
	"strings"

	"github.com/knadh/koanf/maps"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"
)

const (
	envPrefix = "HANGAR_"
	envDelim  = "__" // single underscores are part of key names (max_concurrency)

	// parseLabel names bytes given to Parse in syntax errors.
	parseLabel = "config"
)

// NotKeys are the HANGAR_ variables that are not config keys, each with
// the one place that reads it; overrides skip them. A variable that is
// neither a config key nor listed here is refused as an unknown key, so a
// misspelt override is caught rather than ignored. The owner column is for
// readers (and the docs' test that every documented variable works).
var NotKeys = map[string]string{
	"HANGAR_LISTEN":          "hangar serve --listen",
	"HANGAR_INSTANCE":        "hangar serve --instance",
	"HANGAR_ALLOWED_ORIGINS": "hangar serve --allow-origin",
	"HANGAR_REPLICA":         "hangar serve --replica",
	"HANGAR_ADVERTISE_URL":   "hangar serve --advertise-url",
	"HANGAR_URL":             "hangar call --url",
	"HANGAR_TOKEN":           "hangar call --token",
	"HANGAR_TOKEN_FILE":      "hangar call --token-file",
	// The keystore's key (base64 of 32 bytes): package store reads it, and
	// it must never become a config value that `config check` could print.
	KeystoreKeyEnv: "store: the keystore key",
	// store.url, read by the store section (HANGAR_STORE__URL works too).
	StoreURLEnv: "store.url",
}

// KeystoreKeyEnv holds the keystore key; package store reads it (its
// store.KeystoreKeyEnv is this name).
const KeystoreKeyEnv = "HANGAR_KEYSTORE_KEY"

// CommandEnv is NotKeys as a set: the HANGAR_ variables overrides skip.
var CommandEnv = func() map[string]bool {
	m := make(map[string]bool, len(NotKeys))
	for k := range NotKeys {
		m[k] = true
	}
	return m
}()

// SecretEnvPrefix starts variables that hold secrets for hot-loaded servers
// (HANGAR_SECRET_GITHUB_TOKEN satisfies a server's GITHUB_TOKEN); they are
// not config keys, so overrides skip them.
const SecretEnvPrefix = "HANGAR_SECRET_"

// ResolvePath picks the config file: the --config flag, else $MCP_CONFIG
// (the Python hangar's variable), else ./config.yaml.
func ResolvePath(flag string) string {
	if flag != "" {
		return flag
	}
	if p := os.Getenv("MCP_CONFIG"); p != "" {
		return p
	}
	return "./config.yaml"
}

// Load reads the YAML file at path, applies HANGAR_ overrides from the
// process environment, and returns the validated config with defaults.
// Problems with the content are returned as a *ValidationError.
func Load(path string) (*Config, error) {
	cfg, err := load(path, file.Provider(path), os.Environ())
	if err != nil {
		return nil, err
	}
	cfg.Source = path
	return cfg, nil
}

// Parse is Load for YAML bytes and an explicit environment (KEY=VALUE),
// which is used both for HANGAR_ overrides and ${VAR} expansion.
func Parse(data []byte, environ []string) (*Config, error) {
	return load(parseLabel, rawbytes.Provider(data), environ)
}

func load(label string, p koanf.Provider, environ []string) (*Config, error) {
	// koanf's providers and parser read the file and the environment, and
	// its maps package merges them; there is no Koanf instance, because
	// its Raw() is a deep copy by reflection: with 1,000 servers declaring
	// 10,000 tools that was two copies, 40% of the parse and most of a
	// large gateway's start-up heap. The maps below are this load's own
	// (a reload parses afresh), so they are merged and decoded in place.
	data, err := p.ReadBytes()
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	raw, err := yamlParser{label}.Unmarshal(data)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		raw = map[string]any{} // an empty file
	}
	maps.IntfaceKeysToStrings(raw)

	origins := map[string]string{} // key path → environment variable
	serversAlias := serversKey
	if raw[aliasKey] != nil && raw[serversKey] == nil {
		serversAlias = aliasKey
	}
	envProvider := env.Provider(envDelim, env.Opt{
		Prefix:      envPrefix,
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(name, value string) (string, any) {
			if CommandEnv[name] || strings.HasPrefix(name, SecretEnvPrefix) {
				return "", nil
			}
			key := strings.ToLower(strings.TrimPrefix(name, envPrefix))
			// An empty value is how a variable is unset for one command
			// (HANGAR_DATA_DIR= hangar), so it does not override anything.
			if key == "" || value == "" {
				return "", nil
			}
			// Follow whichever spelling the file uses, so that an override
			// does not trip the "both mcp_servers and providers" check.
			for _, alias := range []string{serversKey, aliasKey} {
				if rest, ok := strings.CutPrefix(key, alias+envDelim); ok {
					key = serversAlias + envDelim + rest
				}
			}
			origins[strings.ReplaceAll(key, envDelim, ".")] = name
			return key, value
		},
	})
	overrides, err := envProvider.Read()
	if err != nil {
		return nil, fmt.Errorf("reading environment: %w", err)
	}
	// What each variable created is read before it is merged in.
	created := make(map[string]string, len(origins))
	for key := range origins {
		created[key] = createdBy(raw, strings.Split(key, "."))
	}
	maps.IntfaceKeysToStrings(overrides)
	maps.Merge(overrides, raw)

	d := &decoder{lookup: environLookup(environ)}
	cfg := d.decode(raw)
	if ve := newValidationError(annotate(d.problems, origins, created)); ve != nil {
		return nil, ve
	}
	return cfg, nil
}

// annotate names the environment variable behind a problem, since a stray
// HANGAR_ variable is otherwise hard to connect with a key path. A problem
// is blamed on a variable when it is about the variable's key, a parent of
// it, or anything inside a section that only the variable created (such as
// a server whose ID did not match the file's because env keys are
// lowercased).
// created is, by key path, what createdBy found in the file.
func annotate(problems []Problem, origins, created map[string]string) []Problem {
	keys := sortedKeys(origins)
	for i, p := range problems {
		for _, key := range keys {
			c := created[key]
			if p.Path == key || strings.HasPrefix(key, p.Path+".") ||
				c != "" && (p.Path == c || strings.HasPrefix(p.Path, c+".") || strings.HasPrefix(p.Path, c+"[")) {
				problems[i].Message += " (from environment variable " + origins[key] + ")"
				break
			}
		}
	}
	return problems
}

// createdBy returns the outermost part of the key path that the file did
// not have, or "" if the file had the whole path.
func createdBy(fromFile map[string]any, segs []string) string {
	var cur any = fromFile
	for i, seg := range segs {
		m, ok := asMap(cur)
		if !ok {
			return strings.Join(segs[:i], ".")
		}
		if cur = m[seg]; cur == nil {
			return strings.Join(segs[:i+1], ".")
		}
	}
	return ""
}

// yamlParser wraps koanf's YAML parser to turn syntax errors into problems
// labelled with the file name: "config.yaml: line 3: ...".
type yamlParser struct{ label string }

func (p yamlParser) Unmarshal(b []byte) (map[string]any, error) {
	m, err := yaml.Parser().Unmarshal(b)
	if err == nil {
		return m, nil
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var problems []Problem
	if rest, ok := strings.CutPrefix(msg, "unmarshal errors:\n"); ok {
		for _, line := range strings.Split(rest, "\n") {
			problems = append(problems, Problem{Path: p.label, Message: strings.TrimSpace(line)})
		}
	} else {
		problems = []Problem{{Path: p.label, Message: msg}}
	}
	return nil, &ValidationError{Problems: problems}
}

func (p yamlParser) Marshal(m map[string]any) ([]byte, error) {
	return yaml.Parser().Marshal(m)
}
