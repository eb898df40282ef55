package dockerrt

import (
	"context"
	"fmt"

	"github.com/moby/moby/client"
)

// Reap removes managed containers of this owner that nothing tracks: those
// left by an earlier run of the same gateway instance (a crash, a kill -9).
// keep reports containers that are tracked and must stay.
func (r *Runtime) Reap(ctx context.Context, keep func(id string) bool) (int, error) {
	lctx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	list, err := r.api.ContainerList(lctx, client.ContainerListOptions{All: true, Filters: r.ownFilter()})
	cancel()
	if err != nil {
		return 0, fmt.Errorf("list managed containers: %w", err)
	}
	n := 0
	for _, c := range list.Items {
		if keep != nil && keep(c.ID) {
			continue
		}
		r.log.Info("removing orphaned container", "container", shortID(c.ID), "server", c.Labels[LabelServer])
		r.remove(c.ID)
		n++
	}
	return n, nil
}

// Managed lists the IDs of this owner's containers, by server ID.
func (r *Runtime) Managed(ctx context.Context) (map[string][]string, error) {
	lctx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	defer cancel()
	list, err := r.api.ContainerList(lctx, client.ContainerListOptions{All: true, Filters: r.ownFilter()})
	if err != nil {
		return nil, fmt.Errorf("list managed containers: %w", err)
	}
	out := map[string][]string{}
	for _, c := range list.Items {
		out[c.Labels[LabelServer]] = append(out[c.Labels[LabelServer]], c.ID)
	}
	return out, nil
}

func (r *Runtime) ownFilter() client.Filters {
	return make(client.Filters).Add("label", LabelManaged+"=true", LabelOwner+"="+r.owner)
}
