package dockerrt

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/mcp-hangar/hangar/internal/dockerrt/cosigntest"
)

func writeKey(t *testing.T, key *ecdsa.PrivateKey) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(path, cosigntest.PublicPEM(t, key), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCosignVerify(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(registry.New(registry.Logger(quietStdLog())))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keyFile, otherFile := writeKey(t, key), writeKey(t, other)

	push := func(repo string) (ImageRef, string) {
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := ParseImage(host + "/" + repo + ":1")
		if err != nil {
			t.Fatal(err)
		}
		d, err := cosigntest.Push(ref.Full, img)
		if err != nil {
			t.Fatal(err)
		}
		return ref, d
	}

	signedRef, signedDigest := push("team/signed")
	if err := cosigntest.Sign(signedRef.Named.Name(), signedDigest, key); err != nil {
		t.Fatal(err)
	}
	unsignedRef, unsignedDigest := push("team/unsigned")
	// A signature copied from another image: valid, but for the wrong digest.
	movedRef, movedDigest := push("team/moved")
	if err := cosigntest.SignAs(movedRef.Named.Name(), movedDigest, signedDigest, key); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		ref     ImageRef
		digest  string
		key     string
		wantErr string
	}{
		{"signed", signedRef, signedDigest, keyFile, ""},
		{"unsigned", unsignedRef, unsignedDigest, keyFile, "image is not signed"},
		{"wrong key", signedRef, signedDigest, otherFile, "does not verify"},
		{"signature for another digest", movedRef, movedDigest, keyFile, "not " + movedDigest},
		{"missing key file", signedRef, signedDigest, filepath.Join(t.TempDir(), "nope.pub"), "public key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CosignVerifier{}.Verify(t.Context(), tt.ref, tt.digest, tt.key, nil)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrSignatureInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Verify: %v, want a signature error saying %q", err, tt.wantErr)
			}
		})
	}
}

func quietStdLog() *log.Logger { return log.New(io.Discard, "", 0) }
