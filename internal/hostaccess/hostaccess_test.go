package hostaccess

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestUser(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"1000", "1000:1000"}, {"1000:2000", "1000:2000"}, {"0100:0100", "100:100"}, {"2147483647", "2147483647:2147483647"},
		{"0", ""}, {"00", ""}, {"0000", ""}, {"0:0", ""}, {"+0:0", ""}, {"-0", ""}, {"1000:0", ""}, {"0:1000", ""},
		{"root", ""}, {"nobody", ""}, {"1000:staff", ""}, {"", ""}, {" 1000", ""}, {"1000:", ""}, {":1000", ""},
		{"2147483648", ""}, {"4294967296", ""}, {"99999999999", ""}, {"1e3", ""}, {"0x10", ""},
	} {
		got, err := Policy{}.User(tt.in)
		if got != tt.want || (tt.want == "") != errors.Is(err, ErrUser) {
			t.Errorf("User(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestNetwork(t *testing.T) {
	t.Parallel()
	p := Policy{Networks: []string{"tools"}, OperatorNetworks: []string{"gw"}}
	for _, tt := range []struct {
		n          string
		entry, spc bool
	}{
		{"", true, true}, {"none", true, true}, {"tools", true, true}, {"gw", false, true},
		{"bridge", false, false}, {"host", false, false}, {"container:x", false, false}, {"Tools", false, false},
	} {
		if got := p.Network(tt.n) == nil; got != tt.entry {
			t.Errorf("Network(%q) allowed = %v", tt.n, got)
		}
		if got := p.SpecNetwork(tt.n) == nil; got != tt.spc {
			t.Errorf("SpecNetwork(%q) allowed = %v", tt.n, got)
		}
	}
}

func TestEngineSocket(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		"/var/run/docker.sock": true, "/run/docker.sock": true, "/var/run": true, "/run": true, "/var": true, "/": true,
		"/var/run/docker.sock/./": true, "/home/u/.docker/run/docker.sock": true, "//run//": true,
		"/var/run/other": false, "/srv/data": false, "/run/user/1000": false,
	} {
		if got := EngineSocket(p); got != want {
			t.Errorf("EngineSocket(%q) = %v", p, got)
		}
	}
}

func TestValidateRoot(t *testing.T) {
	t.Parallel()
	for r, ok := range map[string]bool{
		"/srv/mcp-data": true, "/srv/mcp-data/": true, "/home/u/mcp": true,
		"srv": false, "/": false, "/srv/../": false, "/srv//x": false, "/proc": false, "/var/lib": false,
		"/var/run/docker": false, "/run": false, "/dev/shm": false,
	} {
		if got := ValidateRoot(r) == ""; got != ok {
			t.Errorf("ValidateRoot(%q) ok = %v (%s)", r, got, ValidateRoot(r))
		}
	}
}

// TestBindMissingTail: a source that does not exist yet is accepted when
// its existing part resolves under the root (the engine creates the rest
// as directories).
func TestBindMissingTail(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	real, _ := filepath.EvalSymlinks(root)
	p := Policy{BindRoots: []string{root}}
	b, err := p.Bind(root+"/a/b", "/x", true)
	if err != nil || b.String() != real+"/a/b:/x:ro" {
		t.Errorf("Bind = %v, %v", b, err)
	}
	// The root itself must be visible to the gateway.
	if _, err := (Policy{BindRoots: []string{root + "/missing"}}).Bind(root+"/missing/a", "/x", false); !errors.Is(err, ErrBind) {
		t.Errorf("bind under an invisible root: %v", err)
	}
}

func TestReadEnvFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.env"), []byte("A=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../../../etc/passwd", filepath.Join(root, "d", "up")); err != nil {
		t.Fatal(err)
	}
	p := Policy{EnvFileRoots: []string{root}}
	if b, err := p.ReadEnvFile(root + "/d/../a.env"); err != nil || string(b) != "A=1\n" {
		t.Errorf("ReadEnvFile = %q, %v", b, err)
	}
	for _, bad := range []string{"/etc/passwd", root + "/d/up", root + "/../x", root, root + "/d", "a.env", root + "/nope"} {
		if _, err := p.ReadEnvFile(bad); !errors.Is(err, ErrEnvFile) {
			t.Errorf("ReadEnvFile(%q) = %v", bad, err)
		}
	}
	if _, err := (Policy{}).ReadEnvFile(root + "/a.env"); !errors.Is(err, ErrEnvFile) {
		t.Errorf("no roots: %v", err)
	}
}
