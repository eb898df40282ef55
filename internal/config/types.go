// Package config loads, validates and compares hangar's configuration.
//
// The schema is compatible with the Python MCP Hangar's config.yaml: a map of
// MCP servers (alias "providers") plus global sections. Loading is done with
// koanf (YAML file + HANGAR_ environment overrides); every error names the
// key path it is about.
package config

import (
	"encoding/json"
	"time"

	"github.com/mcp-hangar/hangar/internal/policy"
)

// Server modes.
const (
	ModeDocker     = "docker" // alias "container"
	ModeRemote     = "remote"
	ModeSubprocess = "subprocess"
	ModeGroup      = "group"
)

// OriginRegistry is Server.Origin of a server hot-loaded by hangar_load.
const OriginRegistry = "registry"

// Transports between the gateway and a provider.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
	TransportSSE   = "sse"
)

// Handshake preferences for talking to a provider.
const (
	ProtocolAuto   = "auto"   // try initialize, fall back to server/discover
	ProtocolLegacy = "legacy" // initialize only (MCP <= 2025-11-25)
	ProtocolModern = "modern" // server/discover only (MCP 2026-07-28)
)

// Group balancing strategies.
const (
	StrategyRoundRobin         = "round_robin"
	StrategyWeightedRoundRobin = "weighted_round_robin"
	StrategyLeastConnections   = "least_connections"
	StrategyRandom             = "random"
	StrategyPriority           = "priority"
)

// Config is the whole, validated configuration with defaults applied.
type Config struct {
	// Servers is keyed by server ID (the key under mcp_servers/providers).
	Servers      map[string]*Server
	Execution    Execution
	Discovery    Discovery
	Batch        Batch
	Auth         Auth
	ConfigReload Reload
	Logging      Logging
	// Registry is where hangar_load finds MCP servers to hot-load.
	Registry Registry
	// Images governs pulls, allowed registries and signatures.
	Images Images
	// HTTP is the server section: the streamable HTTP endpoint's limits.
	HTTP HTTPServer
	// ToolAccess and FrontDoor decide whether and how provider tools are
	// listed on the gateway's own endpoint.
	ToolAccess ToolAccess
	FrontDoor  FrontDoor
	// DataDir holds state that survives restarts (the store, its lock and
	// keystore key). "" until ResolveDataDir picks the default.
	DataDir string
	// Source is the file the config was read from ("" when built in code).
	Source string
	// Workspace names the one workspace the management protocol serves
	// ("" means the instance name).
	Workspace string
	// Runtimes are images that run package runners (npx, uvx, …) of
	// installed servers, by command name.
	Runtimes map[string]Runtime
	Install  Install
	// Store selects where durable state lives: PostgreSQL (shared by
	// replicas) when it has a URL, else SQLite in DataDir.
	Store Store
	// EgressProxy is how servers with egress get their proxies.
	EgressProxy EgressProxy
	// Telemetry exports OpenTelemetry traces and metrics; off by default.
	Telemetry Telemetry
	// Policy is the gateway's policy over calls (policy:): rules in CEL,
	// compiled by package policy. Its zero value allows every call.
	Policy policy.Spec
}

// Server is one configured MCP server (provider) or group.
type Server struct {
	ID          string
	Mode        string // one of the Mode* constants; "container" is normalised to docker
	Description string

	// docker
	Image     string
	Args      []string // container CMD override
	Volumes   []string // "host:container[:ro]"
	Resources Resources
	Network   string // "" means: none for stdio, the gateway's network for http
	ReadOnly  bool   // default true
	User      string // default "65534:65534"
	// Pull is the pull policy, "" for images.pull; see PullPolicy.
	Pull string
	// RegistryAuth overrides the Docker client config's credentials.
	RegistryAuth *RegistryAuth
	// PinDigest quarantines the server when its image reference starts
	// resolving to another digest (always on for servers not from the
	// config file).
	PinDigest bool
	// Verify overrides images.verify; see VerifyPolicy.
	Verify *Verify
	// AllowDockerSocket lets Volumes mount the Docker engine socket (or a
	// directory holding it). Off by default: a provider holding the socket
	// controls the engine the gateway drives. dockerrt decides what counts
	// as the socket.
	AllowDockerSocket bool
	// Egress, when set, puts the server's containers behind an egress
	// proxy that allows only its list; see Egress.
	Egress *Egress
	// UpstreamAuth is how the gateway gets the token it presents upstream
	// (upstream_auth); nil: none.
	UpstreamAuth *UpstreamAuth
	// EnvFromUpstreamAuth names the container environment variable that
	// receives the caller's upstream token (env_from_upstream_auth); set,
	// the server runs one container per identity.
	EnvFromUpstreamAuth string
	// Package, when set, is an npm or PyPI package the server runs: the
	// gateway builds an image of it once, from the runtime image of its
	// runner, and runs that (package internal/packages); Image is then
	// empty.
	Package *Package

	// subprocess
	Command []string

	// common to processes
	Env map[string]string // values after ${VAR} expansion

	// transport
	Transport string // stdio (default for docker/subprocess) | http | sse
	Port      int    // container HTTP port, default 8080
	Path      string // container HTTP path, default /mcp
	Endpoint  string // remote URL
	Headers   map[string]string
	Protocol  string // ProtocolAuto (default) | ProtocolLegacy | ProtocolModern

	// lifecycle
	IdleTTL                time.Duration // idle_ttl_s, default 300s, 1..86400
	HealthCheckInterval    time.Duration // health_check_interval_s, default 60s, 1..3600
	MaxConsecutiveFailures int           // default 3, 1..100
	MaxConcurrency         int           // default execution.default_provider_concurrency, 1..1000
	StartTimeout           time.Duration // start_timeout_s, default 30s, 1..600
	CallTimeout            time.Duration // call_timeout_s, default 60s, 1..3600

	Tools Tools

	// group only
	Strategy       string
	MinHealthy     int // default 1
	Health         GroupHealth
	CircuitBreaker CircuitBreaker
	Members        []*Server // members carry Weight and Priority

	// group member only
	Weight   int // default 1
	Priority int // default 1

	// AttachContainer is set for servers found by discovery in a running
	// container started with an open stdin: the gateway attaches to that
	// container instead of creating one, and never stops it. Never read
	// from a config file.
	AttachContainer string
	// Prefix replaces the server ID in front-door callable names
	// (prefix:); "" uses the ID.
	Prefix string
	// Hidden keeps the server's tools off the front door (expose: false,
	// allow_implicit_invocation false); hangar_call still reaches it.
	Hidden bool
	// Pinned lists all of the server's tools in front_door discovery
	// "search" (pinned: true); PinnedTools lists only these raw tool names
	// (pinned: [a, b]).
	Pinned      bool
	PinnedTools []string
	// Summary is the server's one line in hangar_find_tools' description
	// (summary:); "" derives one from its tools.
	Summary string

	// Origin says where the server came from: "" (config file), "docker"
	// or "filesystem" (discovery), OriginRegistry (hangar_load).
	Origin string
	// Policy is the server's own policy (policy:, or an install entry's);
	// nil: only the gateway's applies. Package policy says how the two
	// combine.
	Policy *policy.Spec
	// Labels are the labels of a discovered server's container or
	// service (the policy's server.labels); never read from a file.
	Labels map[string]string
}

// Resources are container limits.
type Resources struct {
	MemoryBytes int64 // "512m" → 512<<20; default 512m
	NanoCPUs    int64 // "1.0" → 1e9; default 1.0
	PidsLimit   int64 // default 256
}

// Tools is the tool access policy and, optionally, predefined tool schemas
// that let the gateway list tools without starting the provider.
type Tools struct {
	AllowList  []string // fnmatch patterns
	DenyList   []string // fnmatch patterns
	Predefined []ToolDef
}

// ToolDef is a predefined tool.
type ToolDef struct {
	Name        string
	Description string
	InputSchema json.RawMessage // as written in the config, as JSON
}

// GroupHealth decides when a member leaves or rejoins rotation.
type GroupHealth struct {
	UnhealthyThreshold int // default 2
	HealthyThreshold   int // default 1
}

// CircuitBreaker of a group.
type CircuitBreaker struct {
	FailureThreshold int           // default 10
	ResetTimeout     time.Duration // reset_timeout_s, default 60s
}

// Execution holds system-wide limits.
type Execution struct {
	MaxConcurrency             int // default 50, 1..10000
	DefaultProviderConcurrency int // default 10, 1..1000
	// MaxRequestBodyBytes bounds an HTTP request body (default 16 MiB):
	// a larger one is refused with 413 before it is read.
	MaxRequestBodyBytes int
}

// Discovery configures discovery sources.
type Discovery struct {
	Enabled         bool
	RefreshInterval time.Duration // refresh_interval_s, default 30s
	AutoRegister    bool
	Sources         []Source
	Security        DiscoverySecurity
}

// Source is one discovery source.
type Source struct {
	Type    string // docker | swarm | filesystem
	Mode    string // additive (default) | authoritative
	Path    string // filesystem
	Pattern string // filesystem, default "*.yaml"
	Watch   bool   // filesystem
	// Filters narrow a docker or swarm source (swarm: labels and
	// networks only).
	Filters SourceFilters
}

// Values of SourceFilters.ComposeProject besides a project name.
const (
	// ComposeAuto: the compose project of the gateway's own container, or
	// every project when the gateway does not run in one.
	ComposeAuto = "auto"
	// ComposeAny: containers of any compose project, or of none.
	ComposeAny = "*"
)

// SourceFilters narrow which labelled containers a docker source sees; a
// container must pass all of them.
type SourceFilters struct {
	ComposeProject string            // ComposeAuto (default), ComposeAny or a project name
	Labels         map[string]string // each label present; with a non-empty value, equal to it
	Networks       []string          // on at least one of these networks (none: any)
}

// DiscoverySecurity decides what happens to candidates that fail checks.
type DiscoverySecurity struct {
	RequireHealthCheck  bool
	QuarantineOnFailure bool // default true
}

// Batch limits for hangar_call.
type Batch struct {
	MaxCalls                 int           // default 100
	MaxConcurrency           int           // default 50
	DefaultTimeout           time.Duration // default 60s
	MaxTimeout               time.Duration // default 300s
	MaxResponseSizeBytes     int           // default 10 MiB
	MaxTotalResponseSizeByte int           // default 50 MiB
	// MaxContinuationBytes bounds the continuation store (default 256 MiB);
	// a truncated result that does not fit is reported as an error.
	MaxContinuationBytes int
	ContinuationTTL      time.Duration // continuation_ttl_s, default 600s
}

// Auth configures the HTTP endpoint's authentication and rate limit
// (auth.go has the parts beyond the rate limit).
type Auth struct {
	// Enabled: false turns rate limiting off (the key predates tokens;
	// authentication itself is decided by Tokens, OIDC and AllowAnonymous).
	Enabled   bool // default true
	RateLimit RateLimit

	Tokens         []Token
	APIKeyHeader   string // default X-API-Key
	OIDC           OIDC   // off when Issuer is ""
	AllowAnonymous bool
	GenerateToken  GenerateToken // off when File is ""
}

// RateLimit per client bucket.
type RateLimit struct {
	RPS   float64 // default 10
	Burst int     // default 20
}

// Reload configures watching the config file.
type Reload struct {
	Enabled  bool
	Interval time.Duration // interval_s, default 5s
}

// Logging configures slog.
type Logging struct {
	Level      string // DEBUG | INFO | WARN | ERROR, default INFO
	JSONFormat bool   // default true
}

// Registry configures hot-loading (hangar_load): the MCP registry to search
// and an optional local catalog consulted first. Hot-loading is off when
// both URL and CatalogFile are empty.
type Registry struct {
	// URL of an MCP registry (the official one by default); "" searches
	// the catalog file only.
	URL string
	// CatalogFile is a JSON file of server.json documents (a list of them,
	// of registry entries {server, _meta}, or a registry answer
	// {servers: [...]}), read at every search; "" for none.
	CatalogFile string
	// VerifiedNamespaces are the name prefixes whose servers count as
	// verified: "io.github.acme/" (a namespace; written without the slash
	// it means the same) or "io.github.acme/weather" (one server).
	VerifiedNamespaces []string
	Timeout            time.Duration // timeout_s: per registry request, default 10s
	MaxHotLoaded       int           // default 20
	IdleTTL            time.Duration // idle_ttl_s: of hot-loaded servers, default 300s
	// PackageTypes are the package types hot-loading runs, in order of
	// preference when an entry publishes several (default oci, npm,
	// pypi); a type not listed is never run.
	PackageTypes []string
}

// Enabled reports whether hot-loading has anywhere to look.
func (r Registry) Enabled() bool { return r.URL != "" || r.CatalogFile != "" }
