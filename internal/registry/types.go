// Package registry is hangar's hot-loading: it finds MCP servers in an MCP
// registry (the official one speaks GET /v0.1/servers) or in a local
// catalog file, turns a server.json into a provider spec (Resolve, a pure
// function), and loads and unloads such servers at runtime (Loader, behind
// hangar_load and hangar_unload).
//
// Hot-loaded servers run like any other provider: an OCI image becomes a
// docker server under the gateway's hardening, a remote endpoint a remote
// server. They are ephemeral: kept in memory only, gone after a restart.
package registry

import (
	"encoding/json"
	"strings"
)

// Package registry types (server.json packages[].registryType).
const (
	RegistryTypeOCI   = "oci"
	RegistryTypeNPM   = "npm"
	RegistryTypePyPI  = "pypi"
	RegistryTypeNuGet = "nuget"
	RegistryTypeMCPB  = "mcpb"
)

// server.json transport types.
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// Official lifecycle statuses (_meta official status).
const (
	StatusActive     = "active"
	StatusDeprecated = "deprecated"
	StatusDeleted    = "deleted"
)

// MetaOfficial is the _meta key under which the official registry puts its
// own data about an entry.
const MetaOfficial = "io.modelcontextprotocol.registry/official"

// ServerJSON is the part of a server.json document hangar reads.
type ServerJSON struct {
	Schema      string      `json:"$schema,omitempty"`
	Name        string      `json:"name"`
	Title       string      `json:"title,omitempty"`
	Description string      `json:"description,omitempty"`
	Version     string      `json:"version,omitempty"`
	Packages    []Package   `json:"packages,omitempty"`
	Remotes     []Transport `json:"remotes,omitempty"`
	// Meta is the entry's _meta; hangar reads MetaEgress from it.
	Meta map[string]json.RawMessage `json:"_meta,omitempty"`
}

// Package is one way to run the server locally.
type Package struct {
	RegistryType    string `json:"registryType"`
	RegistryBaseURL string `json:"registryBaseUrl,omitempty"`
	// Identifier is the package name, or for OCI the image reference
	// (with its tag in current schemas, without it in older ones).
	Identifier           string          `json:"identifier"`
	Version              string          `json:"version,omitempty"`
	RuntimeHint          string          `json:"runtimeHint,omitempty"`
	Transport            Transport       `json:"transport"`
	RuntimeArguments     []Argument      `json:"runtimeArguments,omitempty"`
	PackageArguments     []Argument      `json:"packageArguments,omitempty"`
	EnvironmentVariables []KeyValueInput `json:"environmentVariables,omitempty"`
}

// Transport is a package's transport or a remote endpoint.
type Transport struct {
	Type      string           `json:"type"`
	URL       string           `json:"url,omitempty"`
	Headers   []KeyValueInput  `json:"headers,omitempty"`
	Variables map[string]Input `json:"variables,omitempty"`
}

// Input is a value the server needs: fixed (Value, possibly with {var}
// placeholders filled from Variables), defaulted, or to be supplied.
type Input struct {
	Description string           `json:"description,omitempty"`
	IsRequired  bool             `json:"isRequired,omitempty"`
	IsSecret    bool             `json:"isSecret,omitempty"`
	Format      string           `json:"format,omitempty"`
	Value       string           `json:"value,omitempty"`
	Default     string           `json:"default,omitempty"`
	Placeholder string           `json:"placeholder,omitempty"`
	Choices     []string         `json:"choices,omitempty"`
	Variables   map[string]Input `json:"variables,omitempty"`
}

// KeyValueInput is an environment variable or a header.
type KeyValueInput struct {
	Input
	Name string `json:"name"`
}

// Argument is a runtime or package argument.
type Argument struct {
	Input
	Type       string `json:"type"` // positional | named
	Name       string `json:"name,omitempty"`
	ValueHint  string `json:"valueHint,omitempty"`
	IsRepeated bool   `json:"isRepeated,omitempty"`
}

// Official is the official registry's data about an entry.
type Official struct {
	Status      string `json:"status,omitempty"`
	PublishedAt string `json:"publishedAt,omitempty"`
	UpdatedAt   string `json:"updatedAt,omitempty"`
	IsLatest    bool   `json:"isLatest,omitempty"`
}

// Sources of an entry.
const (
	SourceRegistry = "registry"
	SourceCatalog  = "catalog"
)

// Entry is one server found by a search.
type Entry struct {
	Server ServerJSON
	// Official is nil when the entry carries no official metadata (a
	// catalog entry written by hand).
	Official *Official
	// Source is SourceRegistry or SourceCatalog.
	Source string
}

// Namespace is the part of the name before the last "/".
func (e Entry) Namespace() string {
	if i := strings.LastIndexByte(e.Server.Name, '/'); i >= 0 {
		return e.Server.Name[:i]
	}
	return ""
}

// ShortName is the last segment of the name.
func (e Entry) ShortName() string { return lastSegment(e.Server.Name) }

func lastSegment(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}
