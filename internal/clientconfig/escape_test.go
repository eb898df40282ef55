package clientconfig

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/hostaccess"
)

// escapeHost is a host for escape attempts: ROOT is the one allowed bind
// root, ENVS the one allowed env-file root, and both hold links to places
// that are refused.
type escapeHost struct {
	root, envs, state string
	policy            hostaccess.Policy
}

func newEscapeHost(t testing.TB) escapeHost {
	t.Helper()
	base := t.TempDir()
	h := escapeHost{root: filepath.Join(base, "r"), envs: filepath.Join(base, "e")}
	h.state = filepath.Join(h.root, "state")
	for _, d := range []string{filepath.Join(h.root, "data"), h.state, h.envs} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		filepath.Join(h.root, "toproc"): "/proc/1/root",
		filepath.Join(h.root, "toetc"):  "/etc",
		filepath.Join(h.root, "tosock"): "/var/run/docker.sock",
		filepath.Join(h.root, "up"):     "..",
		filepath.Join(h.root, "dangle"): "/nonexistent-hangar-target/x",
		filepath.Join(h.envs, "passwd"): "/etc/passwd",
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(h.envs, "ok.env"), []byte("A=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A real socket under the allowed root, under a name that does not
	// end in .sock.
	l, err := net.Listen("unix", filepath.Join(h.root, "ctl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	h.policy = hostaccess.Policy{BindRoots: []string{h.root}, EnvFileRoots: []string{h.envs}, Networks: []string{"tools"}, DataDir: h.state}
	return h
}

func (h escapeHost) expand(s string) string {
	return strings.NewReplacer("ROOT", h.root, "ENVS", h.envs).Replace(s)
}

// acceptable is the property every accepted spec has: bind sources under
// the allowed roots and outside refused places, no uid or gid 0, a network
// only from the allowed list.
func acceptable(t *testing.T, s *config.Server, p hostaccess.Policy) {
	t.Helper()
	if s == nil {
		return
	}
	for _, v := range s.Volumes {
		src, _, _ := strings.Cut(v, ":")
		if !slices.ContainsFunc(p.BindRoots, func(r string) bool { return strings.HasPrefix(src, r+"/") || src == r }) {
			t.Errorf("accepted bind %q outside %v", v, p.BindRoots)
		}
		if b, err := p.Volume(v); err != nil || b.String() != v {
			t.Errorf("accepted bind %q does not pass the policy again: %v", v, err)
		}
	}
	if s.User != "" {
		if u, err := p.User(s.User); err != nil || u != s.User {
			t.Errorf("accepted user %q: %v", s.User, err)
		}
	}
	if s.Network != "" && s.Network != "none" && !slices.Contains(p.Networks, s.Network) {
		t.Errorf("accepted network %q", s.Network)
	}
}

// TestMapRefusesEscapes is the table of ways an install could try to reach
// the host. Each is refused with a diagnostic at the field that asked; a
// user that is refused leaves the hardened default in place and the
// install goes on.
func TestMapRefusesEscapes(t *testing.T) {
	t.Parallel()
	h := newEscapeHost(t)
	const userKept = "user-kept" // the spec is accepted with the default user
	tests := []struct {
		name  string
		entry string // ROOT and ENVS are replaced by the allowed roots
		field string // the diagnostic's field_path
		code  string
		// level is error unless the row is userKept.
		outcome string
	}{
		// The payload: the host's root, writable, as uid 0.
		{"issue payload", `{"command":"docker","args":["run","-v","/proc/1/root:/host:rw","--user","00","alpine"]}`, "args[1]", CodeWidensHardening, ""},
		{"proc self root", `{"command":"docker","args":["run","-v","/proc/self/root/var/run:/r","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"containerd run dir", `{"command":"docker","args":["run","-v","/run/containerd:/c","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"engine state", `{"command":"docker","args":["run","-v","/var/lib/docker:/d","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"etc", `{"command":"docker","args":["run","-v","/etc:/etc","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"ssh keys", `{"command":"docker","args":["run","-v","/root/.ssh:/s:ro","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"user runtime dir", `{"command":"docker","args":["run","-v","/run/user/1000:/u","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"host root", `{"command":"docker","args":["run","-v","/:/host","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"engine socket", `{"command":"docker","args":["run","-v","/var/run/docker.sock:/var/run/docker.sock","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"volume= form", `{"command":"docker","args":["run","--volume=/etc:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"volume long form", `{"command":"docker","args":["run","--volume","/etc:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"attached -v", `{"command":"docker","args":["run","-v/etc:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"cluster -itv", `{"command":"docker","args":["run","-itv","/etc:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"cluster -itv attached", `{"command":"docker","args":["run","-itv/etc:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"cluster -iv=", `{"command":"docker","args":["run","-iv=/etc:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"mount bind", `{"command":"docker","args":["run","--mount","type=bind,source=/etc,target=/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"mount= bind root", `{"command":"docker","args":["run","--mount=type=bind,src=/,dst=/host","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"mount quoted", `{"command":"docker","args":["run","--mount","\"type=bind\",\"source=/proc\",target=/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"mount propagation", `{"command":"docker","args":["run","--mount","type=bind,source=ROOT/data,target=/x,bind-propagation=rshared","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"mount named volume", `{"command":"docker","args":["run","--mount","type=volume,source=dbdata,target=/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"mount default type", `{"command":"docker","args":["run","--mount","source=dbdata,target=/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"mount image", `{"command":"docker","args":["run","--mount","type=image,source=alpine,target=/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"dotdot out of root", `{"command":"docker","args":["run","-v","ROOT/../../etc:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"dotdot to root parent", `{"command":"docker","args":["run","-v","ROOT/data/../..:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"named volume", `{"command":"docker","args":["run","-v","data:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"relative path", `{"command":"docker","args":["run","-v","./data:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"home path", `{"command":"docker","args":["run","-v","~/.ssh:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"anonymous volume", `{"command":"docker","args":["run","-v","/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"link to proc", `{"command":"docker","args":["run","-v","ROOT/toproc:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"link to etc with tail", `{"command":"docker","args":["run","-v","ROOT/toetc/ssh:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"link to engine socket", `{"command":"docker","args":["run","-v","ROOT/tosock:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"relative link out of root", `{"command":"docker","args":["run","-v","ROOT/up/e:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"dangling link", `{"command":"docker","args":["run","-v","ROOT/dangle:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"sock name under root", `{"command":"docker","args":["run","-v","ROOT/data/app.sock:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"socket under root", `{"command":"docker","args":["run","-v","ROOT/ctl:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"gateway data dir", `{"command":"docker","args":["run","-v","ROOT/state:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"root holding data dir", `{"command":"docker","args":["run","-v","ROOT:/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"propagation mode", `{"command":"docker","args":["run","-v","ROOT/data:/x:rshared","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"relabel mode", `{"command":"docker","args":["run","-v","ROOT/data:/x:ro,z","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"volumes-from", `{"command":"docker","args":["run","--volumes-from","db","img"]}`, "args[1]", CodeWidensHardening, ""},

		{"user 00", `{"command":"docker","args":["run","--user","00","img"]}`, "args[1]", CodeWidensHardening, userKept},
		{"user 0000", `{"command":"docker","args":["run","-u","0000","img"]}`, "args[1]", CodeWidensHardening, userKept},
		{"user +0:0", `{"command":"docker","args":["run","--user","+0:0","img"]}`, "args[1]", CodeWidensHardening, userKept},
		{"user root", `{"command":"docker","args":["run","--user=root","img"]}`, "args[1]", CodeWidensHardening, userKept},
		{"user gid 0", `{"command":"docker","args":["run","--user","1000:0","img"]}`, "args[1]", CodeWidensHardening, userKept},
		{"user uid 0 gid", `{"command":"docker","args":["run","-u0:1000","img"]}`, "args[1]", CodeWidensHardening, userKept},
		{"user name", `{"command":"docker","args":["run","--user","nobody","img"]}`, "args[1]", CodeWidensHardening, userKept},
		{"user out of range", `{"command":"docker","args":["run","--user","4294967296","img"]}`, "args[1]", CodeWidensHardening, userKept},
		{"user in cluster", `{"command":"docker","args":["run","-iu","0","img"]}`, "args[1]", CodeWidensHardening, userKept},

		{"network name", `{"command":"docker","args":["run","--network","x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"net=host", `{"command":"docker","args":["run","--net=host","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"network container", `{"command":"docker","args":["run","--network","container:db","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"network bridge", `{"command":"docker","args":["run","--network=bridge","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"privileged", `{"command":"docker","args":["run","--privileged","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"privileged=false", `{"command":"docker","args":["run","--privileged=false","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"cap-add", `{"command":"docker","args":["run","--cap-add","SYS_ADMIN","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"cap-add=ALL", `{"command":"docker","args":["run","--cap-add=ALL","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"pid host", `{"command":"docker","args":["run","--pid","host","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"pid container", `{"command":"docker","args":["run","--pid=container:db","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"ipc host", `{"command":"docker","args":["run","--ipc=host","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"userns host", `{"command":"docker","args":["run","--userns","host","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"device", `{"command":"docker","args":["run","--device","/dev/sda","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"security-opt", `{"command":"docker","args":["run","--security-opt","seccomp=unconfined","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"security-opt=", `{"command":"docker","args":["run","--security-opt=apparmor=unconfined","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"sysctl", `{"command":"docker","args":["run","--sysctl","kernel.core_pattern=|/x","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"label-file", `{"command":"docker","args":["run","--label-file","/etc/shadow","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"unknown long flag", `{"command":"docker","args":["run","--frobnicate","/etc:/x","img"]}`, "args[1]", CodeUnsupported, ""},
		{"unknown short flag", `{"command":"docker","args":["run","-iZ","img"]}`, "args[1]", CodeUnsupported, ""},

		{"env-file outside", `{"command":"docker","args":["run","--env-file","/etc/passwd","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"env-file= outside", `{"command":"docker","args":["run","--env-file=/etc/shadow","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"envFile outside", `{"command":"docker","args":["run","img"],"envFile":"/etc/passwd"}`, "envFile", CodeWidensHardening, ""},
		{"env-file link out of root", `{"command":"docker","args":["run","--env-file","ENVS/passwd","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"env-file dotdot", `{"command":"docker","args":["run","--env-file","ENVS/../../../../etc/passwd","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"env-file relative", `{"command":"docker","args":["run","--env-file","ok.env","img"]}`, "args[1]", CodeWidensHardening, ""},
		{"runner envFile", `{"command":"npx","args":["pkg"],"envFile":"/etc/passwd"}`, "envFile", CodeWidensHardening, ""},
	}
	opts := Options{Runtimes: map[string]config.Runtime{"npx": {Image: "node:22", Network: "bridge"}}, Access: h.policy}
	if len(tests) < 40 {
		t.Fatalf("only %d escape attempts", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, diags := DecodeEntry("mcpServers.evil", json.RawMessage(h.expand(tt.entry)))
			if diags.HasError() {
				t.Fatalf("decode: %+v", diags)
			}
			s, d := Map("evil", e, "mcpServers.evil", opts)
			want := "mcpServers.evil." + tt.field
			i := slices.IndexFunc(d, func(x Diagnostic) bool { return x.FieldPath == want && x.Code == tt.code })
			if i < 0 {
				t.Fatalf("no %s diagnostic at %s: %+v", tt.code, want, d)
			}
			switch tt.outcome {
			case userKept:
				if s == nil || s.User != hostaccess.DefaultUser || d[i].Level != LevelWarning {
					t.Fatalf("want the default user kept with a warning, got %+v, %+v", s, d)
				}
			default:
				if s != nil || d[i].Level != LevelError {
					t.Fatalf("want a refusal, got %+v, %+v", s, d)
				}
			}
			acceptable(t, s, h.policy)
			for _, x := range d {
				if strings.Contains(x.Message, "exist") || strings.Contains(x.Message, "line ") || strings.Contains(x.Message, "permission") {
					t.Errorf("diagnostic tells about the host: %q", x.Message)
				}
			}
		})
	}
}

// TestMapAcceptsAllowed: what the policy allows still works, in every
// spelling, with the bind source resolved.
func TestMapAcceptsAllowed(t *testing.T) {
	t.Parallel()
	h := newEscapeHost(t)
	opts := Options{Access: h.policy}
	for _, tt := range []struct {
		entry         string
		volumes       []string
		user, network string
		env           map[string]string
	}{
		{`{"command":"docker","args":["run","-v","ROOT/data:/d:ro","img"]}`, []string{"ROOT/data:/d:ro"}, "", "", nil},
		{`{"command":"docker","args":["run","-itv","ROOT/data/new/dir:/d","img"]}`, []string{"ROOT/data/new/dir:/d:rw"}, "", "", nil},
		{`{"command":"docker","args":["run","--mount","type=bind,src=ROOT/data/../data,dst=/d,readonly","img"]}`, []string{"ROOT/data:/d:ro"}, "", "", nil},
		{`{"command":"docker","args":["run","--user","1000","--network","tools","img"]}`, nil, "1000:1000", "tools", nil},
		{`{"command":"docker","args":["run","-u1000:2000","--net=none","img"]}`, nil, "1000:2000", "none", nil},
		{`{"command":"docker","args":["run","--env-file","ENVS/ok.env","img"]}`, nil, "", "", map[string]string{"A": "1"}},
	} {
		e, diags := DecodeEntry("f", json.RawMessage(h.expand(tt.entry)))
		s, d := Map("x", e, "f", opts)
		if s == nil || diags.HasError() || d.HasError() {
			t.Errorf("%s: refused: %+v %+v", tt.entry, diags, d)
			continue
		}
		var want []string
		for _, v := range tt.volumes {
			want = append(want, h.expand(v))
		}
		if !slices.Equal(s.Volumes, want) {
			t.Errorf("%s: volumes %q, want %q", tt.entry, s.Volumes, want)
		}
		if tt.user != "" && s.User != tt.user || tt.network != "" && s.Network != tt.network {
			t.Errorf("%s: user %q network %q", tt.entry, s.User, s.Network)
		}
		for k, v := range tt.env {
			if s.Env[k] != v {
				t.Errorf("%s: env %v", tt.entry, s.Env)
			}
		}
		acceptable(t, s, h.policy)
	}
}

// TestEnvFileRefusalTellsNothing: the answer for a path outside the
// allowed roots is the same whether it exists, is readable or not.
func TestEnvFileRefusalTellsNothing(t *testing.T) {
	t.Parallel()
	h := newEscapeHost(t)
	var msgs []string
	for _, p := range []string{"/etc/passwd", "/etc/shadow", "/nonexistent-hangar/x.env", "/etc"} {
		e := Entry{Command: "docker", Args: []string{"run", "--env-file", p, "img"}}
		_, d := Map("x", e, "f", Options{Access: h.policy})
		if len(d) != 1 {
			t.Fatalf("%s: %+v", p, d)
		}
		msgs = append(msgs, strings.ReplaceAll(d[0].Message, p, "P"))
	}
	for _, m := range msgs[1:] {
		if m != msgs[0] {
			t.Errorf("messages differ by path: %q", msgs)
		}
	}
}
