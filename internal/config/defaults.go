package config

import (
	"os"
	"time"
)

// DefaultRegistryURL is the official MCP registry.
const DefaultRegistryURL = "https://registry.modelcontextprotocol.io"

const defaultUser = "65534:65534" // nobody:nogroup, so a provider never runs as root by accident

// Default returns a configuration with no servers and every default
// applied, for callers that build their configuration in code. As in a
// loaded config, $HANGAR_DATA_DIR overrides the data directory.
func Default() *Config {
	c := defaults()
	if dir := os.Getenv("HANGAR_DATA_DIR"); dir != "" {
		c.DataDir = dir
	}
	return c
}

func defaults() *Config {
	return &Config{
		Servers: map[string]*Server{},
		Execution: Execution{
			MaxConcurrency:             50,
			DefaultProviderConcurrency: 10,
			MaxRequestBodyBytes:        16 << 20,
		},
		Discovery: Discovery{
			RefreshInterval: 30 * time.Second,
			Security:        DiscoverySecurity{RequireHealthCheck: true, QuarantineOnFailure: true},
		},
		Batch: Batch{
			MaxCalls:                 100,
			MaxConcurrency:           50,
			DefaultTimeout:           60 * time.Second,
			MaxTimeout:               300 * time.Second,
			MaxResponseSizeBytes:     10 << 20,
			MaxTotalResponseSizeByte: 50 << 20,
			MaxContinuationBytes:     256 << 20,
			ContinuationTTL:          600 * time.Second,
		},
		Auth:         Auth{Enabled: true, RateLimit: RateLimit{RPS: 10, Burst: 20}, APIKeyHeader: "X-API-Key"},
		ConfigReload: Reload{Interval: 5 * time.Second},
		Logging:      Logging{Level: "INFO", JSONFormat: true},
		Registry: Registry{
			URL:                DefaultRegistryURL,
			VerifiedNamespaces: []string{"io.github.modelcontextprotocol/", "io.modelcontextprotocol/"},
			Timeout:            10 * time.Second,
			MaxHotLoaded:       20,
			IdleTTL:            300 * time.Second,
			PackageTypes:       []string{PackageOCI, PackageNPM, PackagePyPI},
		},
		// DataDir "" is resolved at start-up (ResolveDataDir), since the
		// default depends on the instance name.
		Images:     Images{Pull: PullIfNotPresent, AllowedRegistries: []string{"*"}},
		HTTP:       defaultHTTPServer(),
		ToolAccess: ToolAccess{Mode: AccessFrontDoor},
		FrontDoor:  FrontDoor{Naming: NamingPrefixed, Prefetch: true, Discovery: DiscoveryList},
	}
}

// defaultServer fills only the fields that apply to mode, so that a field's
// zero value means "not applicable" rather than "forgot the default".
func defaultServer(mode string, exec Execution, member bool) *Server {
	s := &Server{Mode: mode}
	if member {
		s.Weight, s.Priority = 1, 1
	}
	switch mode {
	case ModeDocker, ModeSubprocess, ModeRemote:
		s.Protocol = ProtocolAuto
		s.IdleTTL = 300 * time.Second
		s.HealthCheckInterval = 60 * time.Second
		s.MaxConsecutiveFailures = 3
		s.MaxConcurrency = exec.DefaultProviderConcurrency
		s.StartTimeout = 30 * time.Second
		s.CallTimeout = 60 * time.Second
	case ModeGroup:
		s.Strategy = StrategyRoundRobin
		s.MinHealthy = 1
		s.Health = GroupHealth{UnhealthyThreshold: 2, HealthyThreshold: 1}
		s.CircuitBreaker = CircuitBreaker{FailureThreshold: 10, ResetTimeout: 60 * time.Second}
	}
	switch mode {
	case ModeDocker:
		s.ReadOnly = true
		s.User = defaultUser
		s.Resources = Resources{MemoryBytes: 512 << 20, NanoCPUs: 1e9, PidsLimit: 256}
		fallthrough
	case ModeSubprocess:
		s.Transport = TransportStdio
		s.Port = 8080
		s.Path = "/mcp"
	case ModeRemote:
		s.Transport = TransportHTTP
	}
	return s
}
