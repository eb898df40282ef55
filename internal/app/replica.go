package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/forward"
	"github.com/mcp-hangar/hangar/internal/instance"
	"github.com/mcp-hangar/hangar/internal/metrics"
	"github.com/mcp-hangar/hangar/internal/store"
)

// joinReplicas makes this gateway one replica of its instance when the
// store is shared: membership rows with heartbeats take the place of the
// engine lease (several gateways of one instance run at once, each
// labelling its containers with its replica name). Without a shared store
// it does nothing and the lease applies.
func (a *App) joinReplicas(ctx context.Context, o Options) error {
	if !a.Config.Store.Shared() {
		return nil
	}
	members, ok := a.Store.(store.Members)
	if !ok {
		return errors.New("the shared store keeps no replica membership")
	}
	name := o.Replica
	if name == "" {
		var err error
		if name, err = os.Hostname(); err != nil {
			return fmt.Errorf("replica name: %w (set --replica or $HANGAR_REPLICA)", err)
		}
	}
	if err := instance.CheckReplica(name); err != nil {
		return err
	}
	advertise := o.AdvertiseURL
	if advertise == "" && o.Listen != "" {
		advertise = "http://" + o.Listen
	}
	if o.Listen != "" {
		// The others pass this replica's sessions here: a wildcard
		// address would send them back to themselves.
		if err := forward.CheckAdvertiseURL(advertise); err != nil {
			return fmt.Errorf("replica %s: %w", name, err)
		}
	}
	// Every replica derives the forwarding key from the keystore key: one
	// whose key is not the others' is refused here, before it joins.
	key, ok := a.Store.(interface {
		DerivedKey(ctx context.Context, purpose string) ([]byte, error)
	})
	if !ok {
		return errors.New("the shared store derives no keys")
	}
	kctx, kcancel := context.WithTimeout(ctx, time.Minute)
	fkey, err := key.DerivedKey(kctx, forwardKeyPurpose+a.Instance)
	kcancel()
	if err != nil {
		return fmt.Errorf("replica %s: the forwarding key: %w", name, err)
	}
	a.forwardKey = fkey
	m := &instance.Membership{Store: members, Log: a.Log.With("component", "replicas"),
		Self: store.Member{Instance: a.Instance, Replica: name, AdvertiseURL: advertise, Engine: a.engineID(ctx)}}
	jctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := m.Join(jctx); err != nil {
		return err
	}
	a.member = m
	a.Log.Info("joined the instance as a replica", "instance", a.Instance, "replica", name, "advertise_url", advertise)
	return nil
}

// runReplicas keeps this replica's heartbeat and removes what replicas
// whose heartbeat stopped left: their containers, then their rows.
func (a *App) runReplicas(ctx context.Context) {
	if a.member == nil {
		return
	}
	a.goOwned(func() { a.member.Run(ctx) })
	a.goOwned(func() {
		t := time.NewTicker(instance.DefaultHeartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			_, err := a.member.ReapGone(ctx, func(ctx context.Context, gone store.Member) error {
				n, err := a.Runtime.ReapReplica(ctx, gone.Replica)
				if n > 0 {
					a.Log.Info("removed the containers of a replica whose heartbeat stopped", "replica", gone.Replica, "count", n)
				}
				return err
			})
			if err != nil && ctx.Err() == nil {
				a.Log.Warn("replicas whose heartbeat stopped not reaped yet", "error", err)
			}
			// A replica that died announced nothing: its share of the
			// rate limits comes back once its heartbeat is stale.
			a.shareRateLimits(ctx)
		}
	})
}

// leaveReplicas removes this replica's row on a clean shutdown.
func (a *App) leaveReplicas(ctx context.Context) error {
	if a.member == nil {
		return nil
	}
	err := a.member.Leave(ctx)
	if err == nil {
		a.announce(store.Change{Kind: store.ChangeMembers})
	}
	return err
}

// engineID is the Docker engine's ID, "" when it cannot be asked: such a
// replica reaps only replicas that did not know their engine either.
func (a *App) engineID(ctx context.Context) string {
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	info, err := a.docker.Info(ictx, client.InfoOptions{})
	if err != nil {
		a.Log.Warn("docker engine unavailable: this replica reaps no other replica's containers until restarted", "error", err)
		return ""
	}
	return info.Info.ID
}

// forwardKeyPurpose and the instance name are what the forwarding key is
// derived for: replicas of two instances that share a keystore key do
// not accept each other's proofs.
const forwardKeyPurpose = "forward proof of instance "

// forwarder passes requests for the ids of other replicas (sessions,
// continuations, requestStates) to them, and checks the proofs of what
// they pass here; nil without replicas. maxBody is the endpoint's bound.
func (a *App) forwarder(maxBody int64) *forward.Router {
	if a.member == nil {
		return nil
	}
	m := a.member
	return &forward.Router{
		Key:     a.forwardKey,
		Self:    m.Self.Replica,
		Members: func(ctx context.Context) ([]store.Member, error) { return m.Store.Members(ctx, m.Self.Instance) },
		Live:    m.TTL(),
		MaxBody: maxBody,
		Log:     a.Log.With("component", "forward"),
		Reached: func(ok bool) {
			if ok {
				a.Metrics.Forwarded(metrics.ForwardedOK)
			} else {
				a.Metrics.Forwarded(metrics.ForwardedUnreachable)
			}
		},
	}
}
