// Package packages runs npm and PyPI packages as containers: the package
// runtimes. A server whose spec carries a config.Package (from the config
// file's package:, an installed `npx …`/`uvx …` line that
// internal/clientconfig maps with ParseLine, or a hot-loaded registry
// entry's npm or pypi package) is resolved once to an exact version and
// that version's digest (npm's dist.integrity, PyPI's sha256), which is
// pinned (store.PackagePins); the file is fetched, checked against the
// digest, and installed into an image built through the Engine API from
// the runtime image of the server's runner (config.RuntimeFor: node for
// npx, uv and Python for uvx; runtimes.<runner> overrides). Every later
// start runs that image and needs no registry. A version range is
// resolved again only when an admin asks (Update).
//
// In the data flow it sits under internal/backend, whose Launcher asks
// Ensure for the image in its Prepare step (the provider's start, so a
// failure is a start_failed with the reason) and runs it hardened like any
// container; internal/manage builds at mcp/install (a failure is the
// install's diagnostic), updates at mcp/server/restart with update, and
// releases the image at uninstall, as internal/registry does at
// hangar_unload. The build itself is dockerrt.Runtime.Commit: one
// container, removed whatever happens, and a tag only on success.
package packages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	pep440 "github.com/aquasecurity/go-pep440-version"
	cerrdefs "github.com/containerd/errdefs"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/redact"
	"github.com/mcp-hangar/hangar/internal/store"
)

// Engine is what the Builder needs of the Docker runtime.
type Engine interface {
	Commit(ctx context.Context, spec dockerrt.CommitSpec) (string, error)
	RemoveImage(ctx context.Context, ref string) error
	InspectImage(ctx context.Context, image string) (dockerrt.ImageInfo, error)
	// Images lists the instance's images carrying the labels.
	Images(ctx context.Context, labels ...string) ([]dockerrt.ImageInfo, error)
}

var _ Engine = (*dockerrt.Runtime)(nil)

// RuntimeImages makes a runtime image present: the allow-list of
// registries and the pull policy (dockerrt.Images).
type RuntimeImages interface {
	Ensure(ctx context.Context, req dockerrt.ImageRequest) (dockerrt.Resolved, error)
}

var _ RuntimeImages = (*dockerrt.Images)(nil)

// Settings are the config the Builder reads at each build, so that a
// reload applies to the next one.
type Settings struct {
	Runtimes map[string]config.Runtime
	Images   config.Images
}

// Image is a package server's built image.
type Image struct {
	Ref       string // the tag to run
	ID        string
	Version   string // the exact version installed
	Integrity string // its digest
	Runtime   string // the runtime image it was built on, as configured
	// Env is the runtime's env, which the server gets too.
	Env map[string]string
	// Built says this call built it (false: it was there).
	Built bool
}

// Builder resolves, pins, builds and releases package images.
type Builder struct {
	Engine Engine
	Images RuntimeImages
	// Pins keeps the pins of servers from the config file and installs
	// (hot-loaded servers' pins live in memory: they are ephemeral).
	Pins store.PackagePins
	// Settings returns the current runtimes and images sections.
	Settings func() Settings
	// Owner is the gateway instance: its images are its own.
	Owner string
	HTTP  *http.Client
	Log   *slog.Logger

	// building is held (shared) by every build and (alone) by Sweep, so
	// that an image committed and not yet pinned is never swept.
	building sync.RWMutex
	mu       sync.Mutex
	locks    map[string]*sync.Mutex
	ready    map[string]readyImage
	memory   map[string]store.PackagePin // pins of hot-loaded servers
}

type readyImage struct {
	key string // what the image was checked for (readyKey)
	img Image
}

// New returns a Builder.
func New(engine Engine, images RuntimeImages, pins store.PackagePins, owner string, settings func() Settings, log *slog.Logger) *Builder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Builder{Engine: engine, Images: images, Pins: pins, Owner: owner, Settings: settings, HTTP: newHTTPClient(), Log: log}
}

// lock serializes the builds of one server.
func (b *Builder) lock(server string) func() {
	b.mu.Lock()
	if b.locks == nil {
		b.locks = map[string]*sync.Mutex{}
	}
	l := b.locks[server]
	if l == nil {
		l = &sync.Mutex{}
		b.locks[server] = l
	}
	b.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// persisted reports whether s's pin belongs in the store.
func persisted(s *config.Server) bool { return s.Origin != config.OriginRegistry }

func (b *Builder) pinOf(ctx context.Context, s *config.Server) (store.PackagePin, bool, error) {
	if !persisted(s) || b.Pins == nil {
		b.mu.Lock()
		p, ok := b.memory[s.ID]
		b.mu.Unlock()
		return p, ok, nil
	}
	p, err := b.Pins.PackagePin(ctx, s.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.PackagePin{}, false, nil
	case err != nil:
		return store.PackagePin{}, false, fmt.Errorf("package pin of %s: %w", s.ID, err)
	}
	return p, true, nil
}

func (b *Builder) putPin(ctx context.Context, s *config.Server, p store.PackagePin) error {
	if !persisted(s) || b.Pins == nil {
		b.mu.Lock()
		if b.memory == nil {
			b.memory = map[string]store.PackagePin{}
		}
		b.memory[s.ID] = p
		b.mu.Unlock()
		return nil
	}
	return b.Pins.PutPackagePin(ctx, p)
}

// pinFits reports whether pin was made for what pkg asks for now.
func pinFits(pin store.PackagePin, pkg config.Package) bool {
	return pin.Type == pkg.Type && pin.Name == pkg.Name && pin.Spec == pkg.Version && pin.Integrity != ""
}

// Describe names what a package server runs, for messages.
func Describe(pkg config.Package) string {
	_, rest, _ := strings.Cut(pkg.String(), ":")
	return pkg.Type + " package " + rest
}

// Ensure returns the image s runs, building it when there is none: from
// s's pin when it has one (the pinned version, its file checked against
// the pinned digest), else from what its version range resolves to now,
// which is then pinned. With a pin and the image present it asks no
// registry. Steps are reported to progress.
func (b *Builder) Ensure(ctx context.Context, s *config.Server, progress call.Progress) (Image, error) {
	return b.ensure(ctx, s, progress, false)
}

// Update resolves s's version range again and builds what it resolves to
// now, replacing the pin (and releasing the old image when nothing else
// uses it): what an admin asks for with mcp/server/restart's update. The
// old pin stays when anything fails.
func (b *Builder) Update(ctx context.Context, s *config.Server, progress call.Progress) (from string, img Image, err error) {
	if s.Package == nil {
		return "", Image{}, fmt.Errorf("%s runs no npm or PyPI package: there is nothing to update", s.ID)
	}
	old, had, err := b.pinOf(ctx, s)
	if err != nil {
		return "", Image{}, err
	}
	img, err = b.ensure(ctx, s, progress, true)
	if err != nil {
		return "", Image{}, err
	}
	if had {
		from = old.Version
	}
	return from, img, nil
}

func (b *Builder) ensure(ctx context.Context, s *config.Server, progress call.Progress, update bool) (Image, error) {
	if s.Package == nil {
		return Image{}, fmt.Errorf("%s runs no npm or PyPI package", s.ID)
	}
	pkg := *s.Package
	if pkg.Runner == "" {
		pkg.Runner = config.DefaultRunner(pkg.Type)
	}
	defer b.lock(s.ID)()
	b.building.RLock()
	defer b.building.RUnlock()
	set := b.settings()
	rt, ok := config.RuntimeFor(set.Runtimes, pkg.Runner)
	if !ok {
		return Image{}, fmt.Errorf("%s: runner %s has no runtime image: set runtimes.%s.image", Describe(pkg), pkg.Runner, pkg.Runner)
	}
	// A start from a built image asks nothing of the runtime image (it
	// may have moved, or be gone) nor of any registry: the image is
	// named by what built it, the pin and the runtime as configured.
	key := readyKey(pkg, rt)
	if !update {
		b.mu.Lock()
		r, ok := b.ready[s.ID]
		b.mu.Unlock()
		if ok && r.key == key {
			if _, err := b.Engine.InspectImage(ctx, r.img.Ref); err == nil {
				r.img.Built = false
				return r.img, nil
			}
		}
	}
	pin, hadPin, err := b.pinOf(ctx, s)
	if err != nil {
		return Image{}, err
	}
	havePin := hadPin && pinFits(pin, pkg) && !update
	if havePin {
		tag := imageTag(b.Owner, rt.Image, pkg, pin.Version, pin.Integrity)
		if info, err := b.Engine.InspectImage(ctx, tag); err == nil && info.Labels[LabelPackageDigest] == pin.Integrity {
			img := Image{Ref: tag, ID: info.ID, Version: pin.Version, Integrity: pin.Integrity, Runtime: rt.Image, Env: maps.Clone(rt.Env)}
			if old := pin.Image; old != tag {
				// Built again on another runtime image: the pin names it now.
				pin.Image = tag
				if err := b.putPin(ctx, s, pin); err != nil {
					return Image{}, fmt.Errorf("%s: keep its pin: %w", Describe(pkg), err)
				}
				if old != "" {
					b.releaseImage(ctx, old, s.ID)
				}
			}
			b.setReady(s.ID, key, img)
			return img, nil
		}
	}

	// A build: the runtime image must be there (or pulled, under the
	// images section's policy and allow-list).
	resolved, err := b.Images.Ensure(ctx, dockerrt.ImageRequest{Image: rt.Image, Policy: set.Images.Pull, Allowed: set.Images.AllowedRegistries})
	if err != nil {
		return Image{}, fmt.Errorf("%s: runner %s's runtime image %s: %w", Describe(pkg), pkg.Runner, rt.Image, err)
	}
	base, err := b.Engine.InspectImage(ctx, resolved.ID)
	if err != nil {
		return Image{}, fmt.Errorf("%s: runtime image %s: %w", Describe(pkg), rt.Image, err)
	}
	p := &plan{pkg: pkg, base: base, runtime: rt.Image, env: maps.Clone(rt.Env)}
	if p.env == nil {
		p.env = map[string]string{}
	}
	p.registry = registryFor(pkg, rt.Env)
	registryEnv(pkg.Type, p.registry, p.env)

	step(progress, 1, "resolving "+Describe(pkg)+" in "+redact.URL(p.registry))
	spec := pkg.Version
	if havePin {
		spec = exactSpec(pkg.Type, pin.Version)
	}
	art, err := b.resolve(ctx, pkg, p.registry, spec)
	if err != nil {
		return Image{}, err
	}
	want := art.Integrity
	if havePin {
		if art.Published && art.Integrity != pin.Integrity {
			return Image{}, fmt.Errorf("%s package %s@%s: %w: the registry now publishes %s for it, but %s was pinned when it was first installed",
				pkg.Type, pkg.Name, pin.Version, ErrTampered, short(art.Integrity), short(pin.Integrity))
		}
		want = pin.Integrity
	}
	step(progress, 2, fmt.Sprintf("fetching %s %s@%s", pkg.Type, pkg.Name, art.Version))
	data, _, err := get(ctx, b.HTTP, art.URL, "", maxFileBytes)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			err = fmt.Errorf("%w: %s is gone from the registry", ErrUnreachable, redact.URL(art.URL))
		}
		return Image{}, fmt.Errorf("%s package %s@%s: %w", pkg.Type, pkg.Name, art.Version, err)
	}
	if want == "" {
		// The registry published no digest: the first download is pinned,
		// and every later install must match it.
		want = "sha256:" + sha256Hex(data)
		b.Log.Warn("the registry publishes no digest for a package; pinning the first download's", "package", pkg.Name, "version", art.Version)
	}
	if err := checkDigest(data, want); err != nil {
		what := "the digest the registry published"
		if havePin {
			what = "the digest pinned when it was first installed"
		}
		return Image{}, fmt.Errorf("%s package %s@%s (%s): %w; refusing to install a file that does not match %s",
			pkg.Type, pkg.Name, art.Version, art.File, err, what)
	}
	art.Integrity = want
	p.art, p.data = art, data
	if err := p.inspect(); err != nil {
		return Image{}, err
	}
	p.tag = imageTag(b.Owner, rt.Image, pkg, art.Version, art.Integrity)
	img := Image{Ref: p.tag, Version: art.Version, Integrity: art.Integrity, Runtime: rt.Image, Env: maps.Clone(rt.Env)}
	// One build of a tag at a time: servers asking for the same release
	// share the first one's image.
	unlockTag := b.lock("image\x00" + p.tag)
	defer unlockTag()
	if info, err := b.Engine.InspectImage(ctx, p.tag); err == nil {
		img.ID = info.ID // built before (another server, an earlier pin)
	} else if !cerrdefs.IsNotFound(err) {
		return Image{}, fmt.Errorf("%s: inspect %s: %w", Describe(pkg), p.tag, err)
	} else {
		step(progress, 3, fmt.Sprintf("installing %s %s@%s into an image", pkg.Type, pkg.Name, art.Version))
		spec, err := p.commitSpec(s.ID)
		if err != nil {
			return Image{}, fmt.Errorf("%s package %s@%s: %w", pkg.Type, pkg.Name, art.Version, err)
		}
		began := time.Now()
		id, err := b.Engine.Commit(ctx, spec)
		if err != nil {
			return Image{}, fmt.Errorf("installing %s package %s@%s on %s failed: %w", pkg.Type, pkg.Name, art.Version, rt.Image, err)
		}
		img.ID, img.Built = id, true
		b.Log.Info("package image built", "mcp_server", s.ID, "package", pkg.Name, "version", art.Version,
			"image", p.tag, "took_ms", time.Since(began).Milliseconds())
	}
	newPin := store.PackagePin{Server: s.ID, Type: pkg.Type, Name: pkg.Name, Spec: pkg.Version, Version: art.Version,
		Integrity: art.Integrity, File: art.URL, Image: img.Ref, ResolvedAt: time.Now().UTC()}
	if havePin {
		newPin.ResolvedAt = pin.ResolvedAt
	}
	if err := b.putPin(ctx, s, newPin); err != nil {
		return Image{}, fmt.Errorf("%s: keep its pin: %w", Describe(pkg), err)
	}
	if hadPin && pin.Image != "" && pin.Image != img.Ref {
		// What the server ran before (an update, a re-install asking for
		// another version) goes unless another server runs it; one whose
		// container still runs it goes at the next Sweep.
		b.releaseImage(ctx, pin.Image, s.ID)
	}
	b.setReady(s.ID, key, img)
	return img, nil
}

// readyKey is what an image checked in this run was checked for.
func readyKey(pkg config.Package, rt config.Runtime) string {
	return fmt.Sprintf("%+v|%s", pkg, rt.Image)
}

// Ready is the image Ensure last found or built for s in this run, with
// no engine call: what Launch runs after Prepare; ok is false when s
// asks for something else now (or was never prepared).
func (b *Builder) Ready(s *config.Server) (Image, bool) {
	if s.Package == nil {
		return Image{}, false
	}
	pkg := *s.Package
	if pkg.Runner == "" {
		pkg.Runner = config.DefaultRunner(pkg.Type)
	}
	rt, _ := config.RuntimeFor(b.settings().Runtimes, pkg.Runner)
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.ready[s.ID]
	if !ok || r.key != readyKey(pkg, rt) {
		return Image{}, false
	}
	r.img.Built = false
	return r.img, true
}

func (b *Builder) setReady(server, key string, img Image) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ready == nil {
		b.ready = map[string]readyImage{}
	}
	b.ready[server] = readyImage{key: key, img: img}
}

func (b *Builder) settings() Settings {
	if b.Settings == nil {
		return Settings{Images: config.Default().Images}
	}
	return b.Settings()
}

// exactSpec asks for exactly version.
func exactSpec(pkgType, version string) string {
	if pkgType == config.PackagePyPI {
		return "==" + version
	}
	return version
}

// resolve asks the registry what spec of pkg is now.
func (b *Builder) resolve(ctx context.Context, pkg config.Package, registry, spec string) (Artifact, error) {
	switch pkg.Type {
	case config.PackageNPM:
		return resolveNPM(ctx, b.HTTP, registry, pkg.Name, spec)
	case config.PackagePyPI:
		return resolvePyPI(ctx, b.HTTP, registry, pkg.Name, spec, pkg.AllowScripts)
	}
	return Artifact{}, fmt.Errorf("package type %q is not npm or pypi", pkg.Type)
}

// inspect reads what the file installs and picks the command to run.
func (p *plan) inspect() error {
	what := fmt.Sprintf("%s package %s@%s", p.pkg.Type, p.pkg.Name, p.art.Version)
	switch p.pkg.Type {
	case config.PackageNPM:
		m, bins, err := npmBins(p.data)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrUnusable, what, err)
		}
		if m.Version != "" && m.Version != p.art.Version {
			return fmt.Errorf("%s: %w: the tarball holds version %s", what, ErrTampered, m.Version)
		}
		p.command, err = pickCommand(p.pkg.Type, p.pkg.Name, p.art.Version, p.pkg.Command, bins, strings.ToLower)
		return err
	case config.PackagePyPI:
		if !strings.HasSuffix(p.art.File, ".whl") {
			// A source distribution declares its commands only once built.
			if p.pkg.Module == "" {
				p.command = p.pkg.Command
				if p.command == "" {
					p.command = p.pkg.Name
				}
			}
			return nil
		}
		version, scripts, err := wheelScripts(p.data)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrUnusable, what, err)
		}
		if version != "" && NormalizeVersion(version) != NormalizeVersion(p.art.Version) {
			return fmt.Errorf("%s: %w: the wheel holds version %s", what, ErrTampered, version)
		}
		if p.pkg.Module != "" {
			return nil
		}
		p.command, err = pickCommand(p.pkg.Type, p.pkg.Name, p.art.Version, p.pkg.Command, scripts, NormalizePyPI)
		return err
	}
	return nil
}

// Release forgets server's pin and removes its image unless another
// server's pin still names it (uninstall, hangar_unload).
func (b *Builder) Release(ctx context.Context, s *config.Server) {
	if s == nil || s.Package == nil {
		return
	}
	defer b.lock(s.ID)()
	pin, ok, err := b.pinOf(ctx, s)
	if err != nil {
		b.Log.Warn("package pin not read at release", "mcp_server", s.ID, "error", err)
		return
	}
	b.mu.Lock()
	delete(b.ready, s.ID)
	delete(b.memory, s.ID)
	b.mu.Unlock()
	if persisted(s) && b.Pins != nil {
		if err := b.Pins.DeletePackagePin(ctx, s.ID); err != nil {
			b.Log.Warn("package pin not deleted", "mcp_server", s.ID, "error", err)
		}
	}
	if ok && pin.Image != "" {
		b.releaseImage(ctx, pin.Image, s.ID)
	}
}

// releaseImage removes ref unless a pin other than server's names it.
func (b *Builder) releaseImage(ctx context.Context, ref, server string) {
	if users := b.users(ctx, ref, server); len(users) > 0 {
		b.Log.Info("package image kept: other servers use it", "image", ref, "servers", users)
		return
	}
	if err := b.Engine.RemoveImage(ctx, ref); err != nil {
		b.Log.Warn("package image not removed", "image", ref, "error", err)
		return
	}
	b.Log.Info("package image removed", "image", ref, "mcp_server", server)
}

// users are the servers other than server whose pin names ref.
func (b *Builder) users(ctx context.Context, ref, server string) []string {
	var out []string
	b.mu.Lock()
	for id, p := range b.memory {
		if id != server && p.Image == ref {
			out = append(out, id)
		}
	}
	b.mu.Unlock()
	if b.Pins == nil {
		return out
	}
	pins, err := b.Pins.PackagePins(ctx)
	if err != nil {
		// Unknown: keeping an image is the safe side.
		return append(out, "(the store could not be read)")
	}
	for _, p := range pins {
		if p.Server != server && p.Image == ref {
			out = append(out, p.Server)
		}
	}
	return out
}

// Sweep removes this instance's package images that no pin names: those
// left when a removal failed (a container still ran the old release at an
// update) or when the gateway stopped between a build and its pin. The
// gateway sweeps at start-up and after an update's restart.
func (b *Builder) Sweep(ctx context.Context) (int, error) {
	b.building.Lock()
	defer b.building.Unlock()
	images, err := b.Engine.Images(ctx, LabelPackageType)
	if err != nil {
		return 0, err
	}
	named := map[string]bool{}
	b.mu.Lock()
	for _, p := range b.memory {
		named[p.Image] = true
	}
	b.mu.Unlock()
	if b.Pins != nil {
		pins, err := b.Pins.PackagePins(ctx)
		if err != nil {
			return 0, fmt.Errorf("package pins: %w", err)
		}
		for _, p := range pins {
			named[p.Image] = true
		}
	}
	n := 0
	for _, im := range images {
		for _, tag := range im.Tags {
			if named[tag] || !strings.HasPrefix(tag, "hangar-pkg/") {
				continue
			}
			if err := b.Engine.RemoveImage(ctx, tag); err != nil {
				b.Log.Info("package image not swept", "image", tag, "error", err)
				continue
			}
			b.Log.Info("package image swept: no server runs it", "image", tag)
			n++
		}
	}
	return n, nil
}

// Pin is s's pin, if it has one: what hangar_details and mcp/server/details
// show of a package server.
func (b *Builder) Pin(ctx context.Context, s *config.Server) (store.PackagePin, bool) {
	if s == nil || s.Package == nil {
		return store.PackagePin{}, false
	}
	p, ok, err := b.pinOf(ctx, s)
	if err != nil || !ok || !pinFits(p, *s.Package) {
		return store.PackagePin{}, false
	}
	return p, true
}

// RunSpec is s as it runs from img: the image, and the runtime's env
// under the server's own (which wins).
func RunSpec(s *config.Server, img Image) *config.Server {
	c := *s
	c.Image = img.Ref
	env := map[string]string{"HOME": "/tmp"}
	maps.Copy(env, img.Env)
	maps.Copy(env, s.Env)
	c.Env = env
	return &c
}

// step reports step n of the 3 of a build to the caller that caused it.
func step(p call.Progress, n int, msg string) {
	if p.Wanted() {
		p.Send(map[string]any{"progressToken": p.Token, "progress": n, "total": 3, "message": msg})
	}
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// NormalizeVersion is a PyPI version as PEP 440 normalizes it (1.0-beta1 →
// 1.0b1), s itself when it does not parse.
func NormalizeVersion(s string) string {
	if v, err := pep440.Parse(s); err == nil {
		return v.String()
	}
	return s
}
