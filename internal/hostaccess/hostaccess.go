// Package hostaccess decides what of the host a provider container may get
// when its spec comes from anywhere but the operator's config file: an
// install (mcp/install), a discovered provider file, a hot-load. It is an
// allow-list: a bind mount whose source lies under an allowed root, a
// numeric non-root user, a network the operator listed. Everything else is
// refused.
//
// The mappers (manage, discovery, registry) call it to explain a refusal
// to the person who wrote the entry; dockerrt.Build calls it again on
// every container it creates from such a spec, so a spec that slipped past
// a mapper still cannot start.
package hostaccess

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Config keys the refusals point at.
const (
	KeyBindRoots    = "install.allowed_bind_roots"
	KeyNetworks     = "install.allowed_networks"
	KeyEnvFileRoots = "install.allowed_env_file_roots"
)

// DefaultUser is the user of a hardened provider container.
const DefaultUser = "65534:65534"

// maxEnvFile bounds an env file: it is a list of variables, not data.
const maxEnvFile = 1 << 20

// Policy is what the operator allows specs not written by them. Its zero
// value allows nothing: no bind mount, no network, no env file.
type Policy struct {
	// BindRoots are absolute host directories under which bind sources
	// may lie (install.allowed_bind_roots).
	BindRoots []string
	// Networks may be named by such a spec (install.allowed_networks).
	Networks []string
	// OperatorNetworks are networks the operator's config puts such specs
	// on by itself (runtimes.<cmd>.network, the network HTTP providers are
	// reached on). Build accepts them; a mapper never lets an entry name one.
	OperatorNetworks []string
	// EnvFileRoots are directories env files may be read from
	// (install.allowed_env_file_roots).
	EnvFileRoots []string
	// DataDir is the gateway's own state: never mounted.
	DataDir string
}

// Errors a refusal wraps, so that callers can name the config key.
var (
	ErrBind    = errors.New("bind mount refused")
	ErrUser    = errors.New("user refused")
	ErrNetwork = errors.New("network refused")
	ErrEnvFile = errors.New("env file refused")
)

// refusedDirs are refused even under an allowed root, together with any
// directory above them: the kernel's views of every process and device,
// and the state and sockets of the engine and of containerd. A source
// equal to, under, or above one of them is refused.
var refusedDirs = []string{
	"/proc", "/sys", "/dev",
	"/var/lib/docker", "/var/lib/containerd",
	"/run/containerd", "/var/run/containerd",
	"/run/docker", "/var/run/docker",
	"/run/docker.sock", "/var/run/docker.sock",
	// Other engines and orchestrators on the same host.
	"/var/lib/containers", "/run/containers", "/run/podman", "/var/run/podman",
	"/run/crio", "/var/run/crio", "/var/lib/kubelet",
}

// refusedRunPrefixes are names in /run and /var/run refused by prefix:
// docker.sock, docker.pid, dockerd, docker-*, …
var refusedRunPrefixes = []string{"/run/docker", "/var/run/docker"}

// refused reports why host path p (clean, absolute) may never be mounted,
// or "". It is lexical: nothing is looked at on the host.
func (p Policy) refused(h string) string {
	if strings.HasSuffix(h, ".sock") {
		return "it is a socket"
	}
	for _, d := range refusedDirs {
		if within(h, d) || within(d, h) {
			return "it is or holds " + d
		}
	}
	if d := filepath.Clean(p.DataDir); p.DataDir != "" && (within(h, d) || within(d, h)) {
		return "it is or holds the gateway's data dir"
	}
	for _, pre := range refusedRunPrefixes {
		if strings.HasPrefix(h, pre) {
			return "it is the engine's run state"
		}
	}
	return ""
}

// engineSockets are where Docker engines listen.
var engineSockets = []string{"/var/run/docker.sock", "/run/docker.sock"}

// EngineSocket reports whether bind-mounting host path p hands over an
// engine socket: the socket however it is spelt (the engine cleans bind
// paths), any file named docker.sock, or a directory above one. It is the
// one rule the operator's own config file keeps (allow_docker_socket
// lifts it); every other spec is held to Policy, which refuses far more.
func EngineSocket(p string) bool {
	clean := filepath.Clean(p)
	if filepath.Base(clean) == "docker.sock" {
		return true
	}
	return slices.ContainsFunc(engineSockets, func(sock string) bool { return within(sock, clean) })
}

// within reports whether clean absolute path p is root or lies under it.
func within(p, root string) bool {
	if root == "/" {
		return true
	}
	return p == root || strings.HasPrefix(p, root+"/")
}

// Bind is one accepted bind mount.
type Bind struct {
	// Source is the host path with symlinks resolved: the engine is given
	// the path that was checked, not a link it would follow. (A link
	// swapped into that path between the check and the start is still
	// followed: see docs/containers.md on sharing a root between servers.)
	Source   string
	Target   string
	ReadOnly bool
}

// String is the bind as HostConfig.Binds spells it.
func (b Bind) String() string {
	s := b.Source + ":" + b.Target
	if b.ReadOnly {
		return s + ":ro"
	}
	return s + ":rw"
}

// Volume checks a -v style bind, "host:container[:ro|rw]".
func (p Policy) Volume(v string) (Bind, error) {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return Bind{}, fmt.Errorf("%w: want /host/path:/container/path[:ro|rw] (named and anonymous volumes are not supported)", ErrBind)
	}
	ro := false
	if len(parts) == 3 {
		switch parts[2] {
		case "ro":
			ro = true
		case "rw":
		default:
			return Bind{}, fmt.Errorf("%w: mode must be ro or rw", ErrBind)
		}
	}
	return p.Bind(parts[0], parts[1], ro)
}

// Bind checks host source src mounted at target. The message of a refusal
// says which rule refused, never what exists on the host.
func (p Policy) Bind(src, target string, readOnly bool) (Bind, error) {
	if !strings.HasPrefix(target, "/") || strings.ContainsAny(target, ",:\x00") {
		return Bind{}, fmt.Errorf("%w: the container path must be absolute", ErrBind)
	}
	if !strings.HasPrefix(src, "/") || strings.ContainsAny(src, ",:\x00") {
		return Bind{}, fmt.Errorf("%w: the host path must be absolute (named volumes, relative and ~ paths are not supported)", ErrBind)
	}
	clean := filepath.Clean(src)
	if why := p.refused(clean); why != "" {
		return Bind{}, fmt.Errorf("%w: %s", ErrBind, why)
	}
	if len(p.BindRoots) == 0 {
		return Bind{}, fmt.Errorf("%w: no host path may be mounted (%s is empty)", ErrBind, KeyBindRoots)
	}
	if !underAny(clean, p.BindRoots) {
		return Bind{}, fmt.Errorf("%w: not under %s", ErrBind, KeyBindRoots)
	}
	// Only now, for a path under an allowed root, is the host looked at.
	real, err := resolve(clean)
	if err != nil {
		return Bind{}, fmt.Errorf("%w: the host path cannot be resolved", ErrBind)
	}
	if why := p.refused(real); why != "" {
		return Bind{}, fmt.Errorf("%w: it leads to a refused place (%s)", ErrBind, why)
	}
	roots := make([]string, 0, len(p.BindRoots))
	for _, r := range p.BindRoots {
		rr, err := filepath.EvalSymlinks(r)
		if err != nil {
			continue // a root the gateway cannot see admits nothing
		}
		roots = append(roots, rr)
	}
	if !underAny(real, roots) {
		return Bind{}, fmt.Errorf("%w: it leads outside %s (or the root is not visible to the gateway at the same path)", ErrBind, KeyBindRoots)
	}
	if fi, err := os.Stat(real); err == nil && fi.Mode()&(fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe) != 0 {
		return Bind{}, fmt.Errorf("%w: it is a socket, device or pipe", ErrBind)
	}
	return Bind{Source: real, Target: filepath.Clean(target), ReadOnly: readOnly}, nil
}

func underAny(p string, roots []string) bool {
	return slices.ContainsFunc(roots, func(r string) bool { return within(p, filepath.Clean(r)) })
}

// resolve resolves the symlinks of p; a missing tail is kept as written
// (the engine creates it as plain directories) after resolving the part
// that exists.
func resolve(p string) (string, error) {
	rest := ""
	for {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		// A dangling link would be followed by the engine to a place we
		// cannot check.
		if fi, lerr := os.Lstat(p); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return "", err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", err
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

var userRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]{1,10})(?::([0-9]{1,10}))?$`) })

// User checks a container user. Only a numeric uid and gid other than 0
// are accepted, whatever the spelling: "00", "+0", names (the image's
// passwd decides what a name is) are refused. A missing gid becomes the
// uid: the engine would otherwise pick the image's group for it, which is
// 0 when the uid has no passwd entry. The answer is "uid:gid".
func (p Policy) User(u string) (string, error) {
	m := userRe().FindStringSubmatch(u)
	if m == nil {
		return "", fmt.Errorf("%w: want a numeric uid[:gid] other than 0", ErrUser)
	}
	uid, err1 := strconv.ParseUint(m[1], 10, 32)
	gidS := m[2]
	if gidS == "" {
		gidS = m[1]
	}
	gid, err2 := strconv.ParseUint(gidS, 10, 32)
	switch {
	case err1 != nil || err2 != nil || uid >= 1<<31 || gid >= 1<<31:
		return "", fmt.Errorf("%w: uid and gid must be below 2147483648", ErrUser)
	case uid == 0 || gid == 0:
		return "", fmt.Errorf("%w: uid and gid 0 (root) are never given", ErrUser)
	}
	return strconv.FormatUint(uid, 10) + ":" + strconv.FormatUint(gid, 10), nil
}

// Network checks a network an entry names: none, or one the operator
// listed in install.allowed_networks.
func (p Policy) Network(n string) error {
	if n == "" || n == "none" || slices.Contains(p.Networks, n) {
		return nil
	}
	return fmt.Errorf("%w: not in %s", ErrNetwork, KeyNetworks)
}

// SpecNetwork checks the network a container is finally put on: one an
// entry may name, or one the operator's config chose.
func (p Policy) SpecNetwork(n string) error {
	if slices.Contains(p.OperatorNetworks, n) {
		return nil
	}
	return p.Network(n)
}

// ReadEnvFile reads env file name, which must lie under an allowed root.
// Nothing is looked at on the host for a path outside them, so the answer
// says nothing about whether it exists; inside, os.Root keeps links from
// leading out.
func (p Policy) ReadEnvFile(name string) ([]byte, error) {
	if !strings.HasPrefix(name, "/") {
		return nil, fmt.Errorf("%w: the path must be absolute", ErrEnvFile)
	}
	clean := filepath.Clean(name)
	for _, r := range p.EnvFileRoots {
		r = filepath.Clean(r)
		if !within(clean, r) || clean == r {
			continue
		}
		rel, err := filepath.Rel(r, clean)
		if err != nil {
			break
		}
		root, err := os.OpenRoot(r)
		if err != nil {
			return nil, fmt.Errorf("%w: it cannot be read", ErrEnvFile)
		}
		defer root.Close()
		f, err := root.Open(rel)
		if err != nil {
			return nil, fmt.Errorf("%w: it cannot be read", ErrEnvFile)
		}
		defer f.Close()
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%w: it is not a regular file", ErrEnvFile)
		}
		b, err := io.ReadAll(io.LimitReader(f, maxEnvFile+1))
		if err != nil {
			return nil, fmt.Errorf("%w: it cannot be read", ErrEnvFile)
		}
		if len(b) > maxEnvFile {
			return nil, fmt.Errorf("%w: larger than 1 MiB", ErrEnvFile)
		}
		return b, nil
	}
	if len(p.EnvFileRoots) == 0 {
		return nil, fmt.Errorf("%w: env files are not read (%s is empty)", ErrEnvFile, KeyEnvFileRoots)
	}
	return nil, fmt.Errorf("%w: not under %s", ErrEnvFile, KeyEnvFileRoots)
}

// ValidateRoot says what is wrong with a configured root, or "".
func ValidateRoot(r string) string {
	switch {
	case !filepath.IsAbs(r):
		return "must be an absolute path"
	case filepath.Clean(r) == "/":
		return "must not be / (the whole host)"
	case filepath.Clean(r) != r && filepath.Clean(r)+"/" != r:
		return "must be a clean path (no ., .. or double slashes)"
	}
	if why := (Policy{}).refused(filepath.Clean(r)); why != "" {
		return "cannot be allowed: " + why
	}
	return ""
}

// ValidateNetwork says what is wrong with a network in allowed_networks.
func ValidateNetwork(n string) string {
	switch {
	case n == "host":
		return "host networking is never allowed"
	case strings.HasPrefix(n, "container:"):
		return "joining another container's network is never allowed"
	case !networkRe().MatchString(n):
		return "must be a network name"
	}
	return ""
}

var networkRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`) })
