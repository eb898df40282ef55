package app

import (
	"context"
	"errors"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
)

// ErrExposedWithoutAuth refuses to serve a non-loopback address with no
// way to authenticate callers: the gateway holds the Docker socket.
var ErrExposedWithoutAuth = errors.New("refusing to listen on a non-loopback address without authentication: " +
	"configure auth.tokens, auth.oidc or auth.generate_token, or set auth.allow_anonymous: true")

// AuthHTTP builds the HTTP endpoint's authentication for a listener at
// addr, creating the generated token file if the config asks for one.
func (a *App) AuthHTTP(addr net.Addr) (*auth.HTTP, error) {
	c := a.Config.Auth
	var extra []config.Token
	if c.GenerateToken.File != "" {
		t, created, err := auth.EnsureTokenFile(c.GenerateToken)
		if err != nil {
			return nil, err
		}
		if created {
			a.Log.Info("generated an access token", "file", c.GenerateToken.File, "identity", t.Name, "scopes", t.Scopes)
		} else {
			a.Log.Info("using the generated access token", "file", c.GenerateToken.File, "identity", t.Name)
		}
		extra = append(extra, t)
	}
	authn := auth.NewAuthenticator(a.ctx, c, auth.Options{Extra: extra})
	a.pruneUpstream(authn)
	loopback := isLoopback(addr)
	if !loopback && !authn.HasCredentials() {
		if !c.AllowAnonymous {
			return nil, ErrExposedWithoutAuth
		}
		a.Log.Warn("serving without authentication on a non-loopback address (auth.allow_anonymous: true): anyone who reaches it may start containers",
			"listen", addr.String())
	}
	h := &auth.HTTP{
		Auth:           authn,
		RateLimit:      c.RateLimit,
		APIKeyHeader:   c.APIKeyHeader,
		Loopback:       loopback,
		AllowAnonymous: c.AllowAnonymous,
		Resource:       c.OIDC.Audience,
		Log:            a.Log.With("component", "auth"),
	}
	if c.Enabled {
		h.Limiter = a.Gateway.RateLimiter
	}
	if c.OIDC.Issuer != "" {
		h.AuthorizationServers = []string{c.OIDC.Issuer}
	}
	// Tokens, OIDC, the rate limit, the API key header and anonymous
	// access follow a reload (a revoked token stops working at once). A
	// reload that leaves an exposed endpoint with no way in fails closed:
	// every request is refused until the config gives credentials again.
	a.Gateway.OnConfig = func(next *config.Config) {
		nc := next.Auth
		authn := auth.NewAuthenticator(a.ctx, nc, auth.Options{Extra: extra})
		if !loopback && !authn.HasCredentials() && !nc.AllowAnonymous {
			a.Log.Error("the reloaded config has no credentials and no anonymous access on a non-loopback address: every request is refused until it has",
				"listen", addr.String())
		}
		h.Reload(auth.Settings{Auth: authn, RateLimit: nc.RateLimit, APIKeyHeader: nc.APIKeyHeader, AllowAnonymous: nc.AllowAnonymous})
		a.pruneUpstream(authn)
		// The other replicas reload theirs (tokens revoked here stop
		// working there too).
		a.configReloaded()
	}
	return h, nil
}

// hostPolicy is the Host names the endpoint answers: loopback names on a
// loopback listener, server.allowed_hosts, and, where names are checked
// at all, the host of server.public_url (where browsers come back from an
// OAuth login). public_url alone does not turn the check on for a
// listener on another address: agents reach it by other names.
func hostPolicy(loopback bool, h config.HTTPServer) endpoint.HostPolicy {
	p := endpoint.HostPolicy{Loopback: loopback, Allowed: h.AllowedHosts}
	if u, err := url.Parse(h.PublicURL); err == nil && u.Hostname() != "" && (loopback || len(h.AllowedHosts) > 0) {
		p.Allowed = append(slices.Clip(p.Allowed), strings.ToLower(u.Hostname()))
	}
	return p
}

func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// stdioTrust marks every stdio request as the local user's: whoever can
// write to our stdin started us.
func stdioTrust() server.StdioOption {
	return server.WithStdioContextFunc(func(ctx context.Context) context.Context {
		return auth.WithIdentity(ctx, auth.Local(auth.KindLocal))
	})
}
