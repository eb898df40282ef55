package discovery

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
)

func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeFile(t *testing.T) {
	t.Parallel()
	env := []string{"TOKEN=s3cret", "HANGAR_MCP_SERVERS__WEATHER__ENDPOINT=http://evil"}
	cases := []struct {
		name, file, body string
		want             func(t *testing.T, c Candidate)
		wantErr          string
	}{
		{
			name: "remote with name", file: "w.yaml",
			body: "name: weather\nmode: remote\nendpoint: http://weather:8080/mcp\nheaders:\n  Authorization: Bearer ${TOKEN}\ndescription: Weather\n",
			want: func(t *testing.T, c Candidate) {
				check(t, "name", c.Name, "weather")
				check(t, "source", c.Source, "filesystem")
				check(t, "mode", c.Mode, "http")
				check(t, "spec.id", c.Spec.ID, "weather")
				check(t, "spec.mode", c.Spec.Mode, config.ModeRemote)
				check(t, "endpoint (no HANGAR_ override)", c.Spec.Endpoint, "http://weather:8080/mcp")
				check(t, "header expanded", c.Spec.Headers["Authorization"], "Bearer s3cret")
				check(t, "origin", c.Spec.Origin, "filesystem")
				check(t, "description", c.Description, "Weather")
				if c.Spec.IdleTTL != 300*time.Second {
					t.Errorf("defaults not applied: %+v", c.Spec)
				}
			},
		},
		{
			name: "docker named by file", file: "math.yml",
			body: "mode: container\nimage: mcp-hangar/math:dev\nidle_ttl_s: 60\n",
			want: func(t *testing.T, c Candidate) {
				check(t, "name", c.Name, "math")
				check(t, "spec.mode", c.Spec.Mode, config.ModeDocker)
				check(t, "image", c.Image, "mcp-hangar/math:dev")
				check(t, "transport", c.Mode, "stdio")
				if c.Spec.IdleTTL != time.Minute || !c.Spec.ReadOnly || c.Spec.User != "65534:65534" {
					t.Errorf("spec %+v", c.Spec)
				}
			},
		},
		{name: "unknown key", file: "a.yaml", body: "mode: remote\nendpoint: http://x/mcp\nendpont: typo\n", wantErr: "endpont: unknown"},
		{name: "validation like config", file: "a.yaml", body: "mode: docker\nimage: x\nnetwork: host\n", wantErr: "network: host networking is not allowed"},
		{name: "missing mode", file: "a.yaml", body: "image: x\n", wantErr: "mode: required"},
		{name: "syntax", file: "a.yaml", body: "mode: [remote\n", wantErr: "line"},
		{name: "empty", file: "a.yaml", body: "", wantErr: "empty file"},
		{name: "not a mapping", file: "a.yaml", body: "- a\n- b\n", wantErr: "must be a mapping of server keys (got a list)"},
		{name: "bad name", file: "a.yaml", body: "name: -x\nmode: remote\nendpoint: http://x/mcp\n", wantErr: `name: must match`},
		{name: "name not a string", file: "a.yaml", body: "name: [x]\nmode: remote\n", wantErr: "name: must be a non-empty string"},
		{name: "bad file name", file: "my server.yaml", body: "mode: remote\nendpoint: http://x/mcp\n", wantErr: `name: must match`},
		{name: "group", file: "g.yaml", body: "mode: group\nmembers: []\n", wantErr: "mode: group is not supported"},
		{name: "docker socket allowed by a dropped file", file: "s.yaml",
			body:    "mode: docker\nimage: img\nvolumes: [/var/run/docker.sock:/var/run/docker.sock]\nallow_docker_socket: true\n",
			wantErr: "allow_docker_socket: only allowed in the gateway's own config"},
		{name: "unset variable", file: "a.yaml", body: "mode: subprocess\ncommand: [x]\nenv:\n  A: ${NOPE}\n", wantErr: "env.A: environment variable NOPE is not set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := DecodeFile(tc.file, []byte(tc.body), env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v; want it to contain %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "mcp_servers") {
					t.Errorf("err %q names the wrapper document", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want(t, c)
		})
	}
}

func TestDecodeFileFingerprint(t *testing.T) {
	t.Parallel()
	a, _ := DecodeFile("a.yaml", []byte("mode: remote\nendpoint: http://x/mcp\n"), nil)
	b, _ := DecodeFile("b.yaml", []byte("mode: remote\nendpoint: http://x/mcp\n"), nil)
	c, _ := DecodeFile("a.yaml", []byte("mode: remote\nendpoint: http://y/mcp\n"), nil)
	if a.Fingerprint != b.Fingerprint || a.Fingerprint == c.Fingerprint || len(a.Fingerprint) != fingerprintLen {
		t.Errorf("fingerprints %q %q %q", a.Fingerprint, b.Fingerprint, c.Fingerprint)
	}
}

func TestFilesystemList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "good.yaml", "mode: remote\nendpoint: http://good/mcp\n")
	writeFile(t, dir, "bad.yaml", "mode: remote\n")
	writeFile(t, dir, "other.json", "{}")
	writeFile(t, dir, ".hidden.yaml", "mode: remote\nendpoint: http://h/mcp\n")
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "good.yaml"), filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}

	f := NewFilesystem(config.Source{Type: "filesystem", Path: dir}, quietLog())
	f.Environ = []string{}
	if f.Type() != "filesystem" || f.Mode() != "additive" {
		t.Errorf("type %q mode %q", f.Type(), f.Mode())
	}
	l, err := f.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range l.Candidates {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "good,link" {
		t.Errorf("candidates %v", names)
	}
	if len(l.Problems) != 1 || !strings.HasPrefix(l.Problems[0].String(), "file bad.yaml: endpoint: required") {
		t.Errorf("problems %v", l.Problems)
	}

	missing := NewFilesystem(config.Source{Path: filepath.Join(dir, "nope")}, quietLog())
	if _, err := missing.List(t.Context()); err == nil {
		t.Error("missing directory: no error")
	}
}

func TestFilesystemWatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", "mode: remote\nendpoint: http://a/mcp\n")

	off := NewFilesystem(config.Source{Path: dir}, quietLog())
	done := make(chan struct{})
	go func() { off.Watch(t.Context(), func() {}); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("Watch without watch: true did not return")
	}

	f := NewFilesystem(config.Source{Path: dir, Pattern: "*.yaml", Watch: true}, quietLog())
	f.PollInterval = 10 * time.Millisecond
	var changes atomic.Int32
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan struct{})
	go func() { f.Watch(ctx, func() { changes.Add(1) }); close(stopped) }()

	time.Sleep(50 * time.Millisecond)
	if changes.Load() != 0 {
		t.Fatal("change reported with nothing changed")
	}
	writeFile(t, dir, "b.yaml", "mode: remote\nendpoint: http://b/mcp\n")
	waitFor(t, "new file", func() bool { return changes.Load() == 1 })
	writeFile(t, dir, "ignored.txt", "x")
	writeFile(t, dir, "a.yaml", "mode: remote\nendpoint: http://a2/mcp\n# longer\n")
	waitFor(t, "changed file", func() bool { return changes.Load() == 2 })
	if err := os.Remove(filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "removed file", func() bool { return changes.Load() == 3 })
	cancel()
	<-stopped
}
