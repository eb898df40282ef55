package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/provider"
)

func TestCheckOrigin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		allowed []string
		origin  string // "" sends no Origin header
		want    int
	}{
		{"no origin", nil, "", http.StatusOK},
		{"localhost", nil, "http://localhost:3000", http.StatusOK},
		{"localhost no port", nil, "http://localhost", http.StatusOK},
		{"localhost upper case", nil, "http://LOCALHOST:1", http.StatusOK},
		{"127.0.0.1", nil, "http://127.0.0.1:8080", http.StatusOK},
		{"other loopback", nil, "https://127.1.2.3", http.StatusOK},
		{"ipv6 loopback", nil, "http://[::1]:9000", http.StatusOK},
		{"foreign", nil, "https://evil.example", http.StatusForbidden},
		{"localhost lookalike", nil, "http://localhost.evil.example", http.StatusForbidden},
		{"loopback in a subdomain", nil, "http://127.0.0.1.evil.example", http.StatusForbidden},
		{"unspecified address", nil, "http://0.0.0.0:8080", http.StatusForbidden},
		{"null origin", nil, "null", http.StatusForbidden},
		{"garbage", nil, "::::", http.StatusForbidden},
		{"allowed exactly", []string{"https://app.example"}, "https://app.example", http.StatusOK},
		{"allowed list does not match", []string{"https://app.example"}, "https://app.example.evil", http.StatusForbidden},
		{"allowed other scheme", []string{"https://app.example"}, "http://app.example", http.StatusForbidden},
		{"wildcard", []string{"*"}, "https://anything.example", http.StatusOK},
		{"wildcard and null", []string{"*"}, "null", http.StatusOK},
		{"allow list keeps loopback", []string{"https://app.example"}, "http://localhost:5173", http.StatusOK},
	}
	g := gateway.New(config.Default(), provider.NewManager(nil, provider.Options{Log: quiet}), nil, nil, quiet)
	s := g.MCPServer()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := g.HTTP(s, endpoint.Options{AllowedOrigins: tt.allowed}).Handler
			for _, path := range []string{"/healthz", "/mcp"} {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				if path == "/mcp" {
					// A POST is answered at once; a GET would open an event stream.
					req = httptest.NewRequest(http.MethodPost, path, strings.NewReader("{}"))
					req.Header.Set("Content-Type", "application/json")
				}
				if tt.origin != "" {
					req.Header.Set("Origin", tt.origin)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				forbidden := rec.Code == http.StatusForbidden
				if forbidden != (tt.want == http.StatusForbidden) {
					t.Errorf("%s with Origin %q: status %d, want %s", path, tt.origin, rec.Code, http.StatusText(tt.want))
				}
				if path == "/healthz" && !forbidden && (rec.Code != http.StatusOK || rec.Body.String() != "ok\n") {
					t.Errorf("/healthz = %d %q", rec.Code, rec.Body.String())
				}
				if forbidden && !strings.Contains(rec.Body.String(), "origin") {
					t.Errorf("403 body = %q", rec.Body.String())
				}
			}
		})
	}
}

func TestMetricsEndpointOptional(t *testing.T) {
	t.Parallel()
	g := gateway.New(config.Default(), provider.NewManager(nil, provider.Options{Log: quiet}), nil, nil, quiet)
	s := g.MCPServer()
	without := g.HTTP(s, endpoint.Options{}).Handler
	rec := httptest.NewRecorder()
	without.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("/metrics without a handler = %d", rec.Code)
	}
	with := g.HTTP(s, endpoint.Options{Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("m 1\n"))
	})}).Handler
	rec = httptest.NewRecorder()
	with.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != "m 1\n" {
		t.Errorf("/metrics = %d %q", rec.Code, rec.Body.String())
	}
}
