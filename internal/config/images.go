package config

import (
	"path"
	"strings"

	"github.com/distribution/reference"
)

// Image pull policies (pull, images.pull).
const (
	PullIfNotPresent = "if_not_present"
	PullAlways       = "always"
	PullNever        = "never"
)

// Images is the images section: how provider images are fetched and which
// ones may run at all.
type Images struct {
	// Pull is the default pull policy of docker servers, PullIfNotPresent
	// unless set.
	Pull string
	// AllowedRegistries are globs over the registry host of a normalised
	// reference ("docker.io", "127.0.0.1:5000", "*.example.com"); an image
	// from anywhere else is refused before any pull. Default ["*"].
	AllowedRegistries []string
	// Verify, when set, makes every docker server's image need a valid
	// cosign signature before it first starts.
	Verify *Verify
}

// Verify is a signature check: the image's cosign signature must verify
// with PublicKey (a PEM file).
type Verify struct {
	PublicKey string
}

// RegistryAuth are per-server registry credentials; the password is read
// from PasswordFile at pull time so it never sits in the config or in a
// dump of it.
type RegistryAuth struct {
	Username     string
	PasswordFile string
}

// PullPolicy is the server's effective pull policy given the global one.
func (s *Server) PullPolicy(global Images) string {
	switch {
	case s.Pull != "":
		return s.Pull
	case global.Pull != "":
		return global.Pull
	}
	return PullIfNotPresent
}

// VerifyPolicy is the server's effective signature check, nil for none.
func (s *Server) VerifyPolicy(global Images) *Verify {
	if s.Verify != nil {
		return s.Verify
	}
	return global.Verify
}

// images decodes the images section.
func (d *decoder) images(s *section, im *Images) {
	s.enum("pull", &im.Pull, "The pull policy of docker servers that set none: if_not_present, always (before every start) or never.",
		PullIfNotPresent, PullAlways, PullNever)
	globs := im.AllowedRegistries
	if s.strList("allowed_registries", &globs,
		`Globs over the registry host of an image ("docker.io", "ghcr.io", "*.example.com", "127.0.0.1:*"); an image from anywhere else is refused before any pull.`) {
		im.AllowedRegistries = nil
		for i, g := range globs {
			g = strings.TrimSpace(g)
			if _, err := path.Match(g, ""); err != nil || g == "" {
				d.add(index(s.at("allowed_registries"), i), "invalid glob %q: want a registry host pattern such as \"docker.io\" or \"*.example.com\"", g)
				continue
			}
			im.AllowedRegistries = append(im.AllowedRegistries, strings.ToLower(g))
		}
		if len(globs) == 0 {
			d.add(s.at("allowed_registries"), "must not be empty (use [\"*\"] to allow every registry)")
		}
	}
	if s.has("verify") {
		im.Verify = d.verify(s.sub("verify", "Require a valid cosign signature of every docker server's image before it first starts."))
	}
	s.finish()
}

func (d *decoder) verify(s *section) *Verify {
	v := &Verify{}
	if !s.str("public_key", &v.PublicKey, "A PEM file holding the cosign public key.") || strings.TrimSpace(v.PublicKey) == "" {
		d.add(s.at("public_key"), "required: a PEM file holding the cosign public key")
	}
	s.finish()
	return v
}

func (d *decoder) registryAuth(s *section) *RegistryAuth {
	a := &RegistryAuth{}
	if !s.str("username", &a.Username, "The registry user.") || a.Username == "" {
		d.add(s.at("username"), "required")
	}
	if !s.str("password_file", &a.PasswordFile, "A file holding the password or token, read at pull time; secrets are never written in the config.") || a.PasswordFile == "" {
		d.add(s.at("password_file"), "required: a file holding the password or token (never the secret itself)")
	}
	for _, k := range []string{"password", "auth", "token"} {
		if s.has(k) {
			s.reject(k, "secrets are not written in the config; put it in a file and use password_file")
		}
	}
	s.finish()
	return a
}

// serverImage decodes a docker server's image keys: pull, registry_auth,
// pin_digest, verify.
func (d *decoder) serverImage(s *section, srv *Server) {
	if srv.Package != nil {
		for _, k := range []string{"pull", "registry_auth", "pin_digest", "verify"} {
			if s.has(k) {
				s.reject(k, "not allowed with package: the gateway builds the server's image itself (its runtime image follows images.pull)")
			}
		}
		return
	}
	if srv.Image != "" {
		if _, err := reference.ParseNormalizedNamed(srv.Image); err != nil {
			d.add(s.at("image"), "not a valid image reference %q: %v", srv.Image, err)
		}
	}
	s.enum("pull", &srv.Pull, "The pull policy; default images.pull.",
		PullIfNotPresent, PullAlways, PullNever)
	if s.has("registry_auth") {
		srv.RegistryAuth = d.registryAuth(s.sub("registry_auth", "Credentials for the image's registry, instead of the Docker client config's."))
	}
	s.boolean("pin_digest", &srv.PinDigest,
		"Quarantine the server (image_changed) when its image reference starts resolving to another digest.")
	if s.has("verify") {
		srv.Verify = d.verify(s.sub("verify", "The server's signature check, instead of images.verify."))
	}
}
