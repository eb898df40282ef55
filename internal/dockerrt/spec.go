package dockerrt

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// Defaults of the hardening template.
const (
	DefaultMemoryBytes = 512 << 20
	DefaultNanoCPUs    = 1_000_000_000
	DefaultPidsLimit   = 256
	DefaultUser        = "65534:65534"
	tmpfsOptions       = "rw,noexec,nosuid,size=64m"
)

// Spec is what the gateway wants a provider container to be. It is built from
// trusted configuration only; the hardening template in Build is applied on
// top and nothing in a Spec can widen it.
type Spec struct {
	ServerID    string
	Owner       string // gateway instance, see LabelOwner
	Replica     string // replica of the instance, see LabelReplica; "" without replicas
	Image       string
	Args        []string
	Env         map[string]string
	Volumes     []string // host:container[:ro|rw]
	MemoryBytes int64
	NanoCPUs    int64
	PidsLimit   int64
	// Network is the network mode: "" or "none" for no network, otherwise a
	// network name. "host" is refused.
	Network  string
	ReadOnly bool
	User     string
	// AllowDockerSocket lets Volumes hand the engine socket to the
	// provider (config key allow_docker_socket); Build refuses it otherwise.
	AllowDockerSocket bool
	// Stdio attaches stdin: the provider speaks MCP over stdin/stdout.
	Stdio bool
	// ExtraLabels are informational only; they can never replace the
	// gateway's own labels.
	ExtraLabels map[string]string
	// Role is LabelRole of a container that is not a provider itself
	// (RoleEgressProxy); "" for providers.
	Role string
	// Stdout, when set, receives the stdout of a container that does not
	// speak stdio (an egress proxy's events); else stdout joins the stderr
	// tail.
	Stdout io.Writer
}

// Build turns a Spec into the Docker create request, applying the hardening
// template: all capabilities dropped, no-new-privileges, a read-only root
// with a tmpfs /tmp, memory, CPU and pids limits, no network unless asked.
func Build(s Spec) (*container.Config, *container.HostConfig, *network.NetworkingConfig, error) {
	if s.Image == "" {
		return nil, nil, nil, fmt.Errorf("spec for %q: image is empty", s.ServerID)
	}
	mode := s.Network
	switch mode {
	case "", "none":
		mode = "none"
	case "host":
		return nil, nil, nil, fmt.Errorf("spec for %q: host networking is not allowed", s.ServerID)
	default:
		if strings.HasPrefix(mode, "container:") {
			return nil, nil, nil, fmt.Errorf("spec for %q: joining another container's network is not allowed", s.ServerID)
		}
	}
	for _, v := range s.Volumes {
		if err := checkVolume(v, s.AllowDockerSocket); err != nil {
			return nil, nil, nil, fmt.Errorf("spec for %q: %w", s.ServerID, err)
		}
	}

	labels := make(map[string]string, len(s.ExtraLabels)+3)
	for k, v := range s.ExtraLabels {
		if !strings.HasPrefix(k, "io.mcp-hangar.") {
			labels[k] = v
		}
	}
	labels[LabelManaged] = "true"
	labels[LabelServer] = s.ServerID
	labels[LabelOwner] = s.Owner
	if s.Replica != "" {
		labels[LabelReplica] = s.Replica
	}
	if s.Role != "" {
		labels[LabelRole] = s.Role
	}

	env := make([]string, 0, len(s.Env))
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		env = append(env, k+"="+s.Env[k])
	}
	user := s.User
	if user == "" {
		user = DefaultUser
	}

	cfg := &container.Config{
		Image:  s.Image,
		Cmd:    s.Args,
		Env:    env,
		User:   user,
		Labels: labels,
	}
	if s.Stdio {
		// StdinOnce: when the gateway's attach goes away (even if the
		// gateway is killed) the provider sees EOF, exits, and AutoRemove
		// deletes it: no orphan survives the gateway.
		cfg.AttachStdin, cfg.AttachStdout, cfg.AttachStderr = true, true, true
		cfg.OpenStdin, cfg.StdinOnce = true, true
	}

	pids := pick(s.PidsLimit, DefaultPidsLimit)
	host := &container.HostConfig{
		AutoRemove:     true,
		NetworkMode:    container.NetworkMode(mode),
		Binds:          slices.Clone(s.Volumes),
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges:true"},
		ReadonlyRootfs: s.ReadOnly,
		Tmpfs:          map[string]string{"/tmp": tmpfsOptions},
		Privileged:     false,
		Resources: container.Resources{
			Memory:     pick(s.MemoryBytes, DefaultMemoryBytes),
			MemorySwap: pick(s.MemoryBytes, DefaultMemoryBytes), // no swap beyond the limit
			NanoCPUs:   pick(s.NanoCPUs, DefaultNanoCPUs),
			PidsLimit:  &pids,
		},
		LogConfig: container.LogConfig{Type: "none"}, // stdio is read over attach; nothing to keep on disk
	}
	var netCfg *network.NetworkingConfig
	if mode != "none" && mode != "bridge" {
		netCfg = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{mode: {}}}
	}
	return cfg, host, netCfg, nil
}

func pick(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}

// checkVolume accepts only host:container[:ro|rw] binds with absolute paths,
// and the Docker socket only when allowSocket: a provider holding it can
// drive the engine the gateway drives.
func checkVolume(v string, allowSocket bool) error {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return fmt.Errorf("volume %q: want host:container[:ro|rw]", v)
	}
	if !strings.HasPrefix(parts[0], "/") || !strings.HasPrefix(parts[1], "/") {
		return fmt.Errorf("volume %q: paths must be absolute", v)
	}
	if len(parts) == 3 && parts[2] != "ro" && parts[2] != "rw" {
		return fmt.Errorf("volume %q: mode must be ro or rw", v)
	}
	if exposesEngine(parts[0]) && !allowSocket {
		return fmt.Errorf("volume %q: %w", v, ErrDockerSocket)
	}
	return nil
}

// ErrDockerSocket refuses a volume that would hand the engine socket to a
// provider without allow_docker_socket.
var ErrDockerSocket = errors.New("the Docker socket (or a directory holding it) cannot be given to a provider unless the server sets allow_docker_socket: true")

// MountsEngineSocket reports whether the bind volume v (host:container[:mode])
// would hand the engine socket to the container. It is the one rule both the
// start path (Build) and `hangar config check` apply.
func MountsEngineSocket(v string) bool {
	host, _, ok := strings.Cut(v, ":")
	return ok && ExposesEngine(host)
}

// ExposesEngine reports whether bind-mounting the absolute host path p would
// hand over an engine socket; see exposesEngine.
func ExposesEngine(p string) bool { return strings.HasPrefix(p, "/") && exposesEngine(p) }

// engineSockets are where Docker engines listen.
var engineSockets = []string{"/var/run/docker.sock", "/run/docker.sock"}

// exposesEngine reports whether mounting host path p would hand over an
// engine socket: the socket itself however it is spelt (the engine cleans
// bind paths), any *.sock named docker.sock, or a directory above one.
func exposesEngine(p string) bool {
	clean := path.Clean(p)
	if path.Base(clean) == "docker.sock" {
		return true
	}
	for _, sock := range engineSockets {
		if clean == "/" || strings.HasPrefix(sock, clean+"/") {
			return true
		}
	}
	return false
}
