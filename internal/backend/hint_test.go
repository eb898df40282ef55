package backend

import (
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
)

// hardened is a docker server with the hardening defaults, as config gives it.
func hardened(tune func(*config.Server)) *config.Server {
	s := &config.Server{ID: "fs", Mode: config.ModeDocker, Image: "img", ReadOnly: true, User: "65534:65534", Transport: config.TransportStdio}
	if tune != nil {
		tune(s)
	}
	return s
}

func TestHardeningHint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		server *config.Server
		exit   string
		stderr string
		want   []string // fragments the hint must hold; none means no hint
		not    []string // fragments it must not hold
	}{
		{name: "read-only root, Go", server: hardened(nil), exit: "exit 1",
			stderr: "open /state.json: read-only file system\n",
			want:   []string{"root filesystem is read-only", "mcp_servers.fs.read_only: false"}},
		{name: "read-only root, Python", server: hardened(nil), exit: "exit 1",
			stderr: "Traceback (most recent call last):\n  File \"/app/x.py\", line 3\nOSError: [Errno 30] Read-only file system: '/app/cache'\n",
			want:   []string{"mcp_servers.fs.read_only: false"}},
		{name: "read-only root, Node", server: hardened(nil), exit: "exit 1",
			stderr: "Error: EROFS: read-only file system, open '/app/data.db'\n",
			want:   []string{"read_only: false"}},
		{name: "read-only already off: no read_only hint", server: hardened(func(s *config.Server) { s.ReadOnly = false }),
			exit: "exit 1", stderr: "open /x: read-only file system\n", not: []string{"read_only"}},
		{name: "permission denied as nobody", server: hardened(nil), exit: "exit 1",
			stderr: "mkdir /home/app/.cache: permission denied\n",
			want:   []string{"unprivileged user 65534:65534", "mcp_servers.fs.user"}},
		{name: "Node EACCES", server: hardened(nil), exit: "exit 1",
			stderr: "Error: EACCES: permission denied, mkdir '/root/.npm'\n", want: []string{"mcp_servers.fs.user"}},
		{name: "permission denied as root: not the user default", server: hardened(func(s *config.Server) { s.User = "0:0" }),
			exit: "exit 1", stderr: "open /x: permission denied\n", not: []string{"user"}},
		{name: "refused by the egress proxy", server: hardened(func(s *config.Server) { s.Egress = &config.Egress{Allow: []string{"a.com"}} }),
			exit: "exit 1", stderr: "Get \"https://api.example.com/\": Forbidden\nhangar egress to api.example.com:443 refused: not in this server's egress allow-list\n",
			want: []string{"egress proxy", "mcp_servers.fs.egress.allow"}, not: []string{".network"}},
		{name: "DNS failure behind the egress proxy", server: hardened(func(s *config.Server) { s.Egress = &config.Egress{} }),
			exit: "exit 1", stderr: "dial tcp: lookup api.example.com: no such host\n",
			want: []string{"mcp_servers.fs.egress.allow"}, not: []string{"network: bridge"}},
		{name: "DNS failure without network", server: hardened(nil), exit: "exit 1",
			stderr: "dial tcp: lookup api.example.com: Temporary failure in name resolution\n",
			want:   []string{"no network", "mcp_servers.fs.network: bridge"}},
		{name: "Go no such host", server: hardened(nil), exit: "",
			stderr: `Get "https://api.example.com": dial tcp: lookup api.example.com on 127.0.0.11:53: no such host`,
			want:   []string{"mcp_servers.fs.network"}},
		{name: "Python getaddrinfo", server: hardened(nil), exit: "exit 1",
			stderr: "socket.gaierror: [Errno -3] Temporary failure in name resolution\n", want: []string{"network"}},
		{name: "Node ENOTFOUND", server: hardened(nil), exit: "exit 1",
			stderr: "Error: getaddrinfo ENOTFOUND registry.npmjs.org\n", want: []string{"mcp_servers.fs.network"}},
		{name: "unreachable", server: hardened(nil), exit: "exit 1",
			stderr: "connect: network is unreachable\n", want: []string{"mcp_servers.fs.network"}},
		{name: "HTTP provider has a network", server: hardened(func(s *config.Server) { s.Transport = config.TransportHTTP }),
			exit: "exit 1", stderr: "lookup x: no such host\n", not: []string{"network"}},
		{name: "network none spelt out", server: hardened(func(s *config.Server) { s.Network = "none"; s.Transport = config.TransportHTTP }),
			exit: "exit 1", stderr: "lookup x: no such host\n", want: []string{"mcp_servers.fs.network: bridge"}},
		{name: "DNS failure with a network: not the default", server: hardened(func(s *config.Server) { s.Network = "bridge" }),
			exit: "exit 1", stderr: "lookup x: no such host\n", not: []string{"network"}},
		{name: "out of memory by the exit", server: hardened(nil), exit: "exit 137, oom",
			want: []string{"out of memory at its limit of 512m", "mcp_servers.fs.resources.memory"}},
		{name: "out of memory by stderr, set limit", server: hardened(func(s *config.Server) { s.Resources.MemoryBytes = 1 << 30 }),
			exit: "exit 134", stderr: "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n",
			want: []string{"limit of 1g", "resources.memory"}},
		{name: "pids", server: hardened(nil), exit: "exit 1",
			stderr: "RuntimeError: can't start new thread\n", want: []string{"process limit of 256", "mcp_servers.fs.resources.pids"}},
		{name: "fork EAGAIN", server: hardened(func(s *config.Server) { s.Resources.PidsLimit = 16 }), exit: "exit 1",
			stderr: "sh: fork: retry: Resource temporarily unavailable\n", want: []string{"process limit of 16", "resources.pids"}},
		{name: "two causes at once", server: hardened(nil), exit: "exit 1",
			stderr: "open /a: read-only file system\nlookup b: no such host\n",
			want:   []string{"read_only: false", "; also: ", "network: bridge"}},
		{name: "unrelated failure", server: hardened(nil), exit: "exit 2", stderr: "panic: nil map\n"},
		{name: "clean exit 137 without oom: a kill, not memory", server: hardened(nil), exit: "exit 137"},
		{name: "not our container", server: nil, exit: "exit 1", stderr: "read-only file system"},
		{name: "hot-loaded server: key without a config path", server: hardened(func(s *config.Server) { s.Origin = config.OriginRegistry }),
			exit: "exit 1", stderr: "read-only file system", want: []string{"read_only (server fs): false"}, not: []string{"mcp_servers."}},
		{name: "group member: key without a config path", server: hardened(func(s *config.Server) { s.Weight = 1 }),
			exit: "exit 1", stderr: "read-only file system", want: []string{"read_only (server fs): false"}, not: []string{"mcp_servers."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := hardeningHint(tt.server, tt.exit, tt.stderr)
			if len(tt.want) == 0 && len(tt.not) == 0 && got != "" {
				t.Errorf("hint %q, want none", got)
			}
			if len(tt.want) > 0 && !strings.HasPrefix(got, "; hint: ") {
				t.Errorf("hint %q, want it to start with \"; hint: \"", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("hint %q, want it to contain %q", got, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("hint %q, must not contain %q", got, n)
				}
			}
		})
	}
}
