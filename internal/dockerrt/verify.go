package dockerrt

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// Cosign's conventions for signatures stored in a registry.
const (
	CosignSignatureAnnotation = "dev.cosignproject.cosign/signature"
	CosignPayloadMediaType    = "application/vnd.dev.cosign.simplesigning.v1+json"
	// maxPayloadBytes bounds what is read of a signature layer: a
	// simple-signing payload is a few hundred bytes.
	maxPayloadBytes = 1 << 20
)

// ErrSignatureInvalid is any failure to find a valid signature.
var ErrSignatureInvalid = errors.New("signature invalid")

// CosignVerifier checks cosign key-based signatures: the registry holds
// them in the image `<repo>:sha256-<hex>.sig`, one layer per signature,
// each a simple-signing payload naming the image digest, with the base64
// signature over it in a layer annotation.
type CosignVerifier struct {
	// Options are extra go-containerregistry options (tests: transport).
	Options []remote.Option
}

// SignatureTag is where cosign stores the signatures of digest in repo.
func SignatureTag(repo, digest string) string {
	return repo + ":" + strings.Replace(digest, ":", "-", 1) + ".sig"
}

// Verify reports whether ref@digest carries a signature that verifies with
// the PEM public key in publicKeyFile.
func (v CosignVerifier) Verify(ctx context.Context, ref ImageRef, digest, publicKeyFile string, creds *RegistryCreds) error {
	pemBytes, err := os.ReadFile(publicKeyFile)
	if err != nil {
		return fmt.Errorf("%w: public key: %v", ErrSignatureInvalid, err)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemBytes)
	if err != nil {
		return fmt.Errorf("%w: public key %s: %v", ErrSignatureInvalid, publicKeyFile, err)
	}
	verifier, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return fmt.Errorf("%w: public key %s: %v", ErrSignatureInvalid, publicKeyFile, err)
	}

	tag, err := name.NewTag(SignatureTag(ref.Named.Name(), digest))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSignatureInvalid, err)
	}
	auth := authn.Anonymous
	if creds != nil && !creds.Empty() {
		auth = &authn.Basic{Username: creds.Username, Password: creds.Password}
	}
	opts := append([]remote.Option{remote.WithContext(ctx), remote.WithAuth(auth)}, v.Options...)
	img, err := remote.Image(tag, opts...)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) && te.StatusCode == 404 {
			return fmt.Errorf("%w: image is not signed (no %s in the registry)", ErrSignatureInvalid, tag)
		}
		return fmt.Errorf("%w: fetching %s: %v", ErrSignatureInvalid, tag, redact(err.Error(), credPassword(creds)))
	}
	m, err := img.Manifest()
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrSignatureInvalid, tag, err)
	}
	var problems []string
	for _, l := range m.Layers {
		err := verifyLayer(img, l, verifier, digest)
		if err == nil {
			return nil
		}
		problems = append(problems, err.Error())
	}
	if len(problems) == 0 {
		return fmt.Errorf("%w: %s holds no signatures", ErrSignatureInvalid, tag)
	}
	return fmt.Errorf("%w: no signature verifies with %s: %s", ErrSignatureInvalid, publicKeyFile, strings.Join(problems, "; "))
}

func credPassword(c *RegistryCreds) string {
	if c == nil {
		return ""
	}
	return c.Password
}

// verifyLayer checks one signature: the payload must verify with the key
// and name exactly the image digest being started.
func verifyLayer(img v1.Image, l v1.Descriptor, verifier signature.Verifier, digest string) error {
	sigB64, ok := l.Annotations[CosignSignatureAnnotation]
	if !ok {
		return fmt.Errorf("layer %s has no signature annotation", l.Digest)
	}
	sig, err := base64.StdEncoding.DecodeString(sigB64)
	if err != nil {
		return fmt.Errorf("layer %s: signature is not base64", l.Digest)
	}
	layer, err := img.LayerByDigest(l.Digest)
	if err != nil {
		return fmt.Errorf("layer %s: %v", l.Digest, err)
	}
	rc, err := layer.Compressed()
	if err != nil {
		return fmt.Errorf("layer %s: %v", l.Digest, err)
	}
	defer rc.Close()
	body, err := io.ReadAll(io.LimitReader(rc, maxPayloadBytes))
	if err != nil {
		return fmt.Errorf("layer %s: %v", l.Digest, err)
	}
	if err := verifier.VerifySignature(bytes.NewReader(sig), bytes.NewReader(body)); err != nil {
		return fmt.Errorf("signature in layer %s does not verify", l.Digest)
	}
	var p payload.SimpleContainerImage
	if err := json.Unmarshal(body, &p); err != nil {
		return fmt.Errorf("layer %s: payload is not simple-signing JSON", l.Digest)
	}
	if p.Critical.Type != payload.CosignSignatureType {
		return fmt.Errorf("layer %s: payload type %q is not a cosign signature", l.Digest, p.Critical.Type)
	}
	if p.Critical.Image.DockerManifestDigest != digest {
		return fmt.Errorf("signature is for %s, not %s", p.Critical.Image.DockerManifestDigest, digest)
	}
	return nil
}
