package dockerrt

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/client"
)

// Pull policies; the same words as the config's.
const (
	PullIfNotPresent = "if_not_present"
	PullAlways       = "always"
	PullNever        = "never"
)

// ImageAPI is the part of the engine client image handling uses.
type ImageAPI interface {
	PullAPI
	ImageInspect(ctx context.Context, image string, opts ...client.ImageInspectOption) (client.ImageInspectResult, error)
	DistributionInspect(ctx context.Context, ref string, opts client.DistributionInspectOptions) (client.DistributionInspectResult, error)
}

var _ ImageAPI = (*client.Client)(nil)

// Images makes sure a provider's image is on the engine: it applies the
// allow-list and the pull policy, pulls with the right credentials
// (single-flight, through Puller) and reports what the reference resolved
// to.
type Images struct {
	api     ImageAPI
	puller  *Puller
	allowed []string
	log     *slog.Logger
	// creds are read from the Docker client config at every pull, so a
	// `docker login` on the host needs no gateway restart.
	creds func(registry string) (RegistryCreds, error)
}

// NewImages returns an Images; allowed are registry globs (nil: all).
func NewImages(api ImageAPI, allowed []string, log *slog.Logger) *Images {
	if log == nil {
		log = slog.Default()
	}
	dir := DockerConfigDir()
	return &Images{
		api:     api,
		puller:  NewPuller(api, log),
		allowed: allowed,
		log:     log,
		creds:   func(r string) (RegistryCreds, error) { return DockerCreds(dir, r, log) },
	}
}

// SetCredsDir makes credentials come from config.json in dir (tests, and a
// --docker-config flag).
func (im *Images) SetCredsDir(dir string) {
	im.creds = func(r string) (RegistryCreds, error) { return DockerCreds(dir, r, im.log) }
}

// Puller is the single-flight puller, for progress queries.
func (im *Images) Puller() *Puller { return im.puller }

// ImageRequest is one provider's image need.
type ImageRequest struct {
	Image  string
	Policy string // Pull* constant; "" is PullIfNotPresent
	// Creds override the Docker client config for this image's registry.
	Creds *RegistryCreds
	// OnProgress receives throttled pull progress; must not block.
	OnProgress func(Progress)
	// Allowed overrides the registry globs given to NewImages (a reload
	// changes them); nil keeps those.
	Allowed []string
}

// ImageRef is a parsed, normalised image reference.
type ImageRef struct {
	Named    reference.Named
	Full     string // docker.io/library/alpine:latest, 127.0.0.1:5000/x@sha256:…
	Registry string // docker.io, 127.0.0.1:5000
	Digest   string // pinned digest in the reference, "" for a tag
}

// ParseImage normalises image the way the engine does (docker.io and
// :latest defaults).
func ParseImage(image string) (ImageRef, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return ImageRef{}, fmt.Errorf("image %q: %w", image, err)
	}
	named = reference.TagNameOnly(named)
	r := ImageRef{Named: named, Full: named.String(), Registry: reference.Domain(named)}
	if d, ok := named.(reference.Digested); ok {
		r.Digest = d.Digest().String()
	}
	return r, nil
}

// Allowed reports whether images from registry may run.
func Allowed(globs []string, registry string) bool {
	if len(globs) == 0 {
		return true
	}
	registry = strings.ToLower(registry)
	for _, g := range globs {
		if ok, _ := path.Match(g, registry); ok {
			return true
		}
	}
	return false
}

// Resolved is what an image reference stands for on the engine.
type Resolved struct {
	Ref ImageRef
	// ID is the local image ID (sha256 of its config).
	ID string
	// Digest is the registry manifest digest of Ref's repository, or ID
	// when the image never came from a registry (built locally).
	Digest string
	// Known are every digest the same content answers to (ID and all
	// repo digests of the repository), for comparisons that must not
	// depend on how the image arrived.
	Known  []string
	Pulled bool
}

// Ensure makes req.Image present according to its policy and returns what
// it resolved to. A refusal by the allow-list comes before any engine call.
func (im *Images) Ensure(ctx context.Context, req ImageRequest) (Resolved, error) {
	ref, err := ParseImage(req.Image)
	if err != nil {
		return Resolved{}, err
	}
	allowed := im.allowed
	if req.Allowed != nil {
		allowed = req.Allowed
	}
	if !Allowed(allowed, ref.Registry) {
		return Resolved{}, &ImageError{Kind: ErrImageNotAllowed, Image: req.Image, Registry: ref.Registry}
	}
	policy := req.Policy
	if policy == "" {
		policy = PullIfNotPresent
	}
	pulled := false
	if policy == PullAlways {
		if err := im.pull(ctx, ref, req); err != nil {
			return Resolved{}, err
		}
		pulled = true
	}
	res, err := im.Inspect(ctx, ref)
	if err == nil || !cerrdefs.IsNotFound(err) || pulled {
		res.Pulled = pulled
		return res, err
	}
	if policy == PullNever {
		return Resolved{}, &ImageError{Kind: ErrPullNever, Image: req.Image, Registry: ref.Registry}
	}
	if err := im.pull(ctx, ref, req); err != nil {
		return Resolved{}, err
	}
	res, err = im.Inspect(ctx, ref)
	res.Pulled = true
	return res, err
}

func (im *Images) pull(ctx context.Context, ref ImageRef, req ImageRequest) error {
	creds, err := im.credsFor(ref.Registry, req.Creds)
	if err != nil {
		return &ImageError{Kind: ErrPullFailed, Image: req.Image, Registry: ref.Registry, Err: err}
	}
	err = im.puller.Pull(ctx, PullRequest{Ref: ref.Full, Auth: encodeAuth(creds, ref.Registry), OnProgress: req.OnProgress})
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("pull of image %s from %s abandoned: %w", req.Image, ref.Registry, ctx.Err())
	}
	return classifyPull(req.Image, ref.Registry, err, creds.Password)
}

// credsFor picks the server's own credentials, else the Docker client
// config's for registry.
func (im *Images) credsFor(registry string, own *RegistryCreds) (RegistryCreds, error) {
	if own != nil {
		return *own, nil
	}
	return im.creds(registry)
}

// Inspect resolves ref on the engine; a missing image is a NotFound error.
func (im *Images) Inspect(ctx context.Context, ref ImageRef) (Resolved, error) {
	ictx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	defer cancel()
	// The engine finds docker.io images by their familiar name too, but
	// the full name always works.
	info, err := im.api.ImageInspect(ictx, ref.Full)
	if err != nil {
		return Resolved{Ref: ref}, err
	}
	res := Resolved{Ref: ref, ID: info.ID, Digest: info.ID, Known: []string{info.ID}}
	for _, rd := range info.RepoDigests {
		named, err := reference.ParseNormalizedNamed(rd)
		if err != nil || named.Name() != ref.Named.Name() {
			continue
		}
		if d, ok := named.(reference.Digested); ok {
			if res.Digest == info.ID {
				res.Digest = d.Digest().String()
			}
			res.Known = append(res.Known, d.Digest().String())
		}
	}
	if ref.Digest != "" {
		res.Digest = ref.Digest
	}
	return res, nil
}

// Check reports whether image is present or could be pulled, without
// pulling: the engine asks the registry for the manifest (distribution
// inspect). It is what `hangar config check` runs.
func (im *Images) Check(ctx context.Context, image, policy string, own *RegistryCreds) error {
	ref, err := ParseImage(image)
	if err != nil {
		return err
	}
	if !Allowed(im.allowed, ref.Registry) {
		return &ImageError{Kind: ErrImageNotAllowed, Image: image, Registry: ref.Registry}
	}
	if _, err := im.Inspect(ctx, ref); err == nil {
		return nil
	}
	if policy == PullNever {
		return &ImageError{Kind: ErrPullNever, Image: image, Registry: ref.Registry}
	}
	creds, err := im.credsFor(ref.Registry, own)
	if err != nil {
		return &ImageError{Kind: ErrPullFailed, Image: image, Registry: ref.Registry, Err: err}
	}
	dctx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	defer cancel()
	_, err = im.api.DistributionInspect(dctx, ref.Full, client.DistributionInspectOptions{EncodedRegistryAuth: encodeAuth(creds, ref.Registry)})
	if err != nil {
		return classifyPull(image, ref.Registry, err, creds.Password)
	}
	return nil
}
