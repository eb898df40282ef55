package app

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/egress"
	"github.com/mcp-hangar/hangar/internal/metrics"
	"github.com/mcp-hangar/hangar/internal/preflight"
	"github.com/mcp-hangar/hangar/internal/store"
)

// Audit action of a connection an egress proxy refused; the identity is
// the provider, not a caller.
const (
	actionEgress   = "egress"
	egressIdentity = "provider"
	// recentRefusals is how many refusals hangar_details shows per server.
	recentRefusals = 20
)

// egressRefusals takes the refusals proxies report to the log, /metrics,
// the audit trail and hangar_details.
type egressRefusals struct {
	a       *App
	metrics *metrics.Egress
	mu      sync.Mutex
	recent  map[string][]map[string]any // server → newest last
}

// setUpEgress wires the egress proxies: image, networks, refusal reports.
func (a *App) setUpEgress(ctx context.Context, cfg *config.Config) {
	a.egressLog = &egressRefusals{a: a, metrics: metrics.NewEgress(a.Metrics.Registry), recent: map[string][]map[string]any{}}
	a.Egress = dockerrt.NewEgress(a.Runtime, a.docker, a.egressImage(ctx, cfg), cfg.EgressProxy.Network, a.egressLog.refused)
	a.Gateway.EgressDetails = a.egressLog.details
}

// egressImage is the image that runs proxies: egress_proxy.image, else the
// gateway's own image (the same binary) when it runs in a container, else
// the default.
func (a *App) egressImage(ctx context.Context, cfg *config.Config) string {
	if cfg.EgressProxy.Image != "" {
		return cfg.EgressProxy.Image
	}
	if a.self.ID != "" {
		ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if res, err := a.docker.ContainerInspect(ictx, a.self.ID, client.ContainerInspectOptions{}); err == nil && res.Container.Image != "" {
			return res.Container.Image
		}
	}
	return config.DefaultEgressProxyImage
}

func (e *egressRefusals) refused(server string, r egress.Refusal) {
	target := net.JoinHostPort(r.Host, strconv.Itoa(int(r.Port)))
	e.metrics.Refused(server, r.Host, r.Reason)
	now := time.Now().UTC()
	e.mu.Lock()
	l := append(e.recent[server], map[string]any{
		"at": now.Format(time.RFC3339Nano), "target": target, "reason": r.Reason,
	})
	if len(l) > recentRefusals {
		l = l[len(l)-recentRefusals:]
	}
	e.recent[server] = l
	e.mu.Unlock()
	// The audit line is the log line too (RecordAudit logs every entry).
	if g := e.a.Gateway; g != nil {
		g.RecordAudit(context.Background(), store.AuditEntry{
			At: now, Server: server, Identity: egressIdentity, Action: actionEgress,
			Tool: target, Allowed: false, Reason: r.Reason, Outcome: audit.OutcomeDenied,
		})
	}
}

// details is hangar_details' "egress": the allow-list in force and the
// newest refusals, newest first.
func (e *egressRefusals) details(id string) any {
	p, ok := e.a.Providers.Get(id)
	if !ok || p.Spec().Egress == nil {
		return nil
	}
	e.mu.Lock()
	l := e.recent[id]
	out := make([]map[string]any, 0, len(l))
	for i := len(l) - 1; i >= 0; i-- {
		out = append(out, l[i])
	}
	e.mu.Unlock()
	allow := p.Spec().Egress.Allow
	if allow == nil {
		allow = []string{}
	}
	d := map[string]any{"allow": allow, "recent_refusals": out, "proxy": nil}
	if st, ok := e.a.Egress.Status(id); ok {
		d["proxy"] = map[string]any{"network": st.Network, "container_id": nilIfEmpty(st.ProxyContainer), "restarts": st.Restarts}
	}
	return d
}

// egressEngine is what checkEgress asks the engine.
type egressEngine interface {
	ImageInspect(ctx context.Context, image string, opts ...client.ImageInspectOption) (client.ImageInspectResult, error)
	NetworkInspect(ctx context.Context, network string, opts client.NetworkInspectOptions) (client.NetworkInspectResult, error)
}

// checkEgress is `hangar config check`'s look at what egress needs from
// the engine: the proxy image (when egress_proxy.image names one; the
// default is the gateway's own image, which only the running gateway
// knows) and the network proxies reach out on. Contradictions inside a
// server's config (network:, an HTTP transport) are load errors already.
func checkEgress(ctx context.Context, cfg *config.Config, eng egressEngine) []preflight.Problem {
	used := false
	for _, t := range preflight.Targets(cfg) {
		used = used || t.Server.Egress != nil
	}
	if !used {
		return nil
	}
	var out []preflight.Problem
	if img := cfg.EgressProxy.Image; img != "" {
		ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := eng.ImageInspect(ictx, img)
		cancel()
		if err != nil {
			out = append(out, preflight.Problem{Path: "egress_proxy.image",
				Msg: fmt.Sprintf("image %s is not usable on the Docker engine: %v", img, err),
				Fix: "build or pull it (it must hold the hangar binary), or leave egress_proxy.image out"})
		}
	}
	if nw := cfg.EgressProxy.Network; nw != "" && nw != "bridge" {
		ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := eng.NetworkInspect(ictx, nw, client.NetworkInspectOptions{})
		cancel()
		if err != nil {
			out = append(out, preflight.Problem{Path: "egress_proxy.network",
				Msg: fmt.Sprintf("network %s cannot be used: %v", nw, err),
				Fix: "create it (docker network create), or leave egress_proxy.network out for the default bridge"})
		}
	}
	return out
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
