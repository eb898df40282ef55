package readmodel

import (
	"context"
	"sort"
	"time"

	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/store"
)

// Replication is this gateway's place among the replicas of its
// instance: its own name and, with a shared store, the membership rows
// (instance.Membership's).
type Replication struct {
	Instance string
	// Self is this replica's name; "" when replicas share no store (the
	// gateway is its instance's only one).
	Self string
	// Members lists the instance's replicas; nil without a shared store.
	Members func(ctx context.Context) ([]store.Member, error)
	// TTL is how old a heartbeat may be before its replica counts as gone.
	TTL time.Duration
}

// Containers lists the containers the instance's gateways created
// (*dockerrt.Runtime's Managed).
type Containers interface {
	Managed(ctx context.Context) ([]dockerrt.Managed, error)
}

var _ Containers = (*dockerrt.Runtime)(nil)

// Replicas is the view of the instance's replicas and who owns which
// containers.
type Replicas struct {
	Instance string
	// Shared: replicas share a store; else this gateway is the only one.
	Shared  bool
	Members []Replica
	// MembersErr and ContainersErr say why members or containers could
	// not be read ("" when they were).
	MembersErr, ContainersErr string
}

// Replica is one gateway of the instance and the containers it owns.
type Replica struct {
	Name         string
	Self         bool
	AdvertiseURL string
	Engine       string
	StartedAt    time.Time
	HeartbeatAt  time.Time
	// Live: its heartbeat is fresh (always for this gateway).
	Live       bool
	Containers []dockerrt.Managed
}

// Replicas builds the view, members by name; the containers of servers keep refuses (nil
// keeps all) are left out, as are the egress proxies and networks of
// those servers.
func (m *Model) Replicas(ctx context.Context, keep func(id string) bool) Replicas {
	r := m.Replication
	out := Replicas{Instance: r.Instance, Shared: r.Members != nil}
	byName := map[string]*Replica{}
	add := func(name string) *Replica {
		x, ok := byName[name]
		if !ok {
			x = &Replica{Name: name}
			byName[name] = x
		}
		return x
	}
	if r.Members != nil {
		ms, err := r.Members(ctx)
		if err != nil {
			out.MembersErr = err.Error()
		}
		now := time.Now()
		for _, mb := range ms {
			x := add(mb.Replica)
			x.AdvertiseURL, x.Engine, x.StartedAt, x.HeartbeatAt = mb.AdvertiseURL, mb.Engine, mb.StartedAt, mb.HeartbeatAt
			x.Live = r.TTL <= 0 || now.Sub(mb.HeartbeatAt) < r.TTL
		}
	}
	self := add(r.Self)
	self.Self, self.Live = true, true
	if m.Containers != nil {
		cs, err := m.Containers.Managed(ctx)
		if err != nil {
			out.ContainersErr = err.Error()
		}
		for _, c := range cs {
			if keep != nil && !keep(c.Server) {
				continue
			}
			x := add(c.Replica)
			x.Containers = append(x.Containers, c)
		}
	}
	for _, x := range byName {
		cs := x.Containers
		sort.Slice(cs, func(a, b int) bool {
			if cs[a].Server != cs[b].Server {
				return cs[a].Server < cs[b].Server
			}
			return cs[a].Role < cs[b].Role
		})
		out.Members = append(out.Members, *x)
	}
	sort.Slice(out.Members, func(a, b int) bool { return out.Members[a].Name < out.Members[b].Name })
	return out
}
