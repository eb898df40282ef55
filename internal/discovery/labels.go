package discovery

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
)

// Labels by which a container opts in to discovery. Every key lives under
// one prefix, so any other key under it is a typo that can be named, and a
// label that would loosen the container's hardening (privileged, volumes,
// capabilities, env, command, image, network) simply does not exist.
const (
	LabelPrefix      = "mcp.hangar."
	LabelEnabled     = LabelPrefix + "enabled"
	LabelName        = LabelPrefix + "name"
	LabelMode        = LabelPrefix + "mode"
	LabelPort        = LabelPrefix + "port"
	LabelPath        = LabelPrefix + "path"
	LabelGroup       = LabelPrefix + "group"
	LabelDescription = LabelPrefix + "description"
)

var knownLabels = []string{LabelEnabled, LabelName, LabelMode, LabelPort, LabelPath, LabelGroup, LabelDescription}

// Source types; they are also the Origin of the servers they register.
const (
	SourceDocker     = "docker"
	SourceFilesystem = "filesystem"
	SourceSwarm      = "swarm"
)

// How a labelled container speaks MCP.
const (
	ModeHTTP  = "http"
	ModeStdio = "stdio"
)

// Defaults of a discovered server, as config.Default gives a configured one.
const (
	defaultPort                   = 8080
	defaultPath                   = "/mcp"
	defaultIdleTTL                = 300 * time.Second
	defaultHealthCheckInterval    = 60 * time.Second
	defaultMaxConsecutiveFailures = 3
	defaultMaxConcurrency         = 10
	defaultStartTimeout           = 30 * time.Second
	defaultCallTimeout            = 60 * time.Second
)

// reasonNeedsStdin is why a stdio container without an open stdin is
// refused; the Swarm source replaces it with its own reason.
const reasonNeedsStdin = "needs a container started with an open stdin (docker run -i)"

// fingerprintLen is how many hex digits of the sha256 a fingerprint keeps.
const fingerprintLen = 16

// idRe is config's server ID rule.
var idRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$`) })
var (
	// ErrNotEnabled means the container did not opt in (enabled is absent
	// or "false"); it is not a candidate and not a problem.
	ErrNotEnabled = errors.New("not enabled for discovery")
	// ErrNotRunning means the container is not running; it is skipped.
	ErrNotRunning = errors.New("container is not running")
	// ErrNoAddress means an http candidate has no IP address to reach it on.
	ErrNoAddress = errors.New("no reachable IP address")
)

// ContainerSnapshot is what discovery needs to know about a container; the
// Docker source fills it, Decode turns it into a candidate.
type ContainerSnapshot struct {
	ID, Name  string
	Image     string // as the container was created from ("repo:tag")
	ImageID   string // "sha256:..."
	Labels    map[string]string
	Networks  map[string]string // network name → IP address ("" when none)
	Running   bool
	OpenStdin bool
}

// Candidate is a server a source found, not yet registered.
type Candidate struct {
	Name        string
	Source      string // SourceDocker | SourceSwarm | SourceFilesystem
	Mode        string // ModeHTTP | ModeStdio for containers and services; the transport for files
	ContainerID string
	// ServiceID is the Swarm service a candidate of the swarm source is.
	ServiceID   string
	Image       string
	Group       string
	Description string
	// Fingerprint identifies what was approved: the image and the labels of
	// a container (not its ID or address, so a restart keeps the approval),
	// or the content of a file.
	Fingerprint string
	Spec        *config.Server
}

// LabelError is one bad label.
type LabelError struct {
	Label  string
	Value  string
	Reason string
	// ShowValue adds (got "<Value>") to the message.
	ShowValue bool
}

func (e *LabelError) Error() string {
	if e.ShowValue {
		return fmt.Sprintf("label %s: %s (got %q)", e.Label, e.Reason, e.Value)
	}
	return fmt.Sprintf("label %s: %s", e.Label, e.Reason)
}

// DecodeError lists every problem of one container, so that its labels can
// be fixed in one go.
type DecodeError struct {
	Problems []error
}

func (e *DecodeError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e *DecodeError) Unwrap() []error { return e.Problems }

// Decoder turns container snapshots into candidates. It is pure: no Docker
// call, no clock, no randomness.
type Decoder struct {
	// PreferNetworks are the networks the gateway itself is on, in order of
	// preference: an http candidate is reached on the first of them it
	// shares.
	PreferNetworks []string
}

// Decode is Decoder{}.Decode.
func Decode(c ContainerSnapshot) (Candidate, error) { return Decoder{}.Decode(c) }

// Decode returns the candidate c describes, ErrNotEnabled or ErrNotRunning
// when c is none, or a *DecodeError naming each bad label.
func (d Decoder) Decode(c ContainerSnapshot) (Candidate, error) {
	own := ownLabels(c.Labels)
	switch v, set := own[LabelEnabled]; {
	case !set || v == "false":
		return Candidate{}, ErrNotEnabled
	case !c.Running:
		return Candidate{}, ErrNotRunning
	}

	var problems []error
	bad := func(label, value, reason string) {
		problems = append(problems, &LabelError{Label: label, Value: value, Reason: reason, ShowValue: true})
	}
	if v := own[LabelEnabled]; v != "true" {
		bad(LabelEnabled, v, `must be "true" or "false"`)
	}
	for _, k := range slices.Sorted(maps.Keys(own)) {
		if !slices.Contains(knownLabels, k) {
			problems = append(problems, &LabelError{Label: k, Reason: "unknown"})
		}
	}

	name, set := own[LabelName]
	switch {
	case set && !idRe().MatchString(name):
		bad(LabelName, name, "must match "+idRe().String())
	case !set:
		name = strings.TrimPrefix(c.Name, "/")
		if !idRe().MatchString(name) {
			problems = append(problems, fmt.Errorf("container name %q is not a valid MCP server name (must match %s): set %s", name, idRe(), LabelName))
		}
	}

	mode := ModeHTTP
	if v, set := own[LabelMode]; set {
		switch v {
		case ModeHTTP, ModeStdio:
			mode = v
		default:
			bad(LabelMode, v, "must be http or stdio")
		}
	}

	port, path := defaultPort, defaultPath
	if mode == ModeStdio {
		for _, k := range []string{LabelPort, LabelPath} {
			if v, set := own[k]; set {
				bad(k, v, "not used with mode stdio")
			}
		}
		if !c.OpenStdin {
			problems = append(problems, &LabelError{Label: LabelMode, Value: ModeStdio,
				Reason: reasonNeedsStdin, ShowValue: true})
		}
	} else {
		if v, set := own[LabelPort]; set {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 65535 {
				bad(LabelPort, v, "must be 1..65535")
			}
			port = n
		}
		if v, set := own[LabelPath]; set {
			if !strings.HasPrefix(v, "/") {
				bad(LabelPath, v, "must start with /")
			}
			path = v
		}
	}

	group := own[LabelGroup]
	if group != "" && !idRe().MatchString(group) {
		bad(LabelGroup, group, "must match "+idRe().String())
	}

	var ip string
	if mode == ModeHTTP {
		if ip = d.address(c.Networks); ip == "" {
			problems = append(problems, ErrNoAddress)
		}
	}

	if len(problems) > 0 {
		return Candidate{}, &DecodeError{Problems: problems}
	}

	desc := own[LabelDescription]
	spec := baseSpec(name, SourceDocker, desc)
	// All of the container's labels, for policy rules (server.labels).
	spec.Labels = maps.Clone(c.Labels)
	if mode == ModeStdio {
		spec.Mode = config.ModeDocker
		spec.Transport = config.TransportStdio
		spec.Image = c.Image
		spec.AttachContainer = c.ID
	} else {
		spec.Mode = config.ModeRemote
		spec.Transport = config.TransportHTTP
		spec.Endpoint = "http://" + net.JoinHostPort(ip, strconv.Itoa(port)) + path
	}
	image := c.ImageID
	if image == "" {
		image = c.Image
	}
	return Candidate{
		Name:        name,
		Source:      SourceDocker,
		Mode:        mode,
		ContainerID: c.ID,
		Image:       c.Image,
		Group:       group,
		Description: desc,
		Fingerprint: fingerprint(image, own),
		Spec:        spec,
	}, nil
}

// address picks the IP the gateway reaches the container on: the first
// preferred network the container is on, else the first network by name,
// so that the choice is stable from one scan to the next.
func (d Decoder) address(networks map[string]string) string {
	for _, n := range d.PreferNetworks {
		if ip := networks[n]; ip != "" {
			return ip
		}
	}
	for _, n := range slices.Sorted(maps.Keys(networks)) {
		if ip := networks[n]; ip != "" {
			return ip
		}
	}
	return ""
}

func ownLabels(labels map[string]string) map[string]string {
	own := map[string]string{}
	for k, v := range labels {
		if strings.HasPrefix(k, LabelPrefix) {
			own[k] = v
		}
	}
	return own
}

// baseSpec has the lifecycle defaults of a configured server.
func baseSpec(name, origin, desc string) *config.Server {
	return &config.Server{
		ID:                     name,
		Description:            desc,
		Origin:                 origin,
		Protocol:               config.ProtocolAuto,
		IdleTTL:                defaultIdleTTL,
		HealthCheckInterval:    defaultHealthCheckInterval,
		MaxConsecutiveFailures: defaultMaxConsecutiveFailures,
		MaxConcurrency:         defaultMaxConcurrency,
		StartTimeout:           defaultStartTimeout,
		CallTimeout:            defaultCallTimeout,
		ReadOnly:               true,
	}
}

// fingerprint hashes the image and the discovery labels. Fields are
// NUL-separated so that no two different inputs hash alike.
func fingerprint(image string, own map[string]string) string {
	h := sha256.New()
	h.Write([]byte(image))
	h.Write([]byte{0})
	for _, k := range slices.Sorted(maps.Keys(own)) {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(own[k]))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:fingerprintLen]
}

// contentFingerprint hashes a provider file.
func contentFingerprint(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:fingerprintLen]
}
