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

func (r *Runtime) ownFilter() client.Filters {
	return make(client.Filters).Add("label", LabelManaged+"=true", LabelOwner+"="+r.owner)
}
