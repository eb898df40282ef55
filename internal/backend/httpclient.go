package backend

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-retryablehttp"
)

// safeMethods are the MCP requests a retry cannot duplicate the effect of:
// handshakes and listings. A tool call is never retried at this level.
var safeMethods = map[string]bool{
	"initialize": true, "notifications/initialized": true, "server/discover": true,
	"ping": true, "tools/list": true, "prompts/list": true, "resources/list": true,
}

// maxPeek bounds how much of a request body is read to decide whether it
// may be retried; a larger body is a tool call's and is not.
const maxPeek = 64 << 10

// connectClient returns the HTTP client of remote and container HTTP
// sessions: requests that are safe to repeat go through go-retryablehttp,
// everything else goes out once. Both share one connection pool.
func connectClient() *http.Client {
	plain := cleanhttp.DefaultPooledTransport()
	rc := retryablehttp.NewClient()
	rc.HTTPClient = &http.Client{Transport: plain}
	rc.RetryMax = 3
	rc.RetryWaitMin = 100 * time.Millisecond
	rc.RetryWaitMax = time.Second
	rc.Logger = nil
	return &http.Client{Transport: &safeRetry{retry: &retryablehttp.RoundTripper{Client: rc}, plain: plain}}
}

type safeRetry struct {
	retry http.RoundTripper
	plain http.RoundTripper
}

func (s *safeRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	if safeToRetry(req) {
		return s.retry.RoundTrip(req)
	}
	return s.plain.RoundTrip(req)
}

// safeToRetry reads (and restores) a POST body to see which JSON-RPC
// methods it carries; GET (the SSE stream) and DELETE (session end) are
// safe by HTTP semantics.
func safeToRetry(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodDelete:
		return true
	case http.MethodPost:
	default:
		return false
	}
	if req.Body == nil || req.Body == http.NoBody {
		return false
	}
	orig := req.Body
	body, err := io.ReadAll(io.LimitReader(orig, maxPeek+1))
	if err != nil || len(body) > maxPeek {
		// Too big to be a handshake: send it once, the bytes already read
		// in front of the rest.
		req.Body = readCloser{io.MultiReader(bytes.NewReader(body), orig), orig}
		return false
	}
	_ = orig.Close()
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return methodsSafe(body)
}

func methodsSafe(body []byte) bool {
	type msg struct {
		Method string `json:"method"`
	}
	var one msg
	if json.Unmarshal(body, &one) == nil && one.Method != "" {
		return safeMethods[one.Method]
	}
	var many []msg
	if json.Unmarshal(body, &many) != nil || len(many) == 0 {
		return false
	}
	for _, m := range many {
		if !safeMethods[m.Method] {
			return false
		}
	}
	return true
}

type readCloser struct {
	io.Reader
	io.Closer
}
