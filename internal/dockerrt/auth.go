package dockerrt

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/moby/api/types/registry"
)

// RegistryCreds are credentials for one registry.
type RegistryCreds struct {
	Username string
	Password string
}

// Empty reports whether there is nothing to send.
func (c RegistryCreds) Empty() bool { return c.Username == "" && c.Password == "" }

// String never shows the password, so a stray %v cannot leak it.
func (c RegistryCreds) String() string {
	if c.Empty() {
		return "anonymous"
	}
	return c.Username + ":[REDACTED]"
}

// encodeAuth is the X-Registry-Auth header value the engine expects.
func encodeAuth(c RegistryCreds, server string) string {
	if c.Empty() {
		return ""
	}
	b, _ := json.Marshal(registry.AuthConfig{Username: c.Username, Password: c.Password, ServerAddress: server})
	return base64.URLEncoding.EncodeToString(b)
}

// DockerConfigDir is where the Docker client keeps config.json:
// $DOCKER_CONFIG, else ~/.docker.
func DockerConfigDir() string {
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".docker")
}

// dockerConfigFile is the part of the Docker client's config.json used here.
type dockerConfigFile struct {
	Auths map[string]struct {
		Auth     string `json:"auth"`
		Username string `json:"username"`
		Password string `json:"password"`
	} `json:"auths"`
	CredsStore  string            `json:"credsStore"`
	CredHelpers map[string]string `json:"credHelpers"`
}

// LoadDockerCreds reads the `auths` of config.json in dir, by registry host
// ("docker.io", "127.0.0.1:5000"). A missing file is no credentials.
// Credential helpers are not run (the gateway image has none); that is
// logged so an empty result is not a mystery.
func LoadDockerCreds(dir string, log *slog.Logger) (map[string]RegistryCreds, error) {
	out := map[string]RegistryCreds{}
	if dir == "" {
		return out, nil
	}
	path := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("docker client config: %w", err)
	}
	var f dockerConfigFile
	if err := json.Unmarshal(b, &f); err != nil {
		// The decoder's message quotes no values, so it is safe to show.
		return nil, fmt.Errorf("docker client config %s: %w", path, err)
	}
	if (f.CredsStore != "" || len(f.CredHelpers) > 0) && log != nil {
		log.Warn("docker client config names credential helpers; hangar does not run them, only auths entries are used",
			"file", path, "creds_store", f.CredsStore, "cred_helpers", len(f.CredHelpers))
	}
	for key, a := range f.Auths {
		c := RegistryCreds{Username: a.Username, Password: a.Password}
		if a.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return nil, fmt.Errorf("docker client config %s: auths[%q].auth is not base64", path, key)
			}
			user, pass, ok := strings.Cut(string(raw), ":")
			if !ok {
				return nil, fmt.Errorf("docker client config %s: auths[%q].auth is not user:password", path, key)
			}
			c = RegistryCreds{Username: user, Password: pass}
		}
		if c.Empty() {
			continue
		}
		out[registryHost(key)] = c
	}
	return out, nil
}

// registryHost turns an auths key ("https://index.docker.io/v1/",
// "http://127.0.0.1:5000", "ghcr.io") into the host a normalised image
// reference names.
func registryHost(key string) string {
	h := key
	if i := strings.Index(h, "://"); i >= 0 {
		h = h[i+3:]
	}
	h, _, _ = strings.Cut(h, "/")
	h = strings.ToLower(h)
	switch h {
	case "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com":
		return "docker.io"
	}
	return h
}
