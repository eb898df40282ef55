package packages

import (
	"context"
	"crypto/sha1" //nolint:gosec // npm's legacy shasum, checked only when a registry publishes nothing stronger
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/mcp-hangar/hangar/internal/redact"
)

// Errors of resolving and fetching a package; each is wrapped in an error
// that names the package (and the registry, when it is the cause).
var (
	// ErrNotFound: the registry has no such package.
	ErrNotFound = errors.New("no such package")
	// ErrNoVersion: the package has no version matching what was asked.
	ErrNoVersion = errors.New("no matching version")
	// ErrUnreachable: the registry could not be reached or answered badly.
	ErrUnreachable = errors.New("registry unreachable")
	// ErrTampered: a file's digest is not the one published or pinned.
	ErrTampered = errors.New("digest mismatch")
	// ErrUnusable: the package cannot run as a server here (no command,
	// only platform wheels, an sdist without allow_scripts).
	ErrUnusable = errors.New("cannot run as a server")
)

// Limits of what a registry may send.
const (
	maxMetadataBytes = 64 << 20
	maxFileBytes     = 512 << 20
	requestTimeout   = 30 * time.Second
)

// newHTTPClient is the client registries are asked with: retried on
// connection errors, 429 and 5xx, each attempt bounded.
func newHTTPClient() *http.Client {
	hc := retryablehttp.NewClient()
	hc.HTTPClient = cleanhttp.DefaultPooledClient()
	hc.HTTPClient.Timeout = requestTimeout
	hc.RetryMax = 2
	hc.RetryWaitMin = 200 * time.Millisecond
	hc.RetryWaitMax = time.Second
	hc.Logger = nil
	return hc.StandardClient()
}

// get fetches u (at most limit bytes); a 404 is ErrNotFound, anything
// else that is not a 200 or that does not arrive is ErrUnreachable.
func get(ctx context.Context, hc *http.Client, u, accept string, limit int64) ([]byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s is not a URL", ErrUnreachable, redact.URL(u))
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	req.Header.Set("User-Agent", "hangar (package runtime)")
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "", fmt.Errorf("%w: %s: %v", ErrUnreachable, redact.URL(u), trimURLError(err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return nil, "", ErrNotFound
	case resp.StatusCode != http.StatusOK:
		return nil, "", fmt.Errorf("%w: %s answered %s", ErrUnreachable, redact.URL(u), resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, "", fmt.Errorf("%w: reading %s: %v", ErrUnreachable, redact.URL(u), err)
	}
	if int64(len(b)) > limit {
		return nil, "", fmt.Errorf("%w: %s is larger than %d MiB", ErrUnreachable, redact.URL(u), limit>>20)
	}
	return b, resp.Header.Get("Content-Type"), nil
}

// trimURLError drops the URL retryablehttp and net/http repeat in their
// messages (the caller names it once, redacted).
func trimURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

// Digests: npm publishes SRI strings ("sha512-<base64>", several may be
// listed), PyPI a sha256 in hex; a pin is kept in the form it came in
// ("sha512-…", "sha256:<hex>").

// checkDigest verifies data against want, in either form.
func checkDigest(data []byte, want string) error {
	if hexSum, ok := strings.CutPrefix(want, "sha256:"); ok {
		got := sha256.Sum256(data)
		if !strings.EqualFold(hex.EncodeToString(got[:]), hexSum) {
			return fmt.Errorf("%w: the file's sha256 is %x, but %s was expected", ErrTampered, got, hexSum)
		}
		return nil
	}
	// SRI: check the strongest algorithm listed.
	best, bestRank := "", -1
	for _, f := range strings.Fields(want) {
		algo, _, _ := strings.Cut(f, "-")
		if r := sriRank(algo); r > bestRank {
			best, bestRank = f, r
		}
	}
	if bestRank < 0 {
		return fmt.Errorf("%w: no digest this gateway can check (%q)", ErrTampered, short(want))
	}
	algo, b64, _ := strings.Cut(best, "-")
	h := sriHash(algo)
	h.Write(data)
	got := base64.StdEncoding.EncodeToString(h.Sum(nil))
	if got != strings.TrimRight(b64, "?") && got != b64 {
		return fmt.Errorf("%w: the file's %s is %s-%s, but %s was expected", ErrTampered, algo, algo, short(got), short(best))
	}
	return nil
}

func sriRank(algo string) int {
	switch algo {
	case "sha512":
		return 3
	case "sha384":
		return 2
	case "sha256":
		return 1
	case "sha1":
		return 0
	}
	return -1
}

func sriHash(algo string) hash.Hash {
	switch algo {
	case "sha512":
		return sha512.New()
	case "sha384":
		return sha512.New384()
	case "sha256":
		return sha256.New()
	}
	return sha1.New() //nolint:gosec // see the import
}

// sha1SRI turns npm's legacy hex shasum into an SRI string.
func sha1SRI(hexSum string) string {
	b, err := hex.DecodeString(hexSum)
	if err != nil {
		return ""
	}
	return "sha1-" + base64.StdEncoding.EncodeToString(b)
}

// short keeps digests readable in messages.
func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
