package app

import (
	"context"
	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/backend"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/upstreamauth"
)

// setUpUpstreamAuth builds the OAuth client and token vault of callers'
// upstream credentials (upstream_auth) on the keystore, and gives it to
// the launcher.
func (a *App) setUpUpstreamAuth(launcher *backend.Launcher) {
	log := a.Log.With("component", "upstream_auth")
	a.UpstreamAuth = upstreamauth.New(upstreamauth.Options{
		Secrets:   a.Store,
		PublicURL: a.publicURL,
		Spec: func(id string) (*config.Server, bool) {
			p, ok := a.Providers.Get(id)
			if !ok {
				return nil, false
			}
			return p.Spec(), true
		},
		Record: func(ctx context.Context, e store.AuditEntry) { audit.Record(ctx, log, log, a.Gateway.AuditStore, e) },
		Count:  a.Metrics.UpstreamAuth,
		Completed: func(session, elicitationID string) {
			// The client that was sent the link learns the login is done
			// (MCP's notifications/elicitation/complete); a session of
			// another replica does not hear it, and retries anyway.
			if a.MCP != nil {
				_ = a.MCP.SendNotificationToSpecificClient(session, "notifications/elicitation/complete",
					map[string]any{"elicitationId": elicitationID})
			}
		},
		Log: log,
	})
	launcher.Credentials = a.UpstreamAuth
}

// publicURL is where browsers reach the gateway: server.public_url, else
// the address it listens on.
func (a *App) publicURL() string {
	if u := a.Gateway.Config().HTTP.PublicURL; u != "" {
		return u
	}
	if l, _ := a.listen.Load().(string); l != "" {
		return upstreamauth.PublicURLOf(l)
	}
	return ""
}

// pruneUpstream drops, in the background, the upstream credentials of
// static tokens authn no longer has: a removed hangar token's logins go
// with it.
func (a *App) pruneUpstream(authn *auth.Authenticator) {
	if a.UpstreamAuth == nil {
		return
	}
	a.goOwned(func() {
		n, err := a.UpstreamAuth.Prune(a.ctx, func(s upstreamauth.Subject) bool {
			return s.Kind != auth.KindToken || authn.HasToken(s.Name, s.Issuer)
		})
		switch {
		case err != nil:
			a.Log.Warn("upstream credentials of removed tokens not dropped", "error", err)
		case n > 0:
			a.Log.Info("dropped the upstream credentials of removed tokens", "count", n)
		}
	})
}
