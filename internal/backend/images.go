package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/packages"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/store"
)

// Quarantine reasons the image gate reports.
const (
	ReasonImageChanged     = "image_changed"
	ReasonSignatureInvalid = "signature_invalid"
)

// DigestPins is the part of the store the digest pin uses (store.Digests).
type DigestPins interface {
	ImageDigest(ctx context.Context, server string) (store.ImageDigest, error)
	PutImageDigest(ctx context.Context, d store.ImageDigest) error
	DeleteImageDigest(ctx context.Context, server string) error
}

var _ DigestPins = store.Digests(nil)

// Quarantiner is told of a server the gate refused. The provider itself
// is quarantined through the RefusedError it gets (provider.Refusal), which
// is also where the record in the store is kept; this hook is for anything
// else that must know.
type Quarantiner interface {
	Quarantine(ctx context.Context, server, reason, detail string) error
}

// SignatureVerifier checks an image's signature in its registry.
type SignatureVerifier interface {
	Verify(ctx context.Context, ref dockerrt.ImageRef, digest string, publicKeyFile string, creds *dockerrt.RegistryCreds) error
}

// ImageGate runs before every docker start, on the caller's context: the
// allow-list, the pull policy (pulling if needed), the signature check and
// the digest pin. It is the one place the start path asks "may this image
// run?".
type ImageGate struct {
	Engine *dockerrt.Images
	Global config.Images
	// Settings, when set, is read at every start instead of Global, so a
	// config reload's images section applies to the next start.
	Settings func() config.Images
	// Pins records and compares approved digests; nil turns pinning off.
	Pins DigestPins
	// Quarantine is told about refused images (besides the provider,
	// which quarantines itself from the RefusedError); nil: nobody else.
	Quarantine Quarantiner
	// Verifier checks signatures; nil with verify configured refuses the
	// image (a check that cannot run must not pass).
	Verifier SignatureVerifier
	Log      *slog.Logger

	mu       sync.Mutex
	state    map[string]*imageState // by server ID
	verified map[string]bool        // digest → signature checked
}

// imageState is what hangar_status and hangar_details show of a server's
// image.
type imageState struct {
	pulling  *dockerrt.Progress
	resolved dockerrt.Resolved
}

// ImageStatus is a server's image as last seen.
type ImageStatus struct {
	// Pulling is set while its image downloads.
	Pulling *dockerrt.Progress
	// Image is the normalised reference, ID the local image ID, Digest the
	// registry digest (or ID when built locally); "" before a start.
	Image, ID, Digest string
}

// Status is the image side of a server, for hangar_status/hangar_details.
func (g *ImageGate) Status(server string) ImageStatus {
	if g == nil {
		return ImageStatus{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.state[server]
	if st == nil {
		return ImageStatus{}
	}
	out := ImageStatus{Image: st.resolved.Ref.Full, ID: st.resolved.ID, Digest: st.resolved.Digest}
	if st.pulling != nil {
		p := *st.pulling
		out.Pulling = &p
	}
	return out
}

var _ provider.Preparer = (*Launcher)(nil)

// Prepare implements provider.Preparer: docker servers that create their
// own container go through the image gate; those that run an npm or PyPI
// package get its image built (or find it built).
func (l *Launcher) Prepare(ctx context.Context, s *config.Server, progress call.Progress) error {
	if s.Mode == config.ModeDocker && s.Package != nil {
		if l.Packages == nil {
			return fmt.Errorf("%s needs the package runtimes, which this gateway has not set up", packages.Describe(*s.Package))
		}
		_, err := l.Packages.Ensure(ctx, s, progress)
		return err
	}
	if l.Images == nil || s.Mode != config.ModeDocker || s.AttachContainer != "" || s.Image == "" {
		return nil
	}
	_, err := l.Images.Check(ctx, s, progress)
	return err
}

// Check makes s's image ready to run, or says why it may not. A pull is
// reported to progress (the call that caused the start) as well as to
// hangar_status.
func (g *ImageGate) Check(ctx context.Context, s *config.Server, progress call.Progress) (dockerrt.Resolved, error) {
	creds, err := serverCreds(s)
	if err != nil {
		return dockerrt.Resolved{}, err
	}
	global := g.global()
	req := dockerrt.ImageRequest{
		Image:   s.Image,
		Policy:  s.PullPolicy(global),
		Creds:   creds,
		Allowed: global.AllowedRegistries,
	}
	wanted := progress.Wanted()
	req.OnProgress = func(p dockerrt.Progress) {
		g.setPulling(s.ID, p)
		if wanted {
			progress.Send(PullProgressParams(progress.Token, p))
		}
	}
	res, err := g.Engine.Ensure(ctx, req)
	g.setPulling(s.ID, dockerrt.Progress{Done: true})
	if err != nil {
		return res, err
	}
	if v := s.VerifyPolicy(global); v != nil {
		if err := g.verify(ctx, s, res, v, creds); err != nil {
			return res, err
		}
	}
	if err := g.checkPin(ctx, s, res); err != nil {
		return res, err
	}
	g.mu.Lock()
	g.stateOf(s.ID).resolved = res
	g.mu.Unlock()
	return res, nil
}

func (g *ImageGate) global() config.Images {
	if g.Settings != nil {
		return g.Settings()
	}
	return g.Global
}

func (g *ImageGate) stateOf(server string) *imageState {
	if g.state == nil {
		g.state = map[string]*imageState{}
	}
	st := g.state[server]
	if st == nil {
		st = &imageState{}
		g.state[server] = st
	}
	return st
}

func (g *ImageGate) setPulling(server string, p dockerrt.Progress) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.stateOf(server)
	if p.Done {
		st.pulling = nil
		return
	}
	st.pulling = &p
}

// pinned reports whether s's digest is pinned: always for servers that did
// not come from the config file, on request for those that did.
func pinned(s *config.Server) bool { return s.PinDigest || s.Origin != "" }

// checkPin compares the digest the reference resolves to with the one
// recorded at approval (Approve), or at the first start when none was; a
// different one later quarantines the server until approved again.
func (g *ImageGate) checkPin(ctx context.Context, s *config.Server, res dockerrt.Resolved) error {
	if g.Pins == nil || !pinned(s) {
		return nil
	}
	rec, err := g.Pins.ImageDigest(ctx, s.ID)
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && rec.Ref != res.Ref.Full):
		// A new reference (the operator changed the image) is a new
		// approval's business; record what it resolves to now.
		return g.Pins.PutImageDigest(ctx, store.ImageDigest{Server: s.ID, Ref: res.Ref.Full, Digest: res.Digest, ApprovedAt: time.Now()})
	case err != nil:
		return fmt.Errorf("image digest of %s: %w", s.ID, err)
	}
	if slices.Contains(res.Known, rec.Digest) || rec.Digest == res.Digest {
		return nil
	}
	detail := fmt.Sprintf("image %s now resolves to %s, but %s was approved; approve the server again to accept the new image",
		res.Ref.Full, res.Digest, rec.Digest)
	return g.refuse(ctx, s, ReasonImageChanged, detail)
}

// Approve records the digest s's image resolves to on the engine now as
// the approved one; call it when an operator approves (or approves again,
// after image_changed) a server. When the image is not on the engine yet,
// the record is cleared and the first start records what it pulls.
func (g *ImageGate) Approve(ctx context.Context, s *config.Server) error {
	if g.Pins == nil || !pinned(s) || s.Image == "" {
		return nil
	}
	ref, err := dockerrt.ParseImage(s.Image)
	if err != nil {
		return err
	}
	res, err := g.Engine.Inspect(ctx, ref)
	if err != nil {
		return g.Pins.DeleteImageDigest(ctx, s.ID)
	}
	return g.Pins.PutImageDigest(ctx, store.ImageDigest{Server: s.ID, Ref: res.Ref.Full, Digest: res.Digest, ApprovedAt: time.Now()})
}

// RefusedError is an image the gate refused; Reason is the quarantine
// reason (image_changed, signature_invalid).
type RefusedError struct {
	Reason string
	Detail string
}

func (e *RefusedError) Error() string { return e.Reason + ": " + e.Detail }

// QuarantineReason implements provider.Refusal: the provider quarantines
// itself with this reason and detail (shown in hangar_details and
// hangar_quarantine, lifted by hangar_approve through Approve).
func (e *RefusedError) QuarantineReason() (reason, detail string) { return e.Reason, e.Detail }

var (
	_ provider.Refusal       = (*RefusedError)(nil)
	_ provider.ImageApprover = (*ImageGate)(nil)
)

func (g *ImageGate) refuse(ctx context.Context, s *config.Server, reason, detail string) error {
	if g.Quarantine != nil {
		if err := g.Quarantine.Quarantine(context.WithoutCancel(ctx), s.ID, reason, detail); err != nil {
			g.log().Error("quarantine failed", "mcp_server", s.ID, "reason", reason, "error", err)
		}
	}
	g.log().Warn("image refused", "mcp_server", s.ID, "reason", reason, "detail", detail)
	return &RefusedError{Reason: reason, Detail: detail}
}

func (g *ImageGate) verify(ctx context.Context, s *config.Server, res dockerrt.Resolved, v *config.Verify, creds *dockerrt.RegistryCreds) error {
	digest := res.Digest
	if digest == res.ID && res.Ref.Digest == "" {
		return g.refuse(ctx, s, ReasonSignatureInvalid,
			fmt.Sprintf("image %s has no registry digest (built or loaded locally), so its signature cannot be checked", res.Ref.Full))
	}
	key := v.PublicKey + "\x00" + digest
	g.mu.Lock()
	done := g.verified[key]
	g.mu.Unlock()
	if done {
		return nil
	}
	if g.Verifier == nil {
		return g.refuse(ctx, s, ReasonSignatureInvalid, "signature verification is configured but not available in this build")
	}
	if err := g.Verifier.Verify(ctx, res.Ref, digest, v.PublicKey, creds); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return g.refuse(ctx, s, ReasonSignatureInvalid, fmt.Sprintf("image %s@%s: %v", res.Ref.Named.Name(), digest, err))
	}
	g.mu.Lock()
	if g.verified == nil {
		g.verified = map[string]bool{}
	}
	g.verified[key] = true
	g.mu.Unlock()
	return nil
}

func (g *ImageGate) log() *slog.Logger {
	if g.Log == nil {
		return slog.Default()
	}
	return g.Log
}

// serverCreds reads a server's own registry credentials; nil when it has
// none. The error never quotes the file's content.
func serverCreds(s *config.Server) (*dockerrt.RegistryCreds, error) {
	if s.RegistryAuth == nil {
		return nil, nil
	}
	b, err := os.ReadFile(s.RegistryAuth.PasswordFile)
	if err != nil {
		return nil, fmt.Errorf("registry_auth of %s: cannot read password_file: %w", s.ID, err)
	}
	return &dockerrt.RegistryCreds{Username: s.RegistryAuth.Username, Password: strings.TrimRight(string(b), "\r\n")}, nil
}

// Available reports whether s's image is on the engine or could be pulled
// from its registry, without pulling (hangar config check).
func (g *ImageGate) Available(ctx context.Context, s *config.Server) error {
	creds, err := serverCreds(s)
	if err != nil {
		return err
	}
	return g.Engine.Check(ctx, s.Image, s.PullPolicy(g.global()), creds)
}
