package endpoint_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcp-hangar/hangar/internal/endpoint"
)

// TestCheckHost: a loopback gateway answers loopback names and the listed
// ones on every path, 421 (and an audit entry) otherwise, /healthz
// whatever the name; a gateway on another address checks only when names
// are listed.
func TestCheckHost(t *testing.T) {
	t.Parallel()
	loop := endpoint.HostPolicy{Loopback: true}
	listed := endpoint.HostPolicy{Loopback: true, Allowed: []string{"hangar.example.com", "fd00::1"}}
	open := endpoint.HostPolicy{}
	exposedListed := endpoint.HostPolicy{Allowed: []string{"hangar.example.com"}}
	tests := []struct {
		policy endpoint.HostPolicy
		host   string
		path   string
		want   int
	}{
		{loop, "localhost", "/mcp", http.StatusOK},
		{loop, "localhost:8080", "/mcp", http.StatusOK},
		{loop, "LOCALHOST.:8080", "/mcp", http.StatusOK},
		{loop, "127.0.0.1:8080", "/metrics", http.StatusOK},
		{loop, "127.9.9.9", "/events", http.StatusOK},
		{loop, "[::1]:8080", "/ui/api/servers", http.StatusOK},
		{loop, "[::ffff:127.0.0.1]:8080", "/mcp", http.StatusOK},
		{loop, "rebind.attacker.example", "/mcp", http.StatusMisdirectedRequest},
		{loop, "rebind.attacker.example:8080", "/ui/api/refusals", http.StatusMisdirectedRequest},
		{loop, "rebind.attacker.example", "/ui/", http.StatusMisdirectedRequest},
		{loop, "rebind.attacker.example", "/metrics", http.StatusMisdirectedRequest},
		{loop, "rebind.attacker.example", "/events", http.StatusMisdirectedRequest},
		{loop, "rebind.attacker.example", "/.well-known/oauth-protected-resource", http.StatusMisdirectedRequest},
		{loop, "localhost.attacker.example", "/mcp", http.StatusMisdirectedRequest},
		{loop, "127.0.0.1.nip.io", "/mcp", http.StatusMisdirectedRequest},
		{loop, "192.0.2.2:8080", "/mcp", http.StatusMisdirectedRequest},
		{loop, "", "/mcp", http.StatusMisdirectedRequest},
		{loop, "rebind.attacker.example", "/healthz", http.StatusOK},
		{listed, "hangar.example.com:443", "/mcp", http.StatusOK},
		{listed, "[fd00::1]:8080", "/mcp", http.StatusOK},
		{listed, "[fd00:0::1]", "/mcp", http.StatusOK},
		{listed, "other.example.com", "/mcp", http.StatusMisdirectedRequest},
		{open, "anything.example", "/mcp", http.StatusOK},
		{exposedListed, "hangar.example.com", "/mcp", http.StatusOK},
		{exposedListed, "127.0.0.1:8080", "/mcp", http.StatusOK},
		{exposedListed, "rebind.attacker.example", "/mcp", http.StatusMisdirectedRequest},
	}
	for _, tt := range tests {
		t.Run(tt.host+tt.path, func(t *testing.T) {
			t.Parallel()
			refused := 0
			h := endpoint.CheckHost(tt.policy, func(*http.Request) { refused++ }, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
			r := httptest.NewRequest(http.MethodGet, "http://x"+tt.path, nil)
			r.Host = tt.host
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Errorf("Host %q %s = %d, want %d", tt.host, tt.path, w.Code, tt.want)
			}
			if wantRefused := tt.want != http.StatusOK; (refused == 1) != wantRefused {
				t.Errorf("refused (audited) %d times", refused)
			}
		})
	}
}
