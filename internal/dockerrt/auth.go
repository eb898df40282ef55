package dockerrt

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	cliconfig "github.com/docker/cli/cli/config"
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

// DockerCreds returns the credentials the Docker client would use for
// registry (a host as a normalised image reference names it: "docker.io",
// "127.0.0.1:5000"): config.json in dir with its auths, credsStore and
// credHelpers (helpers run as docker-credential-<name> from PATH), and
// $DOCKER_AUTH_CONFIG. No dir, or no file, is no credentials. A helper
// that fails is logged and its registry pulled with what config.json
// itself holds (often nothing), so a host's helper the gateway cannot run
// never blocks an anonymous pull.
func DockerCreds(dir, registry string, log *slog.Logger) (RegistryCreds, error) {
	if dir == "" {
		return RegistryCreds{}, nil
	}
	cf, err := cliconfig.Load(dir)
	if err != nil {
		// The decoder's messages quote no values, so they are safe to show.
		return RegistryCreds{}, fmt.Errorf("docker client config: %w", err)
	}
	ac, err := cf.GetAuthConfig(registry)
	if err != nil && log != nil {
		log.Warn("docker credential helper failed; pulling with config.json's own entry for the registry",
			"registry", registry, "file", cf.Filename, "error", err)
	}
	return RegistryCreds{Username: ac.Username, Password: ac.Password}, nil
}
