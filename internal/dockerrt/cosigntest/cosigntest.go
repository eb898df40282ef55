// Package cosigntest signs images the way cosign does, for tests: a
// simple-signing payload as a layer of `<repo>:sha256-<hex>.sig`, with the
// base64 ECDSA signature in the layer's annotation. It lets tests check
// signature verification without the cosign binary or the internet.
package cosigntest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

const (
	signatureAnnotation = "dev.cosignproject.cosign/signature"
	payloadMediaType    = "application/vnd.dev.cosign.simplesigning.v1+json"
)

// PublicPEM is key's public half as cosign writes cosign.pub.
func PublicPEM(t testing.TB, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// Push writes img to ref (a registry that ggcr reaches over plain HTTP on
// 127.0.0.1) and returns its manifest digest.
func Push(ref string, img v1.Image) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", err
	}
	if err := remote.Write(r, img); err != nil {
		return "", err
	}
	d, err := img.Digest()
	return d.String(), err
}

// Sign stores a signature of repo@digest made with key.
func Sign(repo, digest string, key *ecdsa.PrivateKey) error {
	return SignAs(repo, digest, digest, key)
}

// SignAs stores, as the signature of repo@digest, a valid signature of a
// payload naming claimed: the same as digest for an honest signature.
func SignAs(repo, digest, claimed string, key *ecdsa.PrivateKey) error {
	p := payload.SimpleContainerImage{
		Critical: payload.Critical{
			Identity: payload.Identity{DockerReference: repo},
			Image:    payload.Image{DockerManifestDigest: claimed},
			Type:     payload.CosignSignatureType,
		},
	}
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	sig, err := key.Sign(rand.Reader, sum[:], crypto.SHA256)
	if err != nil {
		return err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:       static.NewLayer(body, payloadMediaType),
		Annotations: map[string]string{signatureAnnotation: base64.StdEncoding.EncodeToString(sig)},
	})
	if err != nil {
		return err
	}
	tag, err := name.NewTag(repo + ":" + strings.Replace(digest, ":", "-", 1) + ".sig")
	if err != nil {
		return fmt.Errorf("signature tag: %w", err)
	}
	return remote.Write(tag, img)
}
