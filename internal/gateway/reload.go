package gateway

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/policy"
)

// ReasonReload is the stop reason of providers a reload removes or changes.
const ReasonReload = "config_reload"

// ReloadResult is hangar_reload_config's answer.
type ReloadResult struct {
	Status     string   `json:"status"`
	Message    string   `json:"message"`
	Added      []string `json:"mcp_servers_added"`
	Removed    []string `json:"mcp_servers_removed"`
	Updated    []string `json:"mcp_servers_updated"`
	Unchanged  []string `json:"mcp_servers_unchanged"`
	DurationMs float64  `json:"duration_ms"`
	ErrorType  string   `json:"error_type,omitempty"`
}

// Reload re-reads the config file and applies the difference: removed and
// changed providers and groups are stopped (gracefully: after their calls
// in flight), new and changed ones are registered COLD, unchanged ones are
// not touched. A group counts as one server: any change to it or to one of
// its members replaces the group and all its members.
// A config that does not load leaves everything as it was.
func (g *Gateway) Reload(ctx context.Context, graceful bool) ReloadResult {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	began := time.Now()
	old := g.Config()
	res := ReloadResult{}
	finish := func() ReloadResult {
		res.DurationMs = float64(time.Since(began).Microseconds()) / 1000
		return res
	}
	if old.Source == "" {
		res.Status, res.ErrorType, res.Message = "failed", "no_config_file", "the running config was not read from a file"
		return finish()
	}
	next, err := config.Load(old.Source)
	if err != nil {
		res.Status, res.Message = "failed", "configuration rejected, the running configuration stays in force: "+err.Error()
		res.ErrorType = "invalid_config"
		var ve *config.ValidationError
		if !errors.As(err, &ve) {
			res.ErrorType = "read_error"
		}
		g.Log.Warn("config reload rejected", "error", err)
		return finish()
	}
	config.KeepDataDir(g.Log, old, next)
	// The loader compiled the rules already; compiled again here for use.
	// A policy that does not compile leaves everything as it was.
	p, err := policy.Compile(next.Policy)
	if err != nil {
		res.Status, res.ErrorType = "failed", "invalid_config"
		res.Message = "configuration rejected, the running configuration stays in force: policy: " + err.Error()
		g.Log.Warn("config reload rejected", "error", err)
		return finish()
	}
	d := config.Diff(old, next)
	res.Added, res.Removed, res.Updated, res.Unchanged = nonNil(d.Added), nonNil(d.Removed), nonNil(d.Updated), nonNil(d.Unchanged)

	// The catalog stops what is removed or changed (gracefully: after its
	// calls in flight), then registers what is new. A discovered or
	// hot-loaded server of the same name gives way to the file.
	g.Catalog.PublishConfig(ctx, next, ReasonReload, graceful)
	g.setConfig(next)
	g.setBatchLimits(next)
	if !reflect.DeepEqual(old.Policy, next.Policy) {
		g.Policy.Set(p)
		if g.FrontDoor != nil {
			g.FrontDoor.PolicyChanged() // other tools may be hidden now
		}
		g.Log.Info("policy reloaded", "rules", len(next.Policy.Rules), "default", p.Default())
	}
	res.Status = "success"
	res.Message = fmt.Sprintf("Configuration reloaded: %d added, %d removed, %d updated, %d unchanged",
		len(d.Added), len(d.Removed), len(d.Updated), len(d.Unchanged))
	g.Log.Info("config reloaded", "added", d.Added, "removed", d.Removed, "updated", d.Updated)
	return finish()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// WatchConfig reloads when the config file's content changes, checking
// every interval (config.WatchFile), until ctx ends.
func (g *Gateway) WatchConfig(ctx context.Context, interval time.Duration) {
	path := g.Config().Source
	if path == "" {
		return
	}
	config.WatchFile(ctx, path, interval, func() {
		r := g.Reload(ctx, true)
		g.Log.Info("config file changed", "status", r.Status, "message", r.Message)
	})
}
