// Package store is hangar's durable state: decisions that must survive a
// restart (approvals, quarantine), installed servers, tool pins, image
// digests, cached catalogs, the audit trail, the keystore and the snapshot
// counter. It is the one package that knows SQL; everything else sees the
// narrow interfaces below, declared by concern so a caller asks for only
// what it uses (and a test fakes only that).
//
// Two drivers share one implementation of the queries (sqlstore.go, with
// the dialects' differences in dialect.go and the same numbered
// migrations): SQLite (modernc.org/sqlite, WAL) in the data directory, the
// default, and PostgreSQL (pgx), which gateway replicas share.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrNotFound is returned by single-row lookups that find nothing.
var ErrNotFound = errors.New("store: not found")

// Decision kinds.
const (
	DecisionApproved    = "approved"
	DecisionQuarantined = "quarantined"
)

// Decision is an operator's (or the gateway's) verdict on a server that
// did not come from the config file: a discovered container, a hot-loaded
// or installed server. Key is the server ID; Fingerprint identifies what
// was decided on (a changed container gets asked about again).
type Decision struct {
	Key         string
	Kind        string // DecisionApproved | DecisionQuarantined
	Fingerprint string
	Source      string // catalog source: discovery, hotload, installed, …
	Reason      string // quarantine reason: image_changed, tool_schema_changed, …
	Detail      string // human-readable detail (a diff, an error)
	At          time.Time
}

// Decisions are approvals and quarantine records, one per key and kind.
type Decisions interface {
	Decisions(ctx context.Context) ([]Decision, error)
	PutDecision(ctx context.Context, d Decision) error
	DeleteDecision(ctx context.Context, key, kind string) error
}

// Install is a server installed through the management protocol.
type Install struct {
	Name          string
	Config        json.RawMessage // the mcpServers entry, secret values replaced by keystore refs
	Enabled       bool
	AllowImplicit bool
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Installs are the installed servers.
type Installs interface {
	Installs(ctx context.Context) ([]Install, error)
	PutInstall(ctx context.Context, in Install) error
	DeleteInstall(ctx context.Context, name string) error
}

// ToolPin is the recorded hash of one provider tool (name, description,
// schemas), the rug-pull defence.
type ToolPin struct {
	Server     string
	Tool       string
	Hash       string
	Definition json.RawMessage // the tool as pinned, for a readable diff
	PinnedAt   time.Time
}

// Pins are tool pins by server; a server's set is replaced whole.
type Pins interface {
	ToolPins(ctx context.Context, server string) ([]ToolPin, error)
	ReplaceToolPins(ctx context.Context, server string, pins []ToolPin) error
}

// ImageDigest is the digest an image reference resolved to when a server
// was approved.
type ImageDigest struct {
	Server     string
	Ref        string
	Digest     string
	ApprovedAt time.Time
}

// Digests are the approved image digests by server.
type Digests interface {
	ImageDigest(ctx context.Context, server string) (ImageDigest, error) // ErrNotFound when none
	PutImageDigest(ctx context.Context, d ImageDigest) error
	DeleteImageDigest(ctx context.Context, server string) error
}

// PackagePin is what a server's npm or PyPI package was resolved to: the
// exact version of its requested range (Spec) and that version's digest,
// which every later install of it must match, and the image built of it.
type PackagePin struct {
	Server     string
	Type       string // npm | pypi
	Name       string
	Spec       string // the version or range asked for ("" is the latest)
	Version    string
	Integrity  string // npm's dist.integrity (sha512-…), or sha256:… of a PyPI file
	File       string // the tarball's URL, or the PyPI file's name
	Image      string // the image built of it
	ResolvedAt time.Time
}

// PackagePins are the package pins by server.
type PackagePins interface {
	PackagePin(ctx context.Context, server string) (PackagePin, error) // ErrNotFound when none
	PackagePins(ctx context.Context) ([]PackagePin, error)
	PutPackagePin(ctx context.Context, p PackagePin) error
	DeletePackagePin(ctx context.Context, server string) error
}

// Hotload is a server hot-loaded (hangar_load) on the replicas of an
// instance and not unloaded: the load's parameters, never a secret.
type Hotload struct {
	Name            string // the registry name the load resolved to
	ForceUnverified bool
	AllowTools      []string
	DenyTools       []string
	LoadedAt        time.Time
}

// Hotloads are the hot-loads every replica of an instance runs. A write
// notifies the other replicas (ChangeHotload, with the name).
type Hotloads interface {
	Hotloads(ctx context.Context) ([]Hotload, error) // by name
	PutHotload(ctx context.Context, h Hotload) error
	DeleteHotload(ctx context.Context, name string) error
	// ClearHotloads forgets them all: they are ephemeral, and go with the
	// last replica of the instance.
	ClearHotloads(ctx context.Context) error
}

// CachedCatalog is a provider's catalog (tools, resources, templates,
// prompts as raw MCP JSON) from the last time it ran.
type CachedCatalog struct {
	Server      string
	Version     string // catalog_version: a hash of Catalog
	ImageDigest string // the image it was read from, "" when not a container
	Catalog     json.RawMessage
	UpdatedAt   time.Time
}

// Catalogs are the cached provider catalogs.
type Catalogs interface {
	Catalog(ctx context.Context, server string) (CachedCatalog, error) // ErrNotFound when none
	PutCatalog(ctx context.Context, c CachedCatalog) error
	DeleteCatalog(ctx context.Context, server string) error
}

// AuditEntry is one decision on a tool call or a policy change. It never
// holds a secret or an argument value.
type AuditEntry struct {
	ID         int64
	At         time.Time
	Server     string
	Identity   string // token name or JWT subject, "anonymous"
	Action     string // tools/call, mcp/policy/set, …
	Tool       string
	Allowed    bool
	Reason     string // why denied, or the policy that allowed
	Outcome    string // ok, error, timeout, …
	DurationMs float64
	// Rule is the policy rule that decided the call ("" when none did:
	// no policy, or its default); a server's own rules are named
	// "<server>/<rule>".
	Rule string
}

// Audit is the audit trail, bounded per server (oldest dropped first).
type Audit interface {
	AppendAudit(ctx context.Context, e AuditEntry) error
	RecentAudit(ctx context.Context, server string, limit int) ([]AuditEntry, error) // newest first
}

// Secrets is the keystore: values encrypted at rest (AES-256-GCM), by ref.
type Secrets interface {
	PutSecret(ctx context.Context, ref string, value []byte) error
	Secret(ctx context.Context, ref string) ([]byte, error) // ErrNotFound when none
	DeleteSecrets(ctx context.Context, refPrefix string) error
	// DeleteSecret removes the value under ref exactly (none is no error):
	// a ref is not a prefix, "…/git" is not "…/github".
	DeleteSecret(ctx context.Context, ref string) error
	// TakeSecret opens and removes the value under ref in one step: of
	// takers racing for it (replicas sharing the store included) exactly
	// one gets it, the others ErrNotFound.
	TakeSecret(ctx context.Context, ref string) ([]byte, error)
	// SecretRefs lists the refs that start with refPrefix, sorted; never
	// their values.
	SecretRefs(ctx context.Context, refPrefix string) ([]string, error)
}

// Snapshots is the management protocol's snapshot_version: one counter,
// strictly increasing, never going back after a restart.
type Snapshots interface {
	SnapshotVersion(ctx context.Context) (uint64, error)
	NextSnapshotVersion(ctx context.Context) (uint64, error)
}

// Store is all of it, as the app holds it.
type Store interface {
	Decisions
	Installs
	Pins
	Digests
	PackagePins
	Hotloads
	Catalogs
	Audit
	Secrets
	Snapshots
	// Path is the database file ("" for an in-memory store), or the
	// PostgreSQL URL without its password.
	Path() string
	// LastWriteError is the last run-time write failure, nil once a later
	// write succeeds (hangar_health shows it).
	LastWriteError() error
	Close() error
}
