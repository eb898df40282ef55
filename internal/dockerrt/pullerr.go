package dockerrt

import (
	"errors"
	"fmt"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
)

// Sentinels of image failures, for errors.Is at package boundaries.
var (
	ErrImageNotAllowed     = errors.New("image registry not allowed")
	ErrImageUnauthorized   = errors.New("registry refused access")
	ErrRegistryUnreachable = errors.New("registry unreachable")
	ErrDiskFull            = errors.New("no disk space for image")
	ErrPullNever           = errors.New("image missing and pull is never")
	ErrPullFailed          = errors.New("image pull failed")
)

// ImageError is a failed image step. Its text names the image and the
// registry and says what to do about it.
type ImageError struct {
	Kind     error // one of the sentinels above, or ErrImageNotFound
	Image    string
	Registry string
	Err      error // the engine's own words, secrets redacted
}

func (e *ImageError) Error() string {
	var s string
	switch e.Kind {
	case ErrImageNotFound:
		s = fmt.Sprintf("image %s not found in registry %s: check the repository name and tag, push the image there, or add credentials if the repository is private", e.Image, e.Registry)
	case ErrImageUnauthorized:
		s = fmt.Sprintf("registry %s refused access to image %s: add credentials for %s to the Docker client config (DOCKER_CONFIG or ~/.docker/config.json auths) or set registry_auth on the server", e.Registry, e.Image, e.Registry)
	case ErrRegistryUnreachable:
		s = fmt.Sprintf("cannot reach registry %s to pull image %s: check the engine's network, DNS and proxy, or load the image on the engine and set pull: never", e.Registry, e.Image)
	case ErrDiskFull:
		s = fmt.Sprintf("no disk space on the Docker engine to pull image %s from %s: free space (docker image prune) and retry", e.Image, e.Registry)
	case ErrPullNever:
		s = fmt.Sprintf("image %s is not present on the Docker engine and its pull policy is never, so it is not pulled from %s: load it (docker pull / docker load) or set pull: if_not_present", e.Image, e.Registry)
	case ErrImageNotAllowed:
		s = fmt.Sprintf("image %s comes from registry %s, which is not in images.allowed_registries: add the registry there or use an image from an allowed one", e.Image, e.Registry)
	default:
		s = fmt.Sprintf("pulling image %s from %s failed", e.Image, e.Registry)
	}
	if e.Err != nil {
		s += " (" + e.Err.Error() + ")"
	}
	return s
}

func (e *ImageError) Is(target error) bool { return target == e.Kind }

func (e *ImageError) Unwrap() error { return e.Err }

// classifyPull turns an engine pull failure into an ImageError. The engine
// reports most failures as text in the progress stream, so the text is
// what can be matched; errdefs classes are used when the client has them.
func classifyPull(image, registry string, err error, secrets ...string) *ImageError {
	msg := strings.ToLower(err.Error())
	kind := ErrPullFailed
	switch {
	case strings.Contains(msg, "no space left on device"):
		kind = ErrDiskFull
	// Docker Hub answers "pull access denied …, repository does not
	// exist or may require 'docker login'" for both; the engine's 404
	// class says which.
	case cerrdefs.IsNotFound(err) || containsAny(msg, "manifest unknown", "repository does not exist", "name unknown"):
		kind = ErrImageNotFound
	case cerrdefs.IsUnauthorized(err) || cerrdefs.IsPermissionDenied(err) ||
		containsAny(msg, "unauthorized", "authentication required", "no basic auth credentials", "access denied", "denied:", "incorrect username or password"):
		kind = ErrImageUnauthorized
	case strings.Contains(msg, "not found"):
		kind = ErrImageNotFound
	case containsAny(msg, "dial tcp", "connection refused", "no such host", "i/o timeout", "network is unreachable",
		"tls handshake timeout", "connection reset", "server misbehaving", "http response to https client", "timeout exceeded"):
		kind = ErrRegistryUnreachable
	}
	return &ImageError{Kind: kind, Image: image, Registry: registry, Err: errors.New(redact(err.Error(), secrets...))}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// redact removes secrets from text that may end in a log or an answer.
func redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "[REDACTED]")
		}
	}
	return s
}
