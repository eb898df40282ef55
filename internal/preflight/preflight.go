// Package preflight checks a loaded configuration against the world it will
// run in: the Docker engine (images) and the host filesystem (bind-mount
// sources), plus rules that need neither (the Docker socket). It backs
// `hangar config check`. Each check is a small function in a list, so that
// later work (image pulls, signatures) adds or replaces a check without
// touching the others.
package preflight

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"time"

	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/config"
)

// Engine is the part of the Docker Engine client the checks use; the real
// *client.Client satisfies it.
type Engine interface {
	ImageInspect(ctx context.Context, image string, opts ...client.ImageInspectOption) (client.ImageInspectResult, error)
}

var _ Engine = (*client.Client)(nil)

// ImageChecker tells whether a server's image is present or can be pulled.
type ImageChecker interface {
	Available(ctx context.Context, s *config.Server) error
}

// Host is the filesystem of the machine the engine runs on, where bind-mount
// sources are resolved.
type Host interface {
	Stat(path string) (fs.FileInfo, error)
	EvalSymlinks(path string) (string, error)
}

// Env is what the checks can reach. A nil Engine or Host skips the checks
// that need it, and the reason is reported instead of a silent pass.
type Env struct {
	Engine Engine
	// Images, when set, decides whether an image is present or pullable
	// (the gateway's image gate); nil checks presence on Engine only.
	Images   ImageChecker
	NoEngine string // why Engine is nil, e.g. "cannot reach the Docker engine at unix:///var/run/docker.sock: ..."
	// Runtimes is the config's runtimes: section: the image an npm or
	// PyPI server's image is built from is its runner's.
	Runtimes map[string]config.Runtime
	Host     Host
	NoHost   string // why Host is nil
}

// Problem is one thing to fix, named by its key path.
type Problem struct {
	Path string // e.g. mcp_servers.fs.volumes[0]
	Msg  string // what is wrong
	Fix  string // what to do about it
}

func (p Problem) String() string { return p.Path + ": " + p.Msg + "; " + p.Fix }

// Needs says what a check must be able to reach.
type Needs int

// What a check needs.
const (
	NeedsNothing Needs = iota
	NeedsEngine
	NeedsHost
)

// Target is one docker-mode server (a top-level one or a group member) and
// the key path it was configured at.
type Target struct {
	Path   string // mcp_servers.<id> or mcp_servers.<group>.members[<i>]
	Server *config.Server
}

// Check is one check of a docker-mode server.
type Check struct {
	Name  string // what is checked, shown when the check is skipped
	Needs Needs
	Run   func(ctx context.Context, env Env, t Target) []Problem
}

// Report is the outcome of Run.
type Report struct {
	Problems []Problem
	// Skipped lists checks that could not run, each with its reason.
	Skipped []string
	// Checked is the number of docker-mode servers looked at.
	Checked int
}

// Run applies checks to every docker-mode server of cfg, in server order.
func Run(ctx context.Context, cfg *config.Config, env Env, checks []Check) Report {
	targets := Targets(cfg)
	r := Report{Checked: len(targets)}
	if len(targets) == 0 {
		return r
	}
	for _, c := range checks {
		switch {
		case c.Needs == NeedsEngine && env.Engine == nil:
			r.Skipped = append(r.Skipped, fmt.Sprintf("%s not checked: %s", c.Name, orUnknown(env.NoEngine)))
		case c.Needs == NeedsHost && env.Host == nil:
			r.Skipped = append(r.Skipped, fmt.Sprintf("%s not checked: %s", c.Name, orUnknown(env.NoHost)))
		}
	}
	for _, t := range targets {
		for _, c := range checks {
			if (c.Needs == NeedsEngine && env.Engine == nil) || (c.Needs == NeedsHost && env.Host == nil) {
				continue
			}
			r.Problems = append(r.Problems, c.Run(ctx, env, t)...)
		}
	}
	return r
}

func orUnknown(s string) string {
	if s == "" {
		return "unavailable"
	}
	return s
}

// Targets lists the docker-mode servers of cfg, group members included,
// sorted by key path.
func Targets(cfg *config.Config) []Target {
	var out []Target
	for _, id := range slices.Sorted(maps.Keys(cfg.Servers)) {
		s := cfg.Servers[id]
		p := "mcp_servers." + id
		if s.Mode == config.ModeDocker && s.AttachContainer == "" {
			out = append(out, Target{Path: p, Server: s})
		}
		for i, m := range s.Members {
			if m.Mode == config.ModeDocker {
				out = append(out, Target{Path: fmt.Sprintf("%s.members[%d]", p, i), Server: m})
			}
		}
	}
	return out
}

// inspectTimeout bounds each engine call; a hung engine must not hang the
// command.
const inspectTimeout = 10 * time.Second
