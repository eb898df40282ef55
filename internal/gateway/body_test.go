package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// countingBody is a request body of size bytes that counts what is read
// from it. It repeats a valid JSON-RPC request padded with spaces, so a
// body within the limit is a real call.
type countingBody struct {
	data []byte
	read atomic.Int64
}

func newCountingBody(size int) *countingBody {
	msg := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hangar_health","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"` + mcp.LATEST_PROTOCOL_VERSION + `",` +
		`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"}}}}`
	return &countingBody{data: []byte(msg + strings.Repeat(" ", max(size-len(msg), 0)))}
}

func (c *countingBody) Read(p []byte) (int, error) {
	off := int(c.read.Load())
	if off >= len(c.data) {
		return 0, io.EOF
	}
	n := copy(p, c.data[off:])
	c.read.Add(int64(n))
	return n, nil
}

func TestBodyLimitReadsAtMostLimitPlusOne(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	tests := []struct {
		name          string
		size          int
		contentLength bool // announce the size; else chunked (-1)
		wantStatus    int
		maxRead       int64
	}{
		{"announced over the limit: nothing read", 20 << 20, true, http.StatusRequestEntityTooLarge, 0},
		{"chunked, far over the limit", 20 << 20, false, http.StatusRequestEntityTooLarge, limit + 1},
		{"chunked, one byte over", limit + 1, false, http.StatusRequestEntityTooLarge, limit + 1},
		{"announced, exactly the limit", limit, true, http.StatusOK, limit},
		{"chunked, exactly the limit", limit, false, http.StatusOK, limit},
		{"small", 400, false, http.StatusOK, 400},
	}
	g := gateway.New(config.Default(), provider.NewManager(nil, provider.Options{Log: quiet}), nil, nil, quiet)
	h := g.HTTP(g.MCPServer(), endpoint.Options{MaxBodyBytes: limit}).Handler
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := newCountingBody(tt.size)
			req := httptest.NewRequest(http.MethodPost, "/mcp", body)
			req.ContentLength = -1
			if tt.contentLength {
				req.ContentLength = int64(tt.size)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", mcp.LATEST_PROTOCOL_VERSION)
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "hangar_health")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %.200s", rec.Code, tt.wantStatus, rec.Body.String())
			}
			if got := body.read.Load(); got > tt.maxRead {
				t.Errorf("read %d bytes of the body, want at most %d", got, tt.maxRead)
			}
			if tt.wantStatus != http.StatusRequestEntityTooLarge {
				return
			}
			var e struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code != -32600 ||
				!strings.Contains(e.Error.Message, "execution.max_request_body_bytes") {
				t.Errorf("413 body = %q, want a JSON-RPC -32600 error naming the limit's key", rec.Body.String())
			}
		})
	}
}

// A client still sending a body over the limit reads the 413, not a
// connection reset: the gateway drains what follows its answer, a bounded
// amount, before it closes. Eight at once, announced and chunked.
func TestBodyOverLimitAnswerReachesTheClient(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	g := gateway.New(config.Default(), provider.NewManager(nil, provider.Options{Log: quiet}), nil, nil, quiet)
	srv := httptest.NewServer(g.HTTP(g.MCPServer(), endpoint.Options{MaxBodyBytes: limit}).Handler)
	t.Cleanup(srv.Close)
	for _, announced := range []bool{true, false} {
		t.Run(map[bool]string{true: "content-length", false: "chunked"}[announced], func(t *testing.T) {
			t.Parallel()
			errs := make(chan error, 8)
			for range 8 {
				go func() {
					body := newCountingBody(20 << 20)
					req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/mcp", io.NopCloser(body))
					if err != nil {
						errs <- err
						return
					}
					if announced {
						req.ContentLength = int64(len(body.data))
					}
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					res, err := srv.Client().Do(req)
					if err != nil {
						errs <- err
						return
					}
					defer res.Body.Close()
					b, _ := io.ReadAll(res.Body)
					if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "execution.max_request_body_bytes") {
						errs <- fmt.Errorf("status %d: %.200s", res.StatusCode, b)
						return
					}
					errs <- nil
				}()
			}
			for range 8 {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
		})
	}
}
