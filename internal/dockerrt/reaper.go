package dockerrt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
)

// Reap removes managed containers of this owner that nothing tracks: those
// left by an earlier run of the same gateway instance (a crash, a kill -9),
// and after an engine reconnect those whose provider is gone. keep reports
// containers the caller tracks. A container this Runtime is creating, or
// created and has not seen gone yet, is never removed: a reconcile racing
// a start must not take the new container for an orphan before its
// provider has recorded it.
func (r *Runtime) Reap(ctx context.Context, keep func(id string) bool) (int, error) {
	return r.reap(ctx, func(id, nonce string) bool {
		return r.live.has(id, nonce) || (keep != nil && keep(id))
	})
}

// ReapAll removes every managed container of this owner, tracked or not:
// the last step of a shutdown.
func (r *Runtime) ReapAll(ctx context.Context) (int, error) {
	return r.reap(ctx, func(string, string) bool { return false })
}

func (r *Runtime) reap(ctx context.Context, keep func(id, nonce string) bool) (int, error) {
	return r.reapMatching(ctx, r.ownFilter(), keep)
}

func (r *Runtime) reapMatching(ctx context.Context, filter client.Filters, keep func(id, nonce string) bool) (int, error) {
	if err := r.checkGuard(ctx); err != nil {
		return 0, err
	}
	lctx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	list, err := r.api.ContainerList(lctx, client.ContainerListOptions{All: true, Filters: filter})
	cancel()
	if err != nil {
		return 0, fmt.Errorf("list managed containers: %w", err)
	}
	n := 0
	for _, c := range list.Items {
		if keep(c.ID, c.Labels[LabelCreate]) {
			continue
		}
		r.log.Info("removing orphaned container", "container", shortID(c.ID), "server", c.Labels[LabelServer])
		r.remove(c.ID)
		n++
	}
	return n, nil
}

func (r *Runtime) ownFilter() client.Filters {
	return r.replicaFilter(r.replica)
}

// replicaFilter selects the instance's managed containers, only those of
// replica when it is not "".
func (r *Runtime) replicaFilter(replica string) client.Filters {
	f := make(client.Filters).Add("label", LabelManaged+"=true", LabelOwner+"="+r.owner)
	if replica != "" {
		f.Add("label", LabelReplica+"="+replica)
	}
	return f
}

// ReapReplica removes every managed container of another replica of this
// instance: one whose heartbeat stopped, so nothing tracks them any more.
func (r *Runtime) ReapReplica(ctx context.Context, replica string) (int, error) {
	if replica == "" || replica == r.replica {
		return 0, fmt.Errorf("reap replica %q: not another replica", replica)
	}
	return r.reapMatching(ctx, r.replicaFilter(replica), func(string, string) bool { return false })
}

// liveSet is what the Runtime has created and not yet seen gone: creation
// nonces while ContainerCreate is under way, container IDs after.
type liveSet struct {
	mu     sync.Mutex
	nonces map[string]struct{}
	ids    map[string]struct{}
}

func newLiveSet() *liveSet {
	return &liveSet{nonces: map[string]struct{}{}, ids: map[string]struct{}{}}
}

func (s *liveSet) begin() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	nonce := hex.EncodeToString(b)
	s.mu.Lock()
	s.nonces[nonce] = struct{}{}
	s.mu.Unlock()
	return nonce
}

func (s *liveSet) end(nonce string) {
	s.mu.Lock()
	delete(s.nonces, nonce)
	s.mu.Unlock()
}

func (s *liveSet) add(id string) {
	s.mu.Lock()
	s.ids[id] = struct{}{}
	s.mu.Unlock()
}

func (s *liveSet) drop(id string) {
	s.mu.Lock()
	delete(s.ids, id)
	s.mu.Unlock()
}

func (s *liveSet) has(id, nonce string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[id]; ok {
		return true
	}
	_, ok := s.nonces[nonce]
	return ok && nonce != ""
}

// Managed is one container the instance's gateways created, as the
// dashboard's replicas page shows it.
type Managed struct {
	ID      string
	Name    string
	Server  string // LabelServer
	Replica string // LabelReplica: "" when replicas do not share a store
	Role    string // LabelRole: "" for a provider's own container
	State   string // the engine's: running, exited, …
	Created time.Time
}

// Managed lists the containers of every replica of this instance.
func (r *Runtime) Managed(ctx context.Context) ([]Managed, error) {
	lctx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	defer cancel()
	list, err := r.api.ContainerList(lctx, client.ContainerListOptions{All: true, Filters: r.replicaFilter("")})
	if err != nil {
		return nil, fmt.Errorf("list managed containers: %w", err)
	}
	out := make([]Managed, 0, len(list.Items))
	for _, c := range list.Items {
		m := Managed{ID: c.ID, Server: c.Labels[LabelServer], Replica: c.Labels[LabelReplica], Role: c.Labels[LabelRole],
			State: string(c.State), Created: time.Unix(c.Created, 0)}
		if len(c.Names) > 0 {
			m.Name = strings.TrimPrefix(c.Names[0], "/")
		}
		out = append(out, m)
	}
	return out, nil
}
