package dockerrt

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"

	"github.com/mcp-hangar/hangar/internal/hostaccess"
)

// Defaults of the hardening template.
const (
	DefaultMemoryBytes = 512 << 20
	DefaultNanoCPUs    = 1_000_000_000
	DefaultPidsLimit   = 256
	DefaultUser        = hostaccess.DefaultUser
	tmpfsOptions       = "rw,noexec,nosuid,size=64m"
)

// Spec is what the gateway wants a provider container to be. The hardening
// template in Build is applied on top and nothing in a Spec can widen it;
// what of the host it may get depends on who wrote it (FromConfigFile).
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
	// provider (config key allow_docker_socket); Build refuses it otherwise,
	// and always for a spec not from the config file.
	AllowDockerSocket bool
	// FromConfigFile marks a spec the operator wrote in the gateway's own
	// config file: its volumes, user and network are theirs to choose.
	// Every other spec (installed, discovered, hot-loaded) gets only what
	// Access allows, checked again here whatever its mapper decided.
	FromConfigFile bool
	// EgressNetwork marks Network as the internal network the gateway
	// made for this server's egress proxy (Egress.Acquire), not one its
	// source asked for: the one network such a spec may join unlisted.
	EgressNetwork bool
	// Access is the operator's allow-list for specs not from the config
	// file; Runtime.Run fills it. Its zero value allows nothing.
	Access hostaccess.Policy
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
	mode, binds, user, err := hostAccess(s)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("spec for %q: %w", s.ServerID, err)
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
		Binds:          binds,
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
	if s.EgressNetwork {
		// The egress network has no host address for IPv4 (egress.go); its
		// bridge still has an IPv6 link-local one, which a container with
		// IPv6 on could reach the host's [::] listeners at. Some engines
		// turn IPv6 on in containers: this one is off whatever they do.
		host.Sysctls = map[string]string{
			"net.ipv6.conf.all.disable_ipv6":     "1",
			"net.ipv6.conf.default.disable_ipv6": "1",
		}
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

// hostAccess decides the network mode, binds and user of s: as written
// for the operator's config file (bar host networking and, without
// allow_docker_socket, the engine socket), through s.Access for anything
// else. Binds of the latter name the resolved host path, so that a link
// swapped in after the check is not followed.
func hostAccess(s Spec) (mode string, binds []string, user string, err error) {
	mode = s.Network
	switch {
	case mode == "" || mode == "none":
		mode = "none"
	case mode == "host":
		return "", nil, "", errors.New("host networking is not allowed")
	case strings.HasPrefix(mode, "container:"):
		return "", nil, "", errors.New("joining another container's network is not allowed")
	case !s.FromConfigFile && !s.EgressNetwork:
		if err := s.Access.SpecNetwork(mode); err != nil {
			return "", nil, "", fmt.Errorf("network %q: %w", mode, err)
		}
	}
	user = s.User
	if !s.FromConfigFile {
		if s.AllowDockerSocket {
			return "", nil, "", fmt.Errorf("allow_docker_socket: %w", ErrDockerSocket)
		}
		if user != "" {
			if user, err = s.Access.User(user); err != nil {
				return "", nil, "", fmt.Errorf("user %q: %w", s.User, err)
			}
		}
		for _, v := range s.Volumes {
			b, err := s.Access.Volume(v)
			if err != nil {
				return "", nil, "", fmt.Errorf("volume %q: %w", v, err)
			}
			binds = append(binds, b.String())
		}
	} else {
		for _, v := range s.Volumes {
			if err := checkVolume(v, s.AllowDockerSocket); err != nil {
				return "", nil, "", err
			}
			binds = append(binds, v)
		}
	}
	if user == "" {
		user = DefaultUser
	}
	return mode, binds, user, nil
}

// checkVolume is the shape a config file's bind must have, and the engine
// socket only with allowSocket: a provider holding it can drive the engine
// the gateway drives.
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
	if hostaccess.EngineSocket(parts[0]) && !allowSocket {
		return fmt.Errorf("volume %q: %w", v, ErrDockerSocket)
	}
	return nil
}

// ErrDockerSocket refuses a volume that would hand the engine socket to a
// provider without allow_docker_socket.
var ErrDockerSocket = errors.New("the Docker socket (or a directory holding it) cannot be given to a provider unless the server sets allow_docker_socket: true in the gateway's config file")

// MountsEngineSocket reports whether the bind volume v (host:container[:mode])
// would hand the engine socket to the container. It is the rule both the
// start path (Build) and `hangar config check` apply to the config file.
func MountsEngineSocket(v string) bool {
	host, _, ok := strings.Cut(v, ":")
	return ok && ExposesEngine(host)
}

// ExposesEngine reports whether bind-mounting the absolute host path p would
// hand over an engine socket; see hostaccess.EngineSocket.
func ExposesEngine(p string) bool { return strings.HasPrefix(p, "/") && hostaccess.EngineSocket(p) }
